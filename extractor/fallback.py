"""The fallback path: fields from full-page OCR, found by the template's printed labels.

When a page does not register on its form frame (a photo at a steep angle, a frame cut off, a
seal over a corner) or a required field fails validation, full-page OCR runs and:

0. **A glance first**, on a page no frame registered on: its lines detected at 960 px instead
   of 1,600 and only their starts read, until they show enough of the form's labels to find a
   field by (:class:`LabelStarts`). A page that does not (a cover letter, a delivery note) is
   no such form and is not read whole.

1. **Labels align the page.** The printed labels of the reference form (read once per template
   by the same OCR) are matched by text to the page's lines; their positions give a homography
   (RANSAC), whatever the rotation or perspective.
2. **Second chance for the ROI path.** With that homography the field boxes are cropped and read
   again by the constrained recogniser.
3. **Values from the page's own lines.** The OCR lines that fall inside each field's box, and,
   for a layout whose boxes moved, the line beside or below the field's printed label.

For each field the first reading that validates wins; each says where it came from.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from extractor.bend import Bend
from extractor.fields import check_value
from extractor.fullpage import TextLine, View, mapped
from extractor.templates import FieldKind, FieldSpec, Template

MIN_LABEL_MATCHES = 4
MIN_LABEL_SCORE = 0.45
"""The share of a template's distinct labels a page must show in place for their homography to
be trusted (to pick the template with ``auto``, and to re-read the boxes). Measured with
full-page OCR on fixture pages: the right template's labels score 0.48-1.0 where they are
legible (0.57 on a form with its lower third torn off); the other template's labels score up
to 0.39 on an invoice, and 0.26 on a delivery note that shares a few labels."""
MIN_INLIERS_FOR_ITS_TEMPLATE = 8
MIN_INLIER_SHARE_FOR_ITS_TEMPLATE = 0.85
"""A page taken to be of the template (asked for, or its frame matched) is aligned by 8 or more
label matches in place (at most 3 of a row: :data:`LABELS_PER_ROW`) whatever their share of the
form's labels, when nearly all the labels matched fit that one homography: a photo at 30
degrees whose OCR misread or split half the labels (称： for 名称) had 9 of 9 in place, an
overdetermined fit. Another layout that shares labels fits some of them too (a 数电票 scan
asked as vat_invoice: 8-9 of its 12-13 matches), not nearly all. The share
(:data:`MIN_LABEL_SCORE`) is what tells templates apart."""
LABELS_PER_ROW = 3
"""Of the labels a form prints on one row, at most this many count towards
:data:`MIN_INLIERS_FOR_ITS_TEMPLATE` (:meth:`ReferenceLabels.evidence`): the goods table's
header is eight of the national form's 23 distinct labels, and other pages print it too. A
销货清单 (the goods list a national invoice with many lines attaches: 购买方名称, 销售方名称, the
header, 销售方（章）) showed 8 of them and was aligned by them, read whole for 12-17 s and given
as an invoice, every field failing."""
GOODS_LIST_TITLE = "销售货物或者提供"
"""How a goods list's title starts (销售货物或者提供应税劳务、服务清单, the national format; a
glance reads a line's first ten heights: 销售货物或者提供应税): no invoice prints a line so."""
LABEL_ROW_MM = 1.5  # labels whose centres lie within this of each other's height share a row
MIN_LINE_SCORE = 0.8  # full-page lines read less surely than this are left out of a value
ROW_MM = 12.0
"""On a page registered by its frame, the fallback reads only the rows of the form that hold
the fields still in doubt: each one's box and this much above and below it (a label on the
box's row, the line or two below a label that :func:`beside_label` looks at, a layout whose
cells moved), across the form's whole width so that no line is cut."""
LEFT_MM = 50.0
RIGHT_MM = 5.0
"""Of the lines detected in those rows, only those reaching into the part of its row around a
field in doubt are recognised: its box, LEFT_MM to its left (a label ending up to 20 mm before
the box, the fallback's reach, and as long as 30 mm: 价税合计（大写）) and RIGHT_MM to its right
(print a few millimetres past the box; a line that starts further right is not the field's:
the 密码区 beside the buyer, the 备注 beside the seller. 30 mm read those, ~20% of the
fallback's recognition, every field the same). Lines are kept or left whole, never cut."""
_NOISE = re.compile(r"[\s:：]")


