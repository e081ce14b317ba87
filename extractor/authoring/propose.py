"""``roi template init``: a first template from one sample document.

The sample's first page becomes the reference image (deskewed by the angle of its text lines,
at the template's dpi); full-page OCR reads it, and every printed label from
:data:`~extractor.authoring.labels.KNOWN_LABELS` is paired with the value printed beside it
(same row to the right, else below). The value's outline, widened with some slack (up to the
next ruled line or the next text on the row), becomes the field's box in millimetres.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from extractor.authoring.labels import (
    LabelInfo,
    decimals_for,
    fits,
    is_label_prefix,
    label_key,
    match_label,
    regex_for,
    value_shape,
)
from extractor.authoring.yamlio import dump_template, write_template_yaml
from extractor.errors import InputError, TemplateError
from extractor.fullpage import TextLine
from extractor.loading import iter_pages, read_source
from extractor.templates import _NAME_RE, MM_PER_INCH, FieldKind, Template

DEFAULT_DPI = 200
SLACK_Y_MM = 0.8
SLACK_X_MM = 3.0
NEIGHBOUR_MM = 3.5
"""Boxes keep this far from other text on their row (the crop margin, 2.5 mm, and some)."""
GROW_MM = {
    FieldKind.text: 60.0,
    FieldKind.name: 60.0,
    FieldKind.tax_id: 12.0,
    FieldKind.amount_words: 50.0,
}
"""How far a value's box may grow to the right (longer values on other documents)."""
GROW_BOTH_SHARE = 0.3  # codes, dates, amounts grow this share of their width on both sides
MAX_GROW_MM = 25.0

Ocr = Callable[[np.ndarray], list[TextLine]]


@dataclass(slots=True)
class Proposal:
    """A field found beside a printed label, boxes in millimetres on the reference page."""

    name: str
    label: str
    kind: FieldKind
    allowlist: str | None
    regex: str | None
    decimals: int | None
    box: tuple[float, float, float, float]
    sample: str
    where: str
    """How the value was found: 'on the label's line', 'right of the label', 'below the label'."""
    confidence: float
    check: str | None = None

    def as_field(self) -> dict[str, object]:
        data: dict[str, object] = {"name": self.name}
        if len(label_key(self.label)) >= 2:  # a one-letter label would match too much text
            data["label"] = self.label
        data |= {
            "box": [round(v, 1) for v in self.box],
            "kind": self.kind.value,
        }
        if self.allowlist:
            data["allowlist"] = self.allowlist
        if self.regex:
            data["regex"] = self.regex
        if self.check:
            data["check"] = self.check
        if self.decimals is not None:
            data["decimals"] = self.decimals
        return data


@dataclass(slots=True)
class InitResult:
    yaml_path: Path
    image_path: Path
    template: Template
    proposals: list[Proposal]
    notes: list[str] = field(default_factory=list)
    has_frame: bool = False
    skew_deg: float = 0.0
    seconds: float = 0.0


# -- the sample --------------------------------------------------------------------------------


def load_sample(
    source: str | Path | bytes, dpi: int = DEFAULT_DPI
) -> tuple[np.ndarray, tuple[float, float]]:
    """The sample's first page (BGR) and its size in mm: a PDF's printed size, or an image's
    pixels at ``dpi``."""
    data, _ = read_source(source)
    page = next(iter_pages(data, dpi=dpi, pages={0}), None)
    if page is None:
        raise InputError("the sample has no pages")
    h, w = page.image.shape[:2]
    if page.size_mm is not None:
        size = page.size_mm
    else:
        size = (w / dpi * MM_PER_INCH, h / dpi * MM_PER_INCH)
    return page.image, (round(size[0], 1), round(size[1], 1))


def skew_angle(lines: Sequence[TextLine]) -> float:
    """Median angle (degrees, counter-clockwise on screen) of the longer text lines' top edges."""
    angles, weights = [], []
    for line in lines:
        dx, dy = line.quad[1] - line.quad[0]
        length = float(np.hypot(dx, dy))
        if length > 4 * max(line.height, 1.0):
            angles.append(-np.degrees(np.arctan2(dy, dx)))
            weights.append(length)
    if len(angles) < 3:
        return 0.0
    order = np.argsort(angles)
    cum = np.cumsum(np.asarray(weights)[order])
    return float(np.asarray(angles)[order][np.searchsorted(cum, cum[-1] / 2)])


