"""``roi template check``: is a template ready to use?

Static checks (the schema, boxes that overlap or leave the page, allowlists and normalisers that
do not resolve, a missing reference image or one without a ruled frame), then extraction on
sample scans: a page that does not register or a required field that reads empty is a problem;
a value that fails validation is a warning (it may be the scan).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from extractor.errors import RoiError, TemplateError
from extractor.result import PageResult
from extractor.templates import Template, TemplateStore, load_template_file

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    severity: Severity
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}"


@dataclass(slots=True)
class CheckReport:
    template: Template | None
    problems: list[Problem] = field(default_factory=list)
    pages: list[tuple[str, PageResult]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)


def load_for_check(name_or_path: str, store: TemplateStore | None = None) -> Template:
    """A template by name (from the store) or by the path of its YAML file."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path:
        return load_template_file(name_or_path)
    return (store or TemplateStore()).get(name_or_path)


def overlaps(template: Template) -> list[tuple[str, str, float]]:
    """Pairs of fields whose boxes overlap, with the shared area in mm²."""
    found = []
    fields = template.fields
    for i, a in enumerate(fields):
        for b in fields[i + 1 :]:
            ox = min(a.box.x + a.box.w, b.box.x + b.box.w) - max(a.box.x, b.box.x)
            oy = min(a.box.y + a.box.h, b.box.y + b.box.h) - max(a.box.y, b.box.y)
            if ox > 0 and oy > 0:
                found.append((a.name, b.name, round(ox * oy, 2)))
    return found


def static_problems(template: Template) -> list[Problem]:
    from extractor.fields import resolve_allowlist
    from extractor.fields.normalize import get_normalizer
    from extractor.registration import Reference

    problems = [
        Problem("error", f"fields {a}, {b}", f"boxes overlap ({area} mm²)")
        for a, b, area in overlaps(template)
    ]
    for spec in template.fields:
        b = spec.box
        if b.x + b.w > template.page.width_mm or b.y + b.h > template.page.height_mm:
            problems.append(Problem("error", f"field {spec.name}", "box leaves the page"))
        try:
            resolve_allowlist(spec.allowlist, spec.kind)
        except ValueError as exc:
            problems.append(Problem("error", f"field {spec.name}", f"allowlist: {exc}"))
        try:
            get_normalizer(spec.normalizer, spec.kind)
        except (ValueError, KeyError) as exc:
            problems.append(Problem("error", f"field {spec.name}", f"normalizer: {exc}"))
    path = template.reference_image_path
    if path is None or not path.is_file():
        problems.append(Problem("error", "reference_image", f"missing ({path or 'not set'})"))
    else:
        try:
            Reference(template)
        except TemplateError as exc:
            problems.append(Problem("error", "reference_image", str(exc)))
    return problems


def check_template(
    name_or_path: str,
    scans: list[str] | None = None,
    *,
    store: TemplateStore | None = None,
    fallback: str = "never",
    extractor: object | None = None,
) -> CheckReport:
    """Every check on a template, and its reading of each scan's pages."""
    try:
        template = load_for_check(name_or_path, store)
    except TemplateError as exc:
        return CheckReport(None, [Problem("error", "schema", str(exc))])
    report = CheckReport(template, static_problems(template))
    if not scans or not report.ok:
        return report
    from extractor.pipeline import Extractor

    # every box read, those of the fields the QR code states too: a check is of the boxes
    ex = (
        extractor
        if isinstance(extractor, Extractor)
        else Extractor(fallback=fallback, check_print=True)  # type: ignore[arg-type]
    )
    for scan in scans:
        try:
            result = ex.extract(scan, template)
        except RoiError as exc:
            report.problems.append(Problem("error", str(scan), str(exc)))
            continue
        for page in result.pages:
            where = f"{Path(scan).name} p{page.page}"
            report.pages.append((where, page))
            if page.status == "unmatched":
                report.problems.append(
                    Problem("error", where, f"does not match: {page.message or 'unmatched'}")
                )
                continue
            for spec in template.fields:
                got = page.fields.get(spec.name)
                if got is not None and got.source == "qr":  # the QR code's value, not the box's
                    got = got.model_copy(update={"value": got.raw or None})
                if got is None or (spec.required and not got.value):
                    report.problems.append(
                        Problem("error", f"{where} {spec.name}", "required field reads empty")
                    )
                elif not got.valid:
                    report.problems.append(
                        Problem("warning", f"{where} {spec.name}", "; ".join(got.errors))
                    )
    return report
