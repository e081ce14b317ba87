"""Writing templates as YAML a person reads and edits: block style for the field list, flow
style (``[x, y, w, h]``, ``{width_mm: 241, height_mm: 140}``) for small values, and comments.

The output is always read back and checked with the loader before it is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from extractor.templates import Template

_PLAIN = re.compile(r"^[a-z][a-z0-9_]*$")
_YAML_WORDS = {"yes", "no", "on", "off", "true", "false", "null", "y", "n"}
TOP_ORDER = (
    "name",
    "version",
    "title",
    "page",
    "reference_image",
    "registration",
    "crop_margin_mm",
    "fields",
    "rules",
    "parties",
    "qr",
)
FIELD_ORDER = (
    "name",
    "label",
    "box",
    "printed_again",
    "kind",
    "allowlist",
    "regex",
    "check",
    "decimals",
    "normalizer",
    "required",
    "absent_when",
    "printed_as",
    "starts_with",
)


def scalar(value: Any) -> str:
    """One YAML scalar: numbers as short as they round-trip, strings single-quoted unless they
    are plain identifiers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.2f}".rstrip("0").rstrip(".")
        return text if text not in ("-0", "") else "0"
    text = str(value).replace("\n", " ").replace("\r", " ")
    if _PLAIN.match(text) and text not in _YAML_WORDS:
        return text
    return "'" + text.replace("'", "''") + "'"


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return scalar(value)


def _small(value: Any) -> bool:
    if isinstance(value, Mapping):
        return all(not isinstance(v, Mapping | list | tuple) or _small(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(not isinstance(v, Mapping | list | tuple) for v in value)
    return True


def _ordered(data: Mapping[str, Any], order: Sequence[str]) -> list[tuple[str, Any]]:
    keys = [k for k in order if k in data] + [k for k in data if k not in order]
    return [(k, data[k]) for k in keys]


def template_data(template: Template) -> dict[str, Any]:
    """A template as the mapping its YAML holds: defaults of fields left out, boxes as lists."""
    data = template.model_dump(mode="json", exclude_none=True)
    defaults = {"required": True, "lines": 1, "kind": "text"}
    fields = []
    for f in data["fields"]:
        f["box"] = [f["box"][k] for k in "xywh"]
        fields.append({k: v for k, v in f.items() if defaults.get(k, object()) != v})
    data["fields"] = fields
    if "qr" in data:
        data["qr"]["box"] = [data["qr"]["box"][k] for k in "xywh"]
        if not data["qr"].get("fields"):
            data["qr"].pop("fields", None)
    for key in ("rules", "parties"):
        if not data.get(key):
            data.pop(key, None)
    if not data.get("title"):
        data.pop("title", None)
    return data


def dump_template(
    data: Mapping[str, Any],
    header: Sequence[str] = (),
    field_comments: Mapping[str, Sequence[str]] | None = None,
    section_comments: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """YAML text of a template mapping, with a header comment, a comment above each named
    field, and comments above top-level keys."""
    field_comments = field_comments or {}
    section_comments = section_comments or {}
    out = [f"# {line}".rstrip() for line in header]
    for key, value in _ordered(data, TOP_ORDER):
        out += [f"# {line}".rstrip() for line in section_comments.get(key, ())]
        if key == "fields":
            out.append("fields:")
            for field in value:
                out += [f"  # {c}".rstrip() for c in field_comments.get(field.get("name", ""), ())]
                items = _ordered(field, FIELD_ORDER)
                for i, (k, v) in enumerate(items):
                    out.append(f"{'  - ' if i == 0 else '    '}{k}: {_flow(v)}")
        elif key in ("rules", "parties"):
            out.append(f"{key}:")
            out += [f"  - {_flow(item)}" for item in value]
        elif isinstance(value, Mapping) and not _small(value):
            out.append(f"{key}:")
            out += [f"  {k}: {_flow(v)}" for k, v in value.items()]
        else:
            out.append(f"{key}: {_flow(value)}")
    return "\n".join(out) + "\n"


def write_template_yaml(path: Path, text: str) -> Template:
    """Write ``text`` to ``path`` only if it loads as a valid template (atomically)."""
    from extractor.templates import load_template_file

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        template = load_template_file(tmp)
    except Exception:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    return template.model_copy(update={"source_path": path.resolve()})