def deskew(
    image: np.ndarray, lines: list[TextLine], min_deg: float = 0.1, max_deg: float = 15.0
) -> tuple[np.ndarray, list[TextLine], float]:
    """The page turned upright by its text lines' angle, and the lines moved with it."""
    angle = skew_angle(lines)
    if abs(angle) < min_deg or abs(angle) > max_deg:
        return image, lines, 0.0
    h, w = image.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), -angle, 1.0)
    turned = cv2.warpAffine(
        image, matrix, (w, h), flags=cv2.INTER_CUBIC, borderValue=(255, 255, 255)
    )
    moved = [
        TextLine(cv2.transform(line.quad.reshape(1, 4, 2), matrix)[0], line.text, line.score)
        for line in lines
    ]
    return turned, moved, round(angle, 2)


# -- proposals ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    score: float

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def h(self) -> float:
        return max(self.y1 - self.y0, 1.0)


def _bounds(line: TextLine) -> _Line:
    x0, y0 = line.quad.min(axis=0)
    x1, y1 = line.quad.max(axis=0)
    return _Line(float(x0), float(y0), float(x1), float(y1), line.text, line.score)


def _merge_split_labels(lines: list[_Line]) -> list[_Line]:
    """Join a label OCR read in pieces (``名`` + ``称：``) into one line."""
    used: set[int] = set()
    out: list[_Line] = []
    for i, line in enumerate(lines):
        if i in used:
            continue
        if is_label_prefix(line.text) and line.x1 - line.x0 >= 0.5 * line.h:
            for j, other in sorted(enumerate(lines), key=lambda p: p[1].x0):
                if j == i or j in used or other.x0 < line.x1 - line.h:
                    continue
                if abs(other.cy - line.cy) > 0.5 * line.h or other.x0 - line.x1 > 8 * line.h:
                    continue
                if not 0.6 < other.h / line.h < 1.6:
                    continue
                joined = line.text + other.text
                if match_label(joined) is not None or is_label_prefix(joined):
                    line = _Line(
                        line.x0,
                        min(line.y0, other.y0),
                        other.x1,
                        max(line.y1, other.y1),
                        joined,
                        min(line.score, other.score),
                    )
                    used.add(j)
                    if match_label(joined) is not None:
                        break
        out.append(line)
    return out


def _row_right(label: _Line, lines: list[_Line]) -> list[_Line]:
    """Lines on the label's row to its right, nearest first."""
    found = [
        ln
        for ln in lines
        if ln is not label
        and abs(ln.cy - label.cy) < 0.6 * max(label.h, ln.h)
        and ln.x0 > label.x1 - label.h
    ]
    return sorted(found, key=lambda ln: ln.x0)


def _below(label: _Line, lines: list[_Line]) -> list[_Line]:
    found = [
        ln
        for ln in lines
        if ln is not label
        and 0 < ln.cy - label.cy < 3 * label.h
        and ln.y0 > label.cy
        and ln.x0 < label.x1 + 2 * label.h
        and ln.x1 > label.x0 - 2 * label.h
    ]
    return sorted(found, key=lambda ln: ln.cy)


def _vertical_rules(gray: np.ndarray, px_per_mm: float) -> np.ndarray:
    ink = cv2.adaptiveThreshold(
        gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 31, 12
    )
    length = max(9, round(4 * px_per_mm))
    return cv2.morphologyEx(
        ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, length))
    )