def norm(text: str) -> str:
    """Text for label matching: no spaces or colons, full-width brackets as printed."""
    return _NOISE.sub("", text)


def starts_with(line: str, label: str) -> bool:
    """Whether ``line`` (:func:`norm`-ed) starts with ``label``, one stray character before it
    aside: where the fallback takes a label to be printed (项目名称 is another label than 名称)."""
    return 0 <= line.find(label) <= 1


@dataclass(frozen=True, slots=True)
class LabelAlignment:
    homography: np.ndarray | None
    """Reference px (template dpi) -> page px."""
    matches: int
    inliers: int
    score: float
    """Share of the reference's distinct labels found in place, in [0, 1]."""


class ReferenceLabels:
    """The printed text of a template's reference form, in reference pixels (``px_per_mm`` of
    them to the millimetre)."""

    def __init__(self, lines: list[TextLine], px_per_mm: float) -> None:
        counts: dict[str, int] = {}
        for line in lines:
            counts[norm(line.text)] = counts.get(norm(line.text), 0) + 1
        self.lines = lines
        self.texts = frozenset(norm(line.text) for line in lines)
        self.unique = {
            norm(line.text): line.centre
            for line in lines
            if counts[norm(line.text)] == 1 and len(norm(line.text)) >= 2
        }
        self.rows = _rows(self.unique, LABEL_ROW_MM * px_per_mm)
        """Each distinct label's row of the form (an index, top to bottom)."""

    def evidence(self, labels: Iterable[str]) -> int:
        """How many of the distinct ``labels`` count as evidence of the form: at most
        :data:`LABELS_PER_ROW` of one row."""
        per_row: dict[int, int] = {}
        for label in set(labels):
            per_row[self.rows[label]] = per_row.get(self.rows[label], 0) + 1
        return sum(min(n, LABELS_PER_ROW) for n in per_row.values())


def _rows(centres: dict[str, np.ndarray], tolerance: float) -> dict[str, int]:
    """Label -> row: labels sorted by height, a new row wherever the next lies more than
    ``tolerance`` below the last."""
    rows: dict[str, int] = {}
    row, last = -1, -math.inf
    for label, (_, y) in sorted(centres.items(), key=lambda item: float(item[1][1])):
        if y - last > tolerance:
            row += 1
        rows[label], last = row, float(y)
    return rows


class LabelStarts:
    """Whether the lines a glance has read so far (their starts: :meth:`FullPageReader.shows`)
    show enough of a form's labels for the fallback to find a field by: one field's own label
    (:func:`beside_label` finds its value), or as many of the reference's distinct labels as
    :func:`align_by_labels` needs to align a page of a known template (3 of a row at most)
    (:data:`MIN_INLIERS_FOR_ITS_TEMPLATE`, or :data:`MIN_LABEL_SCORE` of them if fewer), each at
    a line's first or second character as they find them. A page that shows less (a cover
    letter; a delivery note printing 单价, 金额 and the form's ``No``) gives the fallback nothing
    to read, and a goods list says so by its title at once. One per glance (it counts what it
    has seen); plain data, so that it goes to the fallback's own process."""

    def __init__(self, forms: Iterable[tuple[Template, ReferenceLabels]]) -> None:
        self.forms = [
            (
                frozenset(norm(spec.label) for spec in template.fields if spec.label),
                reference,
                min(
                    MIN_INLIERS_FOR_ITS_TEMPLATE,
                    math.ceil(MIN_LABEL_SCORE * len(reference.unique)),
                ),
            )
            for template, reference in forms
        ]
        self.seen: list[set[str]] = [set() for _ in self.forms]

    def __call__(self, text: str) -> bool | None:
        """True: the page shows a form; False: it shows it is none (a goods list's title);
        None: not yet told."""
        line = norm(text)
        if starts_with(line, GOODS_LIST_TITLE):
            return False
        for (fields, reference, enough), seen in zip(self.forms, self.seen, strict=True):
            if any(starts_with(line, label) for label in fields):
                return True
            seen.update(label for label in reference.unique if starts_with(line, label))
            if reference.evidence(seen) >= enough:
                return True
        return None


