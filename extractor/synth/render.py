"""An issued invoice: the blank form with the data printed on top, seals and a QR code.

The data layer is printed in a different font (AR PL UMing or WenQuanYi Zen Hei for Chinese,
DejaVu Sans Mono for digits) and, as dot-matrix and laser printers do, offset from the form as a
whole by ``data_offset_mm`` plus a little jitter per printed line. The ink boxes of the template
fields as printed (page mm, before any scan degradation) go into the ground truth.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import cv2
import numpy as np
import segno

from extractor.fields.codes import printed_year
from extractor.synth import layout as L
from extractor.synth.content import Invoice, printed_tax
from extractor.synth.form import FORM_INKS, PERFORATION, draw_form, hole_layer, perforation_layer
from extractor.synth.raster import Layer, TextBox, compose, to_uint8
from extractor.synth.seals import SEAL_RED, invoice_seal, oval_seal, place

LINE_JITTER_MM = (0.3, 0.2)  # per printed line, uniform +- (x, y)
PRINTERS = {
    # name: (ink BGR, weight)
    "dotmatrix": ((60, 42, 38), 0.55),
    "laser": ((28, 28, 28), 0.35),
    "inkjet_blue": ((105, 45, 35), 0.10),
}
PIN_PITCH_MM = 25.4 / 180  # a 24-pin head's pins, down the head


@dataclass(frozen=True)
class Pins:
    """A 24-pin dot-matrix head printing the data dot by dot, as the printers that fill in
    paper VAT invoices do (impact, through a ribbon, onto the multi-part form).

    ``along_dpi``: dots along the line (360 letter quality; 180 draft, half as many);
    ``dot_mm``: a pin's dot across; ``ribbon``: the ink a dot leaves (1 a fresh
    ribbon, 0.4-0.6 a worn one); ``broken_pin``: a pin (0-23) that no longer fires, a white
    line through every printed line at its height."""

    along_dpi: int = 360
    dot_mm: float = 0.24
    ribbon: float = 1.0
    broken_pin: int | None = None


def pin_print(
    alpha: np.ndarray, ppm: float, pins: Pins, rng: np.random.Generator, fire_at: float = 0.25
) -> np.ndarray:
    """``alpha`` (the data layer's ink, float32 in [0, 1], ``ppm`` px a mm) printed by ``pins``:
    a dot wherever the glyphs' ink covers ``fire_at`` of a pin's cell at firing, each dot a soft
    disc, the ribbon's ink uneven along the page and from dot to dot. A pin fires where a
    quarter is covered for text: a thin stroke stays one dot thick, as a printer driver's
    rasteriser keeps it; a picture (the QR code's bitmap) is sampled, half."""
    h, w = alpha.shape
    ys = np.arange(0.0, h, PIN_PITCH_MM * ppm)
    xs = np.arange(0.0, w, 25.4 / pins.along_dpi * ppm)
    fired = cv2.resize(alpha, (len(xs), len(ys)), interpolation=cv2.INTER_AREA) > fire_at
    if pins.broken_pin is not None:
        fired[np.arange(len(ys)) % 24 == pins.broken_pin] = False
    row, col = np.nonzero(fired)
    y, x = ys[row], xs[col]
    strength = rng.uniform(0.75, 1.0, len(row)).astype(np.float32)
    # each dot splatted bilinearly onto the page's px, then spread to its disc
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = (y - y0).astype(np.float32), (x - x0).astype(np.float32)
    density = np.zeros((h + 1, w + 1), np.float32)
    for dy, dx, weight in (
        (0, 0, (1 - fy) * (1 - fx)),
        (0, 1, (1 - fy) * fx),
        (1, 0, fy * (1 - fx)),
        (1, 1, fy * fx),
    ):
        np.add.at(density, (y0 + dy, x0 + dx), strength * weight)
    sigma = max(0.35, pins.dot_mm * ppm / 2.5)
    discs = cv2.GaussianBlur(density[:h, :w], (0, 0), sigma) * (2 * np.pi * sigma**2)
    # a worn ribbon leaves grey however often the pins strike one place
    return np.clip(discs, 0, 1) * (pins.ribbon * _mottle((h, w), rng, 8.0 * ppm, 0.7))


QR_DOT_GAIN_MM = 0.6  # around the QR code's box, the dots its edge modules spread to


def _pin_printed_qr(
    payload: str,
    box: list[float],
    ppm: float,
    dpi: float,
    pins: Pins,
    rng: np.random.Generator,
) -> np.ndarray:
    """The QR code at ``box`` (mm) printed by ``pins`` as a printer driver sends a bitmap (the
    pins fire where it is dark at their centre, :func:`pin_print`), over its box and the dots
    spread past it; -1 elsewhere. Its dots' ink is drawn from a child of ``rng``: the text's
    dots are as before."""
    x0, y0, size, _ = box
    qr = Layer(L.PAGE_W, L.PAGE_H, dpi)
    _draw_qr(qr, payload, x0, y0, size)
    (child,) = rng.spawn(1)
    printed = pin_print(qr.alpha(), ppm, pins, child, fire_at=0.5)
    out = np.full_like(printed, -1.0)
    a, b = (round((v - QR_DOT_GAIN_MM) * ppm) for v in (y0, x0))
    c, d = (round((v + size + QR_DOT_GAIN_MM) * ppm) for v in (y0, x0))
    out[max(0, a) : c, max(0, b) : d] = printed[max(0, a) : c, max(0, b) : d]
    return out


@dataclass
class RenderedPage:
    """A page as it left the printer (before scanning)."""

    image: np.ndarray  # BGR uint8
    holes: np.ndarray  # float32 coverage of the punched feed holes (background shows through)
    dpi: float
    width_mm: float
    height_mm: float
    info: dict[str, object] = field(default_factory=dict)


def paper(h: int, w: int, rng: np.random.Generator, base: tuple[float, float, float]) -> np.ndarray:
    """Off-white paper with a faint low-frequency mottle (float32 BGR in [0, 1])."""
    small = rng.normal(0.0, 1.0, (max(2, h // 90), max(2, w // 90))).astype(np.float32)
    mottle = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
    mottle = cv2.GaussianBlur(mottle, (0, 0), 6) * 0.005
    out = np.empty((h, w, 3), np.float32)
    for c in range(3):
        out[..., c] = base[c] / 255.0 + mottle
    return out


class DataPrinter:
    """Prints text onto the data layer with the page offset and per-line jitter."""

    def __init__(self, layer: Layer, rng: random.Random, dx: float, dy: float, cjk: str) -> None:
        self.layer = layer
        self.rng = rng
        self.dx, self.dy = dx, dy
        self.cjk = cjk
        self.boxes: dict[str, list[float]] = {}

    def line_offset(self) -> tuple[float, float]:
        jx, jy = LINE_JITTER_MM
        return self.dx + self.rng.uniform(-jx, jx), self.dy + self.rng.uniform(-jy, jy)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float,
        *,
        align: str = "left",
        fit: float | None = None,
        name: str | None = None,
        offset: tuple[float, float] | None = None,
        latin: str = "mono",
    ) -> TextBox | None:
        """Print ``text`` centred vertically on ``y``; shrink it to ``fit`` mm wide if needed."""
        if not text:
            return None
        if fit is not None:
            width = self.layer.text_width(text, size, cjk=self.cjk, latin=latin)
            if width > fit:
                size *= fit / width
        ox, oy = offset if offset is not None else self.line_offset()
        box = self.layer.text(x + ox, y + oy, text, size, cjk=self.cjk, latin=latin, align=align)
        if name is not None and box is not None:
            self.boxes[name] = box.as_xywh()
        return box


def _draw_qr(layer: Layer, payload: str, x0: float, y0: float, size: float) -> list[float]:
    qr = segno.make(payload, error="m", micro=False)
    mask = np.array([list(r) for r in qr.matrix_iter(scale=1, border=0)], dtype=bool)
    layer.cells(x0, y0, size / mask.shape[0], mask)
    return [round(x0, 2), round(y0, 2), round(size, 2), round(size, 2)]


def print_data(
    layer: Layer,
    inv: Invoice,
    rng: random.Random,
    dx: float,
    dy: float,
    cjk: str,
    electronic: bool = False,
) -> tuple[dict[str, list[float]], list[float]]:
    """Print every value of ``inv``; returns the template fields' ink boxes and the QR's box.
    ``electronic``: the 增值税电子普通发票's top band (:data:`~extractor.synth.layout.E_LABELS`)."""
    p = DataPrinter(layer, rng, dx, dy, cjk)

    # Top band.
    ox, oy = p.line_offset()
    qr_box = _draw_qr(
        layer, inv.qr_payload, L.QR_X0 + 1.0 + ox, L.QR_Y0 + 0.5 + oy, L.QR_SIZE - 2.0
    )
    if electronic:
        p.text(L.E_MACHINE_X0, L.E_MACHINE_Y, inv.machine_no, 3.4)
        values = (inv.code, inv.number, inv.date_text, inv.check_code_text)
        names = ("invoice_code", "invoice_number", "issue_date", "check_code")
        for value, name, y in zip(values, names, L.E_ROWS_Y, strict=True):
            p.text(L.E_VALUE_X0, y, value, 3.4, name=name)
    else:
        _print_top_band(p, inv)
    _print_body(p, inv)
    return p.boxes, qr_box


def _print_top_band(p: DataPrinter, inv: Invoice) -> None:
    """The paper form's code, number (and their small second prints), check code and date."""
    p.text(
        L.CODE_X0 + 2.0,
        (L.CODE_Y0 + L.CODE_Y1) / 2,
        inv.code,
        4.6,
        name="invoice_code",
        fit=L.CODE_X1 - L.CODE_X0 - 3,
    )
    p.text(
        L.NUMBER_X0 + 2.0, (L.NUMBER_Y0 + L.NUMBER_Y1) / 2, inv.number, 6.2, name="invoice_number"
    )
    p.text(L.REPEAT_X, 10.0, inv.code, 2.6)
    p.text(L.REPEAT_X, 14.0, inv.number, 2.6)
    # a 专票 has no check code: its machine number on that line (its label 机器编号 the form's)
    line, name = (inv.check_code_text, "check_code") if inv.check_code else (inv.machine_no, None)
    p.text(L.CHECK_X0 + 2.0, (L.CHECK_Y0 + L.CHECK_Y1) / 2, line, 3.8, name=name)
    p.text(L.DATE_X0 + 2.0, (L.DATE_Y0 + L.DATE_Y1) / 2, inv.date_text, 3.6, name="issue_date")


def _print_body(p: DataPrinter, inv: Invoice) -> None:
    """The parties, cipher text, items, totals, notes and footer."""
    # Buyer block and cipher text.
    value_fit = L.VALUE_X1 - L.VALUE_X0 - 3.0
    for i, (party, row) in enumerate(((inv.buyer, L.buyer_row), (inv.seller, L.seller_row))):
        prefix = "buyer" if i == 0 else "seller"
        values = (party.name, party.tax_id, party.address_phone, party.bank_account)
        sizes = (3.5, 3.9, 3.2, 3.2)
        names = (f"{prefix}_name", f"{prefix}_tax_id", None, None)
        for k, (value, size, name) in enumerate(zip(values, sizes, names, strict=True)):
            y0, y1 = row(k)
            p.text(L.VALUE_X0 + 1.5, (y0 + y1) / 2, value, size, name=name, fit=value_fit)
    for k, line in enumerate(inv.cipher):
        y0, y1 = L.buyer_row(k)
        p.text(L.SIDE_X0 + 2.0, (y0 + y1) / 2, line, 4.3, fit=L.SIDE_X1 - L.SIDE_X0 - 4)

    # Items.
    cols = L.ITEM_COLUMNS
    for k, item in enumerate(inv.items):
        y = L.ITEM_BODY_Y0 + 2.6 + 4.0 * k
        off = p.line_offset()
        size = 3.0
        p.text(
            cols[L.COL_NAME][1] + 1.0,
            y,
            item.name,
            size,
            fit=cols[L.COL_NAME][2] - cols[L.COL_NAME][1] - 1.5,
            offset=off,
        )
        p.text(
            cols[L.COL_SPEC][1] + 1.0,
            y,
            item.spec,
            size,
            fit=cols[L.COL_SPEC][2] - cols[L.COL_SPEC][1] - 2,
            offset=off,
        )
        p.text(
            (cols[L.COL_UNIT][1] + cols[L.COL_UNIT][2]) / 2,
            y,
            item.unit,
            size,
            align="centre",
            offset=off,
        )
        for col, value in (
            (L.COL_QTY, item.quantity),
            (L.COL_PRICE, item.unit_price),
            (L.COL_AMOUNT, f"{item.amount:.2f}"),
            (L.COL_TAX, item.tax_text),
        ):
            _, x0, x1 = cols[col]
            p.text(x1 - 1.0, y, value, size, align="right", fit=x1 - x0 - 2, offset=off)
        p.text(
            (cols[L.COL_RATE][1] + cols[L.COL_RATE][2]) / 2,
            y,
            item.rate_text,
            size,
            align="centre",
            offset=off,
        )

    # 合计, 价税合计.
    off = p.line_offset()
    sum_y = (L.SUM_Y0 + L.SUM_Y1) / 2
    p.text(
        cols[L.COL_AMOUNT][2] - 1.0,
        sum_y,
        f"¥{inv.amount:.2f}",
        3.4,
        align="right",
        name="amount",
        offset=off,
    )
    p.text(
        cols[L.COL_TAX][2] - 1.0,
        sum_y,
        printed_tax(inv),
        3.4,
        align="right",
        name="tax",
        offset=off,
    )
    off = p.line_offset()
    total_y = (L.TOTAL_Y0 + L.TOTAL_Y1) / 2
    p.text(
        L.WORDS_X0 + 2.0,
        total_y,
        "⊗" + inv.words,
        3.6,
        name="total_in_words",
        fit=L.WORDS_X1 - L.WORDS_X0 - 3,
        offset=off,
        latin="sans",
    )
    p.text(L.SMALL_X0 + 2.0, total_y, f"¥{inv.total:.2f}", 3.6, name="total", offset=off)

    # Notes and footer.
    if inv.remark:
        p.text(L.SIDE_X0 + 2.0, L.SELLER_Y0 + 3.2, inv.remark, 3.0, fit=L.SIDE_X1 - L.SIDE_X0 - 4)
    off = p.line_offset()
    foot_y = (L.FOOTER_Y0 + L.FOOTER_Y1) / 2
    for (label, x), value in zip(
        L.FOOTER_LABELS[:3], (inv.payee, inv.reviewer, inv.drawer), strict=True
    ):
        label_w = p.layer.text_width(label.replace(":", "："), 3.0, cjk="kai")
        p.text(x + label_w + 1.5, foot_y, value, 3.3, offset=off)


def _mottle(
    shape: tuple[int, int], rng: np.random.Generator, cell_px: float, low: float
) -> np.ndarray:
    """Smooth random factor in [low, 1] (uneven ink)."""
    h, w = shape
    small = rng.random((max(2, round(h / cell_px)), max(2, round(w / cell_px)))).astype(np.float32)
    return low + (1 - low) * cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC).clip(0, 1)


def _seller_stamp_position(rng: random.Random) -> tuple[float, float, str]:
    r = rng.random()
    if r < 0.55:
        return rng.uniform(160, 200), rng.uniform(107, 117), "notes"
    if r < 0.8:
        return rng.uniform(95, 128), rng.uniform(101, 112), "seller_values"
    return rng.uniform(182, 204), rng.uniform(117, 125), "footer"


def render_invoice(
    inv: Invoice,
    dpi: float,
    rng: random.Random,
    *,
    offset_mm: tuple[float, float] = (3.0, 1.2),
    form_ink: str = "brown",
    pins: Pins | None = None,
    electronic: bool = False,
    data_ink: tuple[int, int, int] | None = None,
) -> RenderedPage:
    """Render ``inv`` at ``dpi``; the data layer is offset by up to +-offset_mm (x, y); the form
    printed in ``form_ink`` (a key of :data:`~extractor.synth.form.FORM_INKS`); with ``pins``,
    the data printed dot by dot by that dot-matrix head instead of the seed's printer.
    ``electronic``: the 增值税电子普通发票 as its PDF shows it (the form and data drawn
    together, no offset, no tractor holes; its top band's values stacked at the right).
    ``data_ink``: the data printed in this ink (BGR) by the seed's dot-matrix head, as a
    multi-part form's copies under the first show it (blue or violet through carbon)."""
    nrng = np.random.default_rng(rng.getrandbits(64))
    printer = rng.choices(list(PRINTERS), weights=[w for _, w in PRINTERS.values()])[0]
    if pins is not None or data_ink is not None:
        printer = "dotmatrix"
    cjk = rng.choice(("ming", "ming", "hei"))
    dx = round(rng.uniform(-offset_mm[0], offset_mm[0]), 2)
    dy = round(rng.uniform(-offset_mm[1], offset_mm[1]), 2)
    if electronic:
        printer, dx, dy = "laser", 0.0, 0.0

    form = Layer(L.PAGE_W, L.PAGE_H, dpi)
    check_label = "校验码" if inv.check_code else "机器编号"
    draw_form(form, title=inv.title, electronic=electronic, check_label=check_label)

    monitor = Layer(L.PAGE_W, L.PAGE_H, dpi)
    region = inv.region
    bureau = (
        [("国家税务总局", 2.5, "mono"), (region.bureau, 2.5, "mono")]
        if (printed_year(inv.code) or 0) >= 2018
        else [(region.bureau.replace("税务局", "国家税务局"), 2.6, "mono")]
    )
    tile = oval_seal(
        15.0,
        10.5,
        dpi,
        arc_text="全国统一发票监制章",
        middle=bureau,
        bottom="",
        star=False,
        border=0.7,
    )
    mx, my = L.TITLE_CX + rng.uniform(-1, 1), 14.0 + rng.uniform(-0.8, 0.8)
    place(monitor, tile, mx, my, rng.uniform(-1.5, 1.5))

    data = Layer(L.PAGE_W, L.PAGE_H, dpi)
    boxes, qr_box = print_data(data, inv, rng, dx, dy, cjk, electronic)

    stamp = Layer(L.PAGE_W, L.PAGE_H, dpi)
    sx, sy, where = _seller_stamp_position(rng)
    s_angle = rng.uniform(-15, 15)
    s_strength = rng.uniform(0.6, 0.92)
    tile = invoice_seal(inv.seller.name, inv.seller.tax_id, dpi)
    place(stamp, tile, sx, sy, s_angle, s_strength)

    h, w = form.h, form.w
    base = (236 + rng.uniform(-4, 4), 244 + rng.uniform(-3, 3), 248 + rng.uniform(-3, 3))
    page = paper(h, w, nrng, (250.0, 250.0, 250.0) if electronic else base)
    data_alpha = data.alpha()
    ink = data_ink or PRINTERS[printer][0]
    if pins is not None:
        qr_alpha = _pin_printed_qr(inv.qr_payload, qr_box, form.ppm, dpi, pins, nrng)
        data_alpha = pin_print(data_alpha, form.ppm, pins, nrng)
        np.copyto(data_alpha, qr_alpha, where=qr_alpha >= 0)
    elif printer == "dotmatrix":
        data_alpha = cv2.GaussianBlur(data_alpha, (0, 0), 0.25 * form.ppm / 7.87)
        data_alpha *= _mottle((h, w), nrng, 0.8 * form.ppm, 0.72)
    stamp_alpha = stamp.alpha() * _mottle((h, w), nrng, 1.5 * form.ppm, 0.45)
    if electronic:  # no tractor strips
        perforation = holes = np.zeros((h, w), np.float32)
    else:
        perforation = perforation_layer(L.PAGE_W, L.PAGE_H, dpi).alpha()
        holes = hole_layer(L.PAGE_W, L.PAGE_H, dpi).alpha()
    image = compose(
        page,
        [
            (form.alpha(), FORM_INKS[form_ink]),
            (perforation, PERFORATION),
            (monitor.alpha() * 0.9, SEAL_RED),
            (np.clip(data_alpha, 0, 1), ink),
            (stamp_alpha, SEAL_RED),
        ],
    )
    info: dict[str, object] = {
        "dpi": dpi,
        "data_offset_mm": [dx, dy],
        "line_jitter_mm": list(LINE_JITTER_MM),
        "printer": printer if pins is None else f"dotmatrix, pins {pins}",
        "data_font": {"ming": "AR PL UMing CN", "hei": "WenQuanYi Zen Hei"}[cjk],
        "field_ink_boxes_mm": boxes,
        "qr_box_mm": qr_box,
        "monitor_seal": {"centre_mm": [round(mx, 2), round(my, 2)], "size_mm": [30.0, 21.0]},
        "seller_stamp": {
            "centre_mm": [round(sx, 2), round(sy, 2)],
            "size_mm": [40.0, 26.0],
            "angle_deg": round(s_angle, 2),
            "over": where,
        },
    }
    if data_ink is not None:
        info["data_ink_bgr"] = list(data_ink)
    return RenderedPage(to_uint8(image), holes, dpi, L.PAGE_W, L.PAGE_H, info)