class _Page:
    """The reference page: its OCR lines and ruling, and the geometry to grow boxes with."""

    def __init__(self, image: np.ndarray, lines: list[TextLine], px_per_mm: float) -> None:
        self.ppm = px_per_mm
        self.h, self.w = image.shape[:2]
        gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        self.rules = _vertical_rules(gray, px_per_mm)
        self.lines = _merge_split_labels([_bounds(ln) for ln in lines])

    def _stop(self, y0: float, y1: float, x: float, step: int, limit: float) -> float:
        """Walk from ``x`` by ``step`` over the band [y0, y1] until a ruled line, another text
        line or ``limit`` px; the last free x."""
        band = self.rules[max(0, int(y0)) : min(self.h, int(y1) + 1)]
        cols = band.any(axis=0) if band.size else np.zeros(self.w, bool)
        pos = x
        for _ in range(int(limit)):
            nxt = pos + step
            if not 0 <= nxt < self.w or cols[int(nxt)]:
                return pos - step * 0.5 * self.ppm
            pos = nxt
        return pos

    def box_for(self, value: _Line, kind: FieldKind) -> tuple[float, float, float, float]:
        ppm = self.ppm
        width = value.x1 - value.x0
        pad_y = SLACK_Y_MM * ppm
        y0, y1 = value.y0 - pad_y, value.y1 + pad_y
        band = (value.y0 + value.h * 0.2, value.y1 - value.h * 0.2)
        if kind in GROW_MM:
            left_limit = SLACK_X_MM * ppm
            right_limit = GROW_MM[kind] * ppm
        else:
            grow = min(MAX_GROW_MM * ppm, SLACK_X_MM * ppm + GROW_BOTH_SHARE * width)
            left_limit = right_limit = grow
        # never into another line of text on the row
        for other in self.lines:
            if other is value or abs(other.cy - value.cy) > 0.6 * max(other.h, value.h):
                continue
            if other.x0 >= value.x1:
                right_limit = min(right_limit, max(0.0, other.x0 - value.x1 - NEIGHBOUR_MM * ppm))
            elif other.x1 <= value.x0:
                left_limit = min(left_limit, max(0.0, value.x0 - other.x1 - NEIGHBOUR_MM * ppm))
        x0 = self._stop(*band, value.x0, -1, left_limit)
        x1 = self._stop(*band, value.x1, +1, right_limit)
        x0, x1 = min(x0, value.x0), max(x1, value.x1)
        x0, y0 = max(0.0, x0), max(0.0, y0)
        x1, y1 = min(float(self.w), x1), min(float(self.h), y1)
        return (x0 / ppm, y0 / ppm, (x1 - x0) / ppm, (y1 - y0) / ppm)


def _value_part(label: _Line, rest: str) -> _Line:
    """The part of a line after its label (label and value read as one line)."""
    key = label_key(label.text)
    share = 1 - len(rest) / max(len(key), 1)
    x0 = label.x0 + (label.x1 - label.x0) * share
    return _Line(x0, label.y0, label.x1, label.y1, rest, label.score)


def _find_values(
    label: _Line, info: LabelInfo, rest: str, lines: list[_Line], count: int
) -> list[tuple[_Line, str]]:
    """Up to ``count`` values for a label: the rest of its line, the row to its right (stopping
    at the next label), else the lines below it."""
    found: list[tuple[_Line, str]] = []
    if rest and fits(info.kind, rest):
        found.append((_value_part(label, rest), "on the label's line"))
    for line in _row_right(label, lines):
        if len(found) >= count:
            break
        if match_label(line.text) is not None:
            break
        if fits(info.kind, line.text):
            found.append((line, "right of the label"))
        elif not info.per_row and info.kind in (FieldKind.text, FieldKind.name):
            break
    if not found:
        for line in _below(label, lines):
            if match_label(line.text) is None and fits(info.kind, line.text):
                found.append((line, "below the label"))
                break
    return found[:count]