def align_by_labels(
    lines: list[TextLine], reference: ReferenceLabels, *, known: bool = False
) -> LabelAlignment:
    """Homography from the reference's distinct labels to where the page prints them. With
    ``known`` (the page is taken to be of this template), :data:`MIN_INLIERS_FOR_ITS_TEMPLATE`
    in place suffice, whatever their share, when nearly all the matches are in place."""
    page_counts: dict[str, int] = {}
    for line in lines:
        page_counts[norm(line.text)] = page_counts.get(norm(line.text), 0) + 1
    src, dst, names = [], [], []
    longest_first = sorted(reference.unique, key=len, reverse=True)
    for line in lines:
        text = norm(line.text)
        # the longest label the line starts with: 销售方（章） is printed at the seal's place,
        # 销售方 beside the seller's block (taken for it, a seal's label was out of place)
        label = next((label for label in longest_first if text.startswith(label)), None)
        if label is None or (text == label and page_counts[text] > 1):
            continue
        names.append(label)
        src.append(reference.unique[label])
        dst.append(line.centre if text == label else _label_point(line, len(label) / len(text)))
    if len(src) < MIN_LABEL_MATCHES:
        return LabelAlignment(None, len(src), 0, 0.0)
    src_a = np.asarray(src, np.float32)
    dst_a = np.asarray(dst, np.float32)
    tolerance = 0.015 * float(np.linalg.norm(dst_a.max(axis=0) - dst_a.min(axis=0)))
    homography, inlier_mask = cv2.findHomography(src_a, dst_a, cv2.RANSAC, max(tolerance, 3.0))
    if homography is None or not _plausible(homography):
        homography, inlier_mask = _affine(src_a, dst_a, max(tolerance, 3.0))
    inliers = int(inlier_mask.sum()) if inlier_mask is not None else 0
    if homography is None or inliers < MIN_LABEL_MATCHES or not _plausible(homography):
        return LabelAlignment(None, len(src), inliers, 0.0)
    score = min(1.0, inliers / max(len(reference.unique), 1))
    in_place = [name for name, inlier in zip(names, inlier_mask.ravel(), strict=True) if inlier]
    enough = reference.evidence(in_place) >= MIN_INLIERS_FOR_ITS_TEMPLATE
    fits = enough and inliers >= MIN_INLIER_SHARE_FOR_ITS_TEMPLATE * len(src)
    if score < MIN_LABEL_SCORE and not (known and fits):
        return LabelAlignment(None, len(src), inliers, round(score, 4))
    return LabelAlignment(homography, len(src), inliers, round(score, 4))


