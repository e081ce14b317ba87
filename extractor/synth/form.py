"""The blank preprinted form: brown ruling and 楷体 labels on off-white paper.

``render_form(template, dpi)`` gives the blank form as a BGR image; ``write_reference`` writes
the template's reference image (the blank form at the registration dpi) as a small PNG.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from extractor.synth import layout as L
from extractor.synth.raster import Layer, compose, to_uint8
from extractor.templates import Template

FORM_INK = (40, 70, 150)  # BGR: brown
FORM_INKS = {"brown": FORM_INK, "green": (100, 140, 40)}
"""The colours the national form is printed in (BGR): brown, and a teal green some copies
and older forms are printed in."""
PAPER = (236, 245, 249)  # BGR: off-white
HOLE_BACKGROUND = (214, 214, 214)  # BGR: a scanner lid seen through the feed holes
PERFORATION = (170, 178, 186)
DEFAULT_TITLE = "北京增值税普通发票"
LABEL_SIZE = 2.9  # mm, em of the form's labels


def _check_page(template: Template | None) -> None:
    if template is not None and (template.page.width_mm, template.page.height_mm) != (
        L.PAGE_W,
        L.PAGE_H,
    ):
        raise ValueError(
            f"template {template.name!r} is {template.page.width_mm} x "
            f"{template.page.height_mm} mm; "
            f"the synthetic form is {L.PAGE_W} x {L.PAGE_H} mm (vat_invoice)"
        )


def _justify(
    layer: Layer, x0: float, x1: float, y: float, text: str, size: float, colon: str = "："
) -> None:
    """Spread ``text`` evenly over x0..x1 (less the colon, which follows the last character)."""
    colon_w = layer.text_width(colon, size, cjk="kai") if colon else 0.0
    chars = [c for c in text if not c.isspace()]
    span = x1 - x0 - colon_w
    widths = [layer.text_width(c, size, cjk="kai") for c in chars]
    gap = (span - sum(widths)) / max(1, len(chars) - 1)
    x = x0
    for c, w in zip(chars, widths, strict=True):
        layer.text(x, y, c, size, cjk="kai")
        x += w + gap
    if colon:
        layer.text(x - gap, y, colon, size, cjk="kai")


def _vertical(layer: Layer, cx: float, y0: float, y1: float, text: str, size: float) -> None:
    """Characters stacked one under another, spread over y0..y1."""
    n = len(text)
    step = (y1 - y0) / n
    for i, ch in enumerate(text):
        layer.text(cx, y0 + step * (i + 0.5), ch, size, cjk="kai", align="centre")


def draw_form(
    layer: Layer,
    *,
    title: str = DEFAULT_TITLE,
    copy_label: str = "发票联",
    electronic: bool = False,
    check_label: str = "校验码",
) -> None:
    """Draw the preprinted form's ink (ruling and labels) onto ``layer``; ``electronic``: the
    增值税电子普通发票's (its top band's labels stacked at the right, no copy label);
    ``check_label``: the label under the QR code (a 专票's form prints 机器编号 there: it
    carries no check code)."""
    thick, thin = L.THICK, L.THIN
    # Ruling.
    layer.box(L.FRAME_X0, L.FRAME_Y0, L.FRAME_X1, L.FRAME_Y1, thick)
    for y in (L.BUYER_Y1, L.TOTAL_Y0, L.SELLER_Y0):
        layer.hline(y, L.FRAME_X0, L.FRAME_X1, thin * 1.4)
    for y0, y1 in ((L.BUYER_Y0, L.BUYER_Y1), (L.SELLER_Y0, L.SELLER_Y1)):
        for x in (L.HEAD_COL_X, L.SIDE_HEAD_X0, L.SIDE_HEAD_X1):
            layer.vline(x, y0, y1, thin * 1.4)
    for _, x0, _ in L.ITEM_COLUMNS[1:]:
        layer.vline(x0, L.ITEM_HEAD_Y0, L.SUM_Y1, thin)
    layer.vline(L.WORDS_LABEL_X1, L.TOTAL_Y0, L.TOTAL_Y1, thin)

    # Block headers and party labels.
    head_cx = (L.FRAME_X0 + L.HEAD_COL_X) / 2
    side_cx = (L.SIDE_HEAD_X0 + L.SIDE_HEAD_X1) / 2
    _vertical(layer, head_cx, L.BUYER_Y0 + 1, L.BUYER_Y1 - 1, "购买方", 3.3)
    _vertical(layer, head_cx, L.SELLER_Y0 + 1, L.SELLER_Y1 - 1, "销售方", 3.3)
    _vertical(layer, side_cx, L.BUYER_Y0 + 1.5, L.BUYER_Y1 - 1.5, "密码区", 3.3)
    _vertical(layer, side_cx, L.SELLER_Y0 + 3, L.SELLER_Y1 - 3, "备注", 3.3)
    for i, label in enumerate(L.PARTY_LABELS):
        text = label.rstrip(":")
        for row in (L.buyer_row(i), L.seller_row(i)):
            _justify(
                layer, L.LABEL_X0 + 1.2, L.LABEL_X1 - 1.0, (row[0] + row[1]) / 2, text, LABEL_SIZE
            )

    # Item table header, 合计 and 价税合计.
    head_y = (L.ITEM_HEAD_Y0 + L.ITEM_HEAD_Y1) / 2
    for label, x0, x1 in L.ITEM_COLUMNS:
        spacing = 1.2 if len(label) <= 4 else 0.0
        layer.text((x0 + x1) / 2, head_y, label, 3.0, cjk="kai", align="centre", spacing=spacing)
    name_x0, name_x1 = L.ITEM_COLUMNS[0][1], L.ITEM_COLUMNS[0][2]
    layer.text(
        (name_x0 + name_x1) / 2,
        (L.SUM_Y0 + L.SUM_Y1) / 2,
        "合计",
        3.1,
        cjk="kai",
        align="centre",
        spacing=5.0,
    )
    total_y = (L.TOTAL_Y0 + L.TOTAL_Y1) / 2
    layer.text(
        (L.WORDS_LABEL_X0 + L.WORDS_LABEL_X1) / 2,
        total_y,
        "价税合计（大写）",
        3.1,
        cjk="kai",
        align="centre",
    )
    layer.text(
        (L.SMALL_LABEL_X0 + L.SMALL_LABEL_X1) / 2,
        total_y,
        "（小写）",
        3.0,
        cjk="kai",
        align="centre",
    )

    # Footer.
    foot_y = (L.FOOTER_Y0 + L.FOOTER_Y1) / 2
    for label, x in L.FOOTER_LABELS:
        layer.text(x, foot_y, label.replace(":", "："), 3.0, cjk="kai")

    layer.text(
        L.TITLE_CX, (L.TITLE_Y0 + L.TITLE_Y1) / 2, title, 6.6, cjk="kai", align="centre", stroke=0.1
    )
    layer.hline(L.TITLE_RULE_Y, L.TITLE_RULE_X0, L.TITLE_RULE_X1, 0.35)
    layer.hline(L.TITLE_RULE_Y + 1.0, L.TITLE_RULE_X0, L.TITLE_RULE_X1, 0.2)
    if electronic:
        layer.text(L.E_MACHINE_LABEL_X0, L.E_MACHINE_Y, "机器编号：", 3.0, cjk="kai")
        for label, y in zip(L.E_LABELS, L.E_ROWS_Y, strict=True):
            layer.text(L.E_LABEL_X0, y, label, 3.0, cjk="kai")
        return
    # Top band.
    layer.text(
        L.CODE_LABEL[0] + 0.5,
        (L.CODE_LABEL[1] + L.CODE_LABEL[3]) / 2,
        "发票代码",
        2.4,
        cjk="kai",
        spacing=0.3,
    )
    layer.text(
        L.CHECK_LABEL_X0 + 0.5,
        (L.CHECK_Y0 + L.CHECK_Y1) / 2,
        check_label,
        3.0,
        cjk="kai",
        spacing=0.2,
    )
    layer.text(
        L.TITLE_CX,
        (L.COPY_Y0 + L.COPY_Y1) / 2,
        copy_label,
        3.6,
        cjk="kai",
        align="centre",
        spacing=2.0,
    )
    layer.text(
        L.NO_SIGN_X0 + 0.3, (L.NUMBER_Y0 + L.NUMBER_Y1) / 2, "№", 5.6, cjk="kai", latin="sans"
    )
    layer.text(L.DATE_LABEL_X0 + 0.5, (L.DATE_Y0 + L.DATE_Y1) / 2, "开票日期：", 3.0, cjk="kai")


def hole_layer(width_mm: float, height_mm: float, dpi: float) -> Layer:
    """The tractor-feed holes (coverage 1 where the paper is punched out)."""
    holes = Layer(width_mm, height_mm, dpi)
    y = L.HOLE_PITCH / 2
    while y < height_mm:
        for x in L.HOLE_XS:
            holes.ellipse(x, y, L.HOLE_RADIUS, L.HOLE_RADIUS, 0)
        y += L.HOLE_PITCH
    return holes


def perforation_layer(width_mm: float, height_mm: float, dpi: float) -> Layer:
    perf = Layer(width_mm, height_mm, dpi)
    for x in L.PERFORATION_XS:
        perf.dashed_vline(x, 0, height_mm, 0.25, 1.0, 1.2, 0.6)
    return perf


def render_form(
    template: Template | None = None,
    dpi: float | None = None,
    *,
    title: str = DEFAULT_TITLE,
    copy_label: str = "发票联",
) -> np.ndarray:
    """The blank form (BGR uint8) at ``dpi`` (default: the template's registration dpi, 200).

    At 200 dpi the image is 1898 x 1102 px, the template's ``reference_size_px``.
    """
    _check_page(template)
    if dpi is None:
        dpi = template.registration.dpi if template is not None else 200
    ink = Layer(L.PAGE_W, L.PAGE_H, dpi)
    draw_form(ink, title=title, copy_label=copy_label)
    paper = np.empty((ink.h, ink.w, 3), np.float32)
    paper[:] = np.asarray(PAPER, np.float32) / 255
    image = compose(
        paper,
        [
            (ink.alpha(), FORM_INK),
            (perforation_layer(L.PAGE_W, L.PAGE_H, dpi).alpha(), PERFORATION),
        ],
    )
    holes = hole_layer(L.PAGE_W, L.PAGE_H, dpi).alpha()[..., None]
    image = image * (1 - holes) + np.asarray(HOLE_BACKGROUND, np.float32) / 255 * holes
    return to_uint8(image)


def write_reference(template: Template, out_path: str | Path | None = None) -> Path:
    """Write ``template``'s reference image: the blank form at its registration dpi.

    ``out_path`` defaults to the template's ``reference_image`` path. The PNG is quantised to
    a small palette (it stays well under 100 KB).
    """
    return save_reference(render_form(template), template, out_path)


def save_reference(image: np.ndarray, template: Template, out_path: str | Path | None) -> Path:
    """Save a blank form (BGR) as ``template``'s reference: a 16-colour PNG."""
    path = Path(out_path) if out_path is not None else template.reference_image_path
    if path is None:
        raise ValueError(
            f"template {template.name!r} names no reference image and no out_path was given"
        )
    rgb = Image.fromarray(image[:, :, ::-1].copy())
    quantised = rgb.quantize(colors=16, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    quantised.save(path, format="PNG", optimize=True)
    return path