def propose_fields(image: np.ndarray, lines: list[TextLine], px_per_mm: float) -> list[Proposal]:
    """Fields from the printed labels of ``image`` (the reference page) and its OCR lines."""
    page = _Page(image, lines, px_per_mm)
    labelled = []
    for line in page.lines:
        hit = match_label(line.text)
        if hit is not None:
            labelled.append((line, *hit))
    labelled.sort(key=lambda item: (round(item[0].cy / (4 * px_per_mm)), item[0].x0))
    occurrences: dict[str, int] = {}
    taken_values: set[int] = set()
    proposals: list[Proposal] = []
    names: set[str] = set()
    for label_line, label, info, rest in labelled:
        seen = occurrences.get(label, 0)
        occurrences[label] = seen + 1
        if info.per_row:
            wanted = list(info.names)
        else:
            wanted = [info.names[seen] if seen < len(info.names) else f"{info.names[-1]}_{seen}"]
        values = _find_values(label_line, info, rest, page.lines, len(wanted))
        for name, (value, where) in zip(wanted, values, strict=False):
            if id(value) in taken_values:
                continue
            taken_values.add(id(value))
            unique, n = name, 2
            while unique in names:
                unique, n = f"{name}_{n}", n + 1
            names.add(unique)
            kind = info.kind
            shape = value_shape(value.text)
            if kind is FieldKind.code and shape is not FieldKind.code:
                allowlist = "alnum"
            else:
                allowlist = info.allowlist
            regex = info.regex or regex_for(kind, value.text)
            printed = label_line.text.strip().rstrip(":：")
            proposals.append(
                Proposal(
                    name=unique,
                    label=printed if not rest else printed[: len(printed) - len(rest)] or label,
                    kind=kind,
                    allowlist=allowlist,
                    regex=regex,
                    decimals=decimals_for(kind, value.text),
                    box=page.box_for(value, kind),
                    sample=value.text,
                    where=where,
                    confidence=round(value.score, 3),
                    check=info.check if allowlist == info.allowlist else None,
                )
            )
    _separate(proposals)
    return proposals


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float]:
    ox = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    oy = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return ox, oy


def _separate(proposals: list[Proposal]) -> None:
    """Shrink overlapping boxes apart at the middle of their overlap (the smaller overlap
    direction), so that no two proposed boxes share a pixel."""
    for _ in range(3):
        changed = False
        for i, a in enumerate(proposals):
            for b in proposals[i + 1 :]:
                ox, oy = _overlap(a.box, b.box)
                if ox <= 0 or oy <= 0:
                    continue
                changed = True
                gap = 0.1
                if oy <= ox:  # one above the other: cut at the middle of the shared rows
                    top, bottom = (a, b) if a.box[1] < b.box[1] else (b, a)
                    cut = bottom.box[1] + oy / 2
                    tx, ty, tw, _ = top.box
                    bx, by, bw, bh = bottom.box
                    top.box = (tx, ty, tw, max(0.5, cut - gap - ty))
                    bottom.box = (bx, cut + gap, bw, max(0.5, by + bh - cut - gap))
                else:  # side by side: cut at the middle of the shared columns
                    left, right = (a, b) if a.box[0] < b.box[0] else (b, a)
                    cut = right.box[0] + ox / 2
                    lx, ly, _, lh = left.box
                    rx, ry, rw, rh = right.box
                    left.box = (lx, ly, max(0.5, cut - gap - lx), lh)
                    right.box = (cut + gap, ry, max(0.5, rx + rw - cut - gap), rh)
        if not changed:
            return


# -- init --------------------------------------------------------------------------------------


def _rules_for(names: set[str]) -> list[dict[str, object]]:
    rules: list[dict[str, object]] = []
    if {"amount", "tax", "total"} <= names:
        rules.append({"rule": "sum", "terms": ["amount", "tax"], "equals": "total"})
    if {"total_in_words", "total"} <= names:
        rules.append({"rule": "same", "fields": ["total_in_words", "total"]})
    return rules


def _parties_for(names: set[str]) -> list[dict[str, str]]:
    """The buyer's and the seller's name and tax id, paired for a party registry."""
    pairs = [{"name": f"{side}_name", "tax_id": f"{side}_tax_id"} for side in ("buyer", "seller")]
    return [pair for pair in pairs if set(pair.values()) <= names]


def reference_from_sample(
    sample: str | Path | bytes, dpi: int = DEFAULT_DPI, *, ocr: Ocr | None = None
) -> tuple[np.ndarray, tuple[float, float], list[Proposal], float]:
    """The reference image of a sample (first page, deskewed, at exactly the template's pixel
    size for its page size at ``dpi``), that page size in mm, the proposed fields and the skew
    corrected (degrees)."""
    from extractor.fullpage import get_fullpage_ocr

    image, (width_mm, height_mm) = load_sample(sample, dpi)
    ocr = ocr or get_fullpage_ocr()
    lines = ocr(image)
    image, lines, skew = deskew(image, lines)
    ref_w = round(width_mm * dpi / MM_PER_INCH)
    ref_h = round(height_mm * dpi / MM_PER_INCH)
    h, w = image.shape[:2]
    if (w, h) != (ref_w, ref_h):
        sx, sy = ref_w / w, ref_h / h
        image = cv2.resize(image, (ref_w, ref_h), interpolation=cv2.INTER_AREA)
        lines = [TextLine(ln.quad * np.float32([sx, sy]), ln.text, ln.score) for ln in lines]
    proposals = propose_fields(image, lines, dpi / MM_PER_INCH)
    return image, (width_mm, height_mm), proposals, skew