def _affine(
    src: np.ndarray, dst: np.ndarray, tolerance: float
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """An affine map of the label matches (as a homography), where their homography is
    degenerate: labels along a few rows only (a page torn or cut off below them, a strip of
    the form photographed) leave its perspective terms unsettled, and RANSAC may fold the
    page onto a line (a torn form turned 90 degrees: 9 labels in place, the page's corners
    mapped within 30 px of one column)."""
    affine, inlier_mask = cv2.estimateAffine2D(
        src, dst, method=cv2.RANSAC, ransacReprojThreshold=tolerance
    )
    if affine is None:
        return None, None
    return np.vstack([affine, [0.0, 0.0, 1.0]]), inlier_mask


def _label_point(line: TextLine, share: float) -> np.ndarray:
    """Centre of the first ``share`` of a line's text (a label printed before its value)."""
    left = (line.quad[0] + line.quad[3]) / 2
    right = (line.quad[1] + line.quad[2]) / 2
    return left + (right - left) * share / 2


def _plausible(homography: np.ndarray) -> bool:
    """A homography that keeps the page convex and not absurdly squeezed or stretched."""
    corners = np.array([[[0, 0], [1000, 0], [1000, 600], [0, 600]]], np.float64)
    mapped = cv2.perspectiveTransform(corners, homography)[0].astype(np.float32)
    if not cv2.isContourConvex(mapped):
        return False
    sides = np.linalg.norm(np.roll(mapped, -1, axis=0) - mapped, axis=1)
    return bool(sides.min() > 0 and sides.max() / sides.min() < 20)


_Move = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def flattened(lines: list[TextLine], homography: np.ndarray, bend: Bend) -> list[TextLine]:
    """``lines`` (page px) where they would lie were the page flat, its ``bend`` taken out: the
    boxes and labels looked for through ``homography`` (reference px -> page px) alone then
    meet them (on a page folded by 5%, the seller's name box reached the total in words
    printed 4 mm above its row)."""
    return [
        TextLine(_through(line.quad, homography, bend.unmoved), line.text, line.score)
        for line in lines
    ]


def unflattened(quad: np.ndarray, homography: np.ndarray, bend: Bend) -> np.ndarray:
    """A quad of :func:`flattened` lines back where it lies on the bent page."""
    return _through(quad, homography, bend.moved)


def _through(quad: np.ndarray, homography: np.ndarray, move: _Move) -> np.ndarray:
    """A quad (page px) taken onto the form through ``homography``, moved there, and back."""
    on_form = mapped(quad, np.linalg.inv(homography)).astype(np.float32)
    x, y = move(on_form[None, :, 0], on_form[None, :, 1])
    return mapped(np.stack([x[0], y[0]], axis=1), homography)


def lines_in_box(
    lines: list[TextLine],
    spec: FieldSpec,
    template: Template,
    homography: np.ndarray,
    down: float = 0.0,
) -> tuple[str, float, np.ndarray] | None:
    """The text of the page lines whose centres fall in a field's box (with the crop margin,
    moved ``down`` mm where the page's print lies): the row nearest the box's middle, left to
    right, its confidently read pieces only (a seal's text is read with little confidence),
    any printed label in front of the value stripped. Where the pieces together fail the
    field's checks, or pass only by a part left out, and one alone passes, that one (the
    seller's seal repeats the tax id: on a page folded by 5% its line, beside the id's, was
    read as surely)."""
    ppm = template.px_per_mm
    box = spec.box
    reach = [tuple(v * ppm for v in _box_reach(spec, template, down))]
    middle = (box.y + down + box.h / 2) * ppm
    inverse = np.linalg.inv(homography)
    found = []
    for line in lines:
        point = line.centre.reshape(1, 1, 2).astype(np.float64)
        cx, cy = cv2.perspectiveTransform(point, inverse)[0, 0]
        if _inside(cx, cy, reach):
            found.append((cx, cy, line))
    if not found:
        return None
    row = min(found, key=lambda item: abs(item[1] - middle))[1]
    found = [item for item in found if abs(item[1] - row) <= box.h * ppm / 3]
    sure = [item for item in found if item[2].score >= MIN_LINE_SCORE]
    found = sorted(sure or found, key=lambda item: item[0])
    text = "".join(_strip_label(line.text, spec.label) for _, _, line in found)
    joined = check_value(spec, text) if len(found) > 1 else None
    # the pieces together fail, or pass only by a part left out (a seal's print of a tax id)
    if joined is not None and (joined.errors or joined.left_out):
        alone = [
            item
            for item in found
            if not check_value(spec, _strip_label(item[2].text, spec.label)).errors
        ]
        if alone:
            found = alone[:1]
            text = _strip_label(found[0][2].text, spec.label)
    score = float(np.mean([line.score for _, _, line in found]))
    quad = np.vstack([line.quad for _, _, line in found])
    return text, score, quad


def _box_reach(
    spec: FieldSpec, template: Template, down: float = 0.0
) -> tuple[float, float, float, float]:
    """Where a line's centre counts as inside a field's box (x0, y0, x1, y1, mm): the box with
    the crop margin on either side and half of it above and below, moved ``down`` mm (the
    page's print offset, :func:`extractor.print_offset.print_offset`)."""
    box, margin = spec.box, template.crop_margin_mm
    top, bottom = box.y + down - margin / 2, box.y + down + box.h + margin / 2
    return box.x - margin, top, box.x + box.w + margin, bottom


def _strip_label(text: str, label: str | None) -> str:
    if label:
        cleaned = norm(text)
        if cleaned.startswith(norm(label)):
            return cleaned[len(norm(label)) :]
    return text


def _label_end(line: TextLine) -> np.ndarray:
    """The middle of a label line's right edge, where its value starts: a long label's centre
    lies far from its field's box."""
    return (line.quad[1] + line.quad[2]) / 2


def _on_row_before(line: TextLine, point: np.ndarray) -> bool:
    end = _label_end(line)
    return bool(abs(end[1] - point[1]) < 1.5 * line.height and end[0] < point[0])


def beside_label(
    lines: list[TextLine],
    spec: FieldSpec,
    near: tuple[np.ndarray, float] | None = None,
    stoplist: set[str] | frozenset[str] = frozenset(),
    *,
    row: bool = False,
    alone: bool = False,
) -> tuple[str, float, np.ndarray] | None:
    """The value printed after the field's label on its line, or the nearest line to its right
    (or below) whose text passes the field's checks and is not itself printed form text
    (``stoplist``). ``near`` — (page point, radius in px) — keeps to the label occurrence
    closest to where the field should be (名称 is printed for buyer and seller), within reach;
    with ``row``, a label on that point's row to its left is within reach however far (a
    table's 合计 row); with ``alone`` (no other field prints the label), the label found once on
    the page is the field's wherever it lies, out of reach or not (another layout's top band:
    the e-invoice stacks 发票代码, 发票号码, 开票日期 and 校验码 at the right)."""
    if not spec.label:
        return None
    label = norm(spec.label)
    printed = [line for line in lines if starts_with(norm(line.text), label)]
    holders = printed
    if near is not None:
        point, radius = near
        holders = [
            h
            for h in printed
            if np.linalg.norm(_label_end(h) - point) <= radius or (row and _on_row_before(h, point))
        ]
        holders.sort(key=lambda line: float(np.linalg.norm(_label_end(line) - point)))
        if not holders and alone and len(printed) == 1:
            holders = printed
    if not holders or (near is None and len(holders) > 1):
        return None  # no label, or one printed twice (名称) with nothing to tell which is whose
    holder = holders[0]
    rest = norm(holder.text).split(label, 1)[1]
    if rest and not check_value(spec, rest).errors:
        return rest, holder.score, holder.quad
    height = max(holder.height, 1.0)
    right = _label_end(holder)
    # along and across the label's own line: a photo's rows run at its angle, not the image's
    along = holder.quad[1] - holder.quad[0]
    along = along / max(float(np.linalg.norm(along)), 1e-6)
    down = np.array([-along[1], along[0]])
    candidates = []
    for line in lines:
        if line is holder:
            continue
        dx, dy = float((line.centre - right) @ along), float((line.centre - right) @ down)
        if abs(dy) < 0.7 * height and dx > -height:  # same row, to the right
            candidates.append((dx, line))
        elif 0 < dy < 3 * height and abs(float((line.centre - holder.centre) @ along)) < 6 * height:
            candidates.append((10 * height + dy, line))  # below
    for _, line in sorted(candidates, key=lambda item: item[0]):
        if norm(line.text) not in stoplist and not check_value(spec, line.text).errors:
            return line.text, line.score, line.quad
    return None


def printed_as(lines: list[TextLine], spec: FieldSpec) -> tuple[str, float, np.ndarray] | None:
    """The field's value from the one line among ``lines`` printed as only its value is
    (:attr:`FieldSpec.printed_as`: the check code's four groups of five digits), its whole text
    or what follows a colon in it (a label read wrong: 校验吗：), passing the field's checks;
    wherever it lies and whatever label it follows: another layout of the form prints it
    elsewhere (the 增值税电子普通发票's top band), and a faint label is not found at all. None
    where no line is, or two are (nothing to tell which is the field's)."""
    if spec.printed_as is None:
        return None
    shape = re.compile(spec.printed_as)
    found = [
        (text, line)
        for line in lines
        for text in {line.text.strip(), re.split("[:：]", line.text)[-1].strip()}
        if shape.fullmatch(text) and not check_value(spec, text).errors
    ]
    if len({id(line) for _, line in found}) != 1:
        return None
    text, line = found[0]
    return text, line.score, line.quad


_WRITTEN_DATE = re.compile(r"\d{4}年\d{1,2}月\d{1,2}日")


def written_date(
    lines: list[TextLine], spec: FieldSpec, near: tuple[np.ndarray, float] | None
) -> tuple[str, float, np.ndarray] | None:
    """A date field's value from the one line within reach of its box (``near``: page point,
    radius in px) that holds a date written out (2024年12月07日), whatever label it follows or
    however that was read: the e-invoice prints 开票日期 in its top band above the paper form's
    box, and blur read it 升亲日期. No other field is printed so; two such lines in reach (a
    remark's service period) give none."""
    if spec.kind is not FieldKind.date or near is None:
        return None
    point, radius = near
    found = [
        (match.group(0), line)
        for line in lines
        if np.linalg.norm(line.centre - point) <= radius
        for match in [_WRITTEN_DATE.search(norm(line.text))]
        if match is not None and not check_value(spec, match.group(0)).errors
    ]
    if len(found) != 1:
        return None
    text, line = found[0]
    return text, line.score, line.quad


def rows_to_read(specs: list[FieldSpec], template: Template, homography: np.ndarray) -> list[View]:
    """The form's rows that hold ``specs`` (each box and :data:`ROW_MM` above and below it,
    across the reference's whole width; overlapping rows merged), each a view of the page set
    upright by ``homography`` (reference px -> page px) at the page's own resolution: a row of
    a photo at 30 degrees is read as a narrow band, not as the rectangle around it."""
    width, _ = template.reference_size_px
    ppm = template.px_per_mm
    spans = sorted(((s.box.y - ROW_MM) * ppm, (s.box.y + s.box.h + ROW_MM) * ppm) for s in specs)
    merged: list[tuple[float, float]] = []
    for top, bottom in spans:
        if merged and top <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], bottom))
        else:
            merged.append((top, bottom))
    views = []
    for top, bottom in merged:
        corners = np.array([[[0, top], [width, top], [width, bottom], [0, bottom]]], np.float64)
        tl, tr, br, bl = cv2.perspectiveTransform(corners, homography)[0]
        across = max(np.linalg.norm(tr - tl), np.linalg.norm(br - bl)) / width
        down = max(np.linalg.norm(bl - tl), np.linalg.norm(br - tr)) / (bottom - top)
        k = max(across, down)  # page px per reference px, the band's finest
        upright = np.array([[k, 0.0, 0.0], [0.0, k, -k * top], [0.0, 0.0, 1.0]])
        size = (int(np.ceil(width * k)), int(np.ceil((bottom - top) * k)))
        views.append(View(upright @ np.linalg.inv(homography), size))
    return views


def near_fields(
    specs: list[FieldSpec],
    template: Template,
    homography: np.ndarray,
    settled: Sequence[FieldSpec] = (),
    form: Sequence[TextLine] = (),
    down: float = 0.0,
    bend: Bend | None = None,
) -> NearFields:
    """Whether a line (4x2 outline, page px) lies in the row of one of ``specs`` (:data:`ROW_MM`)
    and reaches into the part of it around that field (:data:`LEFT_MM`, :data:`RIGHT_MM`; the
    whole row for a field :attr:`~FieldSpec.printed_as` a form of its own). A
    line of one character (:data:`ONE_CHARACTER`) only counts inside a field's box: outside,
    it is no label of two characters or more, nor a value that passes its checks. Nor does a
    line inside the box of a field of ``settled`` (read valid) and of none of ``specs``: it is
    that field's value, no label, and no other field's value (the amount beside the tax's
    label 合计, the tax id below the name's); but in the row of a field printed as only it is,
    where another layout prints it (the e-invoice's code inside the paper form's number box).
    Nor, outside the boxes of ``specs``, a line over the form's own print (``form``: the
    reference form's lines, reference px) but the labels of ``specs``: another field's label
    (校验码, 地址、电话) or what the form frames beside them (the 密码区's cipher, the 备注), no
    value of theirs. The boxes are moved ``down`` mm where
    the page's print lies; the form's print is where the form is; a line is placed through the
    page's ``bend`` (:func:`flattened`)."""
    ppm = template.px_per_mm
    rows = [(s, s.box.y + down - ROW_MM, s.box.y + down + s.box.h + ROW_MM) for s in specs]
    return NearFields(
        to_mm=np.diag([1 / ppm, 1 / ppm, 1.0]) @ np.linalg.inv(homography),
        windows=[
            (s.box.x - LEFT_MM, top, s.box.x + s.box.w + RIGHT_MM, bottom)
            for s, top, bottom in rows
            if not s.printed_as
        ],
        boxes=[_box_reach(s, template, down) for s in specs],  # lines_in_box takes a centre
        taken=[_box_reach(s, template, down) for s in settled],
        rows=[(-math.inf, top, math.inf, bottom) for s, top, bottom in rows if s.printed_as],
        others=_others_print(form, specs, template),
        short_labels=any(s.label and len(norm(s.label)) < 2 for s in specs),
        homography=homography,
        bend=bend,
    )