def init_template(
    sample: str | Path,
    name: str,
    out_dir: str | Path,
    *,
    dpi: int = DEFAULT_DPI,
    title: str = "",
    overwrite: bool = False,
    ocr: Ocr | None = None,
) -> InitResult:
    """Write ``out_dir/NAME.yaml`` and ``out_dir/NAME.png`` from a sample document."""
    from extractor.registration import Reference

    start = time.perf_counter()
    if not _NAME_RE.match(name):
        raise TemplateError(f"template name {name!r}: use [a-z][a-z0-9_]*, at most 64 characters")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    yaml_path, image_path = out / f"{name}.yaml", out / f"{name}.png"
    if not overwrite and (yaml_path.exists() or image_path.exists()):
        raise TemplateError(f"{yaml_path} or {image_path} exists (--force to replace them)")
    image, (width_mm, height_mm), proposals, skew = reference_from_sample(sample, dpi, ocr=ocr)
    notes: list[str] = []
    if not proposals:
        raise TemplateError(
            f"{sample}: no known printed label found beside a value; draw the fields in the "
            "web editor (roi serve, /ui) instead"
        )
    if not cv2.imwrite(str(image_path), image):
        raise TemplateError(f"cannot write {image_path}")

    names = {p.name for p in proposals}
    data: dict[str, object] = {
        "name": name,
        "version": 1,
        "title": title or f"from {Path(sample).name}",
        "page": {"width_mm": width_mm, "height_mm": height_mm},
        "reference_image": image_path.name,
        "registration": {"method": "frame", "match_threshold": 0.6, "dpi": dpi},
        "crop_margin_mm": 2.5,
        "fields": [p.as_field() for p in proposals],
    }
    rules = _rules_for(names)
    if rules:
        data["rules"] = rules
    parties = _parties_for(names)
    if parties:
        data["parties"] = parties
    header = [
        f"Proposed by `roi template init` from {Path(sample).name} on {dt.date.today()}.",
        "Each field is a printed label found by full-page OCR and the value beside it: keep,",
        "rename or delete them, and adjust the boxes ([x, y, width, height] in mm from the",
        f"top-left corner of {image_path.name}). Check with `roi template preview {name}` and",
        f"`roi template check {name} SCAN...`, or edit in the web editor (roi serve, /ui).",
    ]
    comments = {
        p.name: [
            f"{p.label} -> {p.sample!r} {p.where} (OCR confidence {p.confidence:.2f}); "
            f"kind {p.kind.value}"
        ]
        for p in proposals
    }
    sections = {
        "rules": ["Cross-checks between the proposed fields (delete what does not hold)."],
        "parties": ["Names and tax ids a party registry (--parties) checks together."],
    }
    text = dump_template(data, header, comments, sections)
    try:
        template = write_template_yaml(yaml_path, text)
    except TemplateError:
        image_path.unlink(missing_ok=True)
        raise
    has_frame = True
    try:
        Reference(template)
    except TemplateError:
        has_frame = False
        notes.append(
            "no ruled frame found in the sample: registration method 'frame' cannot align scans "
            "to this template; pages will go to the label-based fallback (full-page OCR), which "
            "is slower"
        )
    missing = [n for n in ("invoice_number", "issue_date", "total") if n not in names]
    if missing:
        notes.append(f"no field proposed for: {', '.join(missing)} (draw them in the editor)")
    return InitResult(
        yaml_path=yaml_path,
        image_path=image_path,
        template=template,
        proposals=proposals,
        notes=notes,
        has_frame=has_frame,
        skew_deg=skew,
        seconds=round(time.perf_counter() - start, 2),
    )