_Span = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class NearFields:
    """The test of :func:`near_fields` (a line's 4x2 outline, page px -> bool), made of plain
    data so that it can be sent to a full-page OCR process of its own (:mod:`extractor.
    fullpage_server`). Spans are (x0, y0, x1, y1), mm on the form."""

    to_mm: np.ndarray
    """Page px -> mm on the form."""
    windows: list[_Span]
    boxes: list[_Span]
    taken: list[_Span]
    rows: list[_Span]
    """The whole rows of the fields :attr:`~FieldSpec.printed_as` a form of their own (read in
    place of their windows)."""
    others: list[_Span]
    short_labels: bool
    homography: np.ndarray
    bend: Bend | None

    def __call__(self, quad: np.ndarray) -> bool:
        if self.bend is not None:
            quad = _through(quad, self.homography, self.bend.unmoved)
        mm = mapped(quad, self.to_mm)
        (x0, y0), (x1, y1) = mm.min(axis=0), mm.max(axis=0)
        cx, cy = mm.mean(axis=0)
        if _inside(cx, cy, self.boxes):
            return True
        if not self.short_labels and _one_character(mm):
            return False
        if _inside(cx, cy, self.taken) and not _inside(cx, cy, self.rows):
            return False
        if any(
            x1 > left and x0 < right and min(y1, bottom) - max(y0, top) > OVER_PRINT * (y1 - y0)
            for left, top, right, bottom in self.others
        ):
            return False
        return any(
            top <= cy <= bottom and x1 >= left and x0 <= right
            for left, top, right, bottom in self.windows + self.rows
        )


def _inside(x: float, y: float, spans: list[_Span]) -> bool:
    return any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in spans)


def _others_print(
    form: Sequence[TextLine], specs: Sequence[FieldSpec], template: Template
) -> list[_Span]:
    """Where (x0, y0, x1, y1, mm) the form prints text, outside every field's box (a reference
    made from a filled sample holds its values there: :attr:`Reference.labels` leaves them out
    too), that is no part of a label of ``specs`` (名 and 称： are parts of 名称; compared as
    NFKC: （小写） is printed (小写))."""
    ppm = template.px_per_mm
    boxes = [(f.box.x, f.box.y, f.box.x + f.box.w, f.box.y + f.box.h) for f in template.fields]
    labels = [unicodedata.normalize("NFKC", norm(s.label)) for s in specs if s.label]
    spans = []
    for line in form:
        text = unicodedata.normalize("NFKC", norm(line.text))
        (x0, y0), (x1, y1) = line.quad.min(axis=0) / ppm, line.quad.max(axis=0) / ppm
        if _inside((x0 + x1) / 2, (y0 + y1) / 2, boxes):
            continue  # a value of the sample the reference was made from
        if text and not any(text in label or label in text for label in labels):
            spans.append((float(x0), float(y0), float(x1), float(y1)))
    return spans


OVER_PRINT = 0.5
"""A line lies over the form's own print (:func:`near_fields`) where it runs across it over
more than this share of its height (校验码, or the 密码区's cipher over the 密 it covers): one
whose edge grazes it lies in another row (the e-invoice's 发票代码 label, 0.7 of its 3 mm above
the paper form's № at the top right, was left unread, and the code beside it not found)."""
ONE_CHARACTER = 1.5
"""A line no wider than this many times its height holds one character (and maybe a colon)."""


def _one_character(quad: np.ndarray) -> bool:
    along = (np.linalg.norm(quad[1] - quad[0]) + np.linalg.norm(quad[2] - quad[3])) / 2
    across = (np.linalg.norm(quad[3] - quad[0]) + np.linalg.norm(quad[2] - quad[1])) / 2
    return bool(along <= ONE_CHARACTER * across)
