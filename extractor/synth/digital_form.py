"""The 数电票 drawn as a vector PDF page with a text layer (PyMuPDF), and its blank form.

Everything is drawn in millimetres through :class:`PdfPen`: ruled lines with ``draw_line`` /
``draw_rect``, text with ``insert_text`` in embedded TrueType fonts (the system's AR PL UMing /
UKai, WenQuanYi Zen Hei and DejaVu Sans Mono, subset when the document is saved), the QR code as
one filled vector path, the 监制章 as a transparent PNG. The form's lines and labels are
red-brown, the data black, placed exactly (no printer offset: the page is born digital).

Text and words: each label and each value is its own ``insert_text`` call. Within one value,
runs of Latin characters (digits, ¥, ⊗, Latin letters, see :data:`raster.LATIN`) are set in
DejaVu Sans Mono and the rest in the CJK font, as adjacent spans on one baseline, so
``page.get_text("words")`` returns each value as one word (names hold no spaces). Values start
2.8-3.4 mm right of their label, a gap MuPDF reads as a new line, so labels and values are
separate words too.
"""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path

import numpy as np
import pymupdf
import segno
from PIL import Image

from extractor.radicals import unify_radicals
from extractor.synth import digital_layout as D
from extractor.synth.fonts import font_path
from extractor.synth.form import save_reference
from extractor.synth.raster import CENTRE_ABOVE_BASELINE, TextBox, runs
from extractor.synth.seals import SEAL_RED, oval_seal
from extractor.templates import Template

PT_PER_MM = 72 / 25.4
FORM_RGB = (160, 64, 40)  # red-brown lines and labels
DATA_RGB = (0, 0, 0)
SEAL_RGB = (SEAL_RED[2], SEAL_RED[1], SEAL_RED[0])
LABEL_FONT = "ming"  # 宋体-like labels
TITLE_FONT = "kai"
SEAL_DPI = 200


@cache
def pdf_font(name: str) -> pymupdf.Font:
    """The PyMuPDF font for a :data:`fonts.FONTS` name (for measuring)."""
    return pymupdf.Font(fontfile=str(font_path(name)))


def _rgb(colour: tuple[int, int, int]) -> tuple[float, float, float]:
    return (colour[0] / 255, colour[1] / 255, colour[2] / 255)


def _pt(x: float, y: float) -> pymupdf.Point:
    return pymupdf.Point(x * PT_PER_MM, y * PT_PER_MM)


class PdfPen:
    """Draws on a PyMuPDF page in millimetres (origin at the top-left corner, y down)."""

    def __init__(
        self, page: pymupdf.Page, used: dict[str, set[str]] | None = None, overprint: float = 0.0
    ) -> None:
        self.page = page
        self._fonts: set[str] = set()
        self.used = used if used is not None else {}
        """Characters set in each font (shared by the pages of one document)."""
        self.overprint = overprint
        """mm: each run of text drawn twice more, this far to the right and this far down (bold
        made by overprinting, as some PDF writers make it)."""

    def _font(self, name: str) -> str:
        if name not in self._fonts:
            self.page.insert_font(fontname=name, fontfile=str(font_path(name)))
            self._fonts.add(name)
        return name

    # -- lines -----------------------------------------------------------------------------------

    def line(self, x0: float, y0: float, x1: float, y1: float, t: float, colour=FORM_RGB) -> None:
        self.page.draw_line(_pt(x0, y0), _pt(x1, y1), color=_rgb(colour), width=t * PT_PER_MM)

    def hline(self, y: float, x0: float, x1: float, t: float, colour=FORM_RGB) -> None:
        self.line(x0, y, x1, y, t, colour)

    def vline(self, x: float, y0: float, y1: float, t: float, colour=FORM_RGB) -> None:
        self.line(x, y0, x, y1, t, colour)

    def box(self, x0: float, y0: float, x1: float, y1: float, t: float, colour=FORM_RGB) -> None:
        rect = pymupdf.Rect(_pt(x0, y0), _pt(x1, y1))
        self.page.draw_rect(rect, color=_rgb(colour), width=t * PT_PER_MM)

    def cells(self, x0: float, y0: float, cell: float, mask: np.ndarray, colour=DATA_RGB) -> None:
        """The true cells of a boolean grid as one filled path (a QR code's modules)."""
        shape = self.page.new_shape()
        for r, row in enumerate(mask):
            c = 0
            n = len(row)
            while c < n:
                if not row[c]:
                    c += 1
                    continue
                start = c
                while c < n and row[c]:
                    c += 1
                top_left = _pt(x0 + start * cell, y0 + r * cell)
                shape.draw_rect(pymupdf.Rect(top_left, _pt(x0 + c * cell, y0 + (r + 1) * cell)))
        shape.finish(color=None, fill=_rgb(colour), width=0)
        shape.commit()

    def image(self, x0: float, y0: float, x1: float, y1: float, png: bytes) -> None:
        self.page.insert_image(pymupdf.Rect(_pt(x0, y0), _pt(x1, y1)), stream=png)

    # -- text ------------------------------------------------------------------------------------

    @staticmethod
    def text_width(text: str, size: float, cjk: str = "ming", latin: str = "mono") -> float:
        """Advance width (mm) of ``text`` at an em of ``size`` mm."""
        return sum(pdf_font(n).text_length(r, fontsize=size) for n, r in runs(text, cjk, latin))

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float,
        *,
        cjk: str = "ming",
        latin: str = "mono",
        align: str = "left",
        colour: tuple[int, int, int] = DATA_RGB,
        fit: float | None = None,
        spacing: float = 0.0,
        bold: float = 0.0,
    ) -> TextBox | None:
        """One line whose visual centre is at height ``y`` (mm); ``x`` is its left edge, centre
        or right edge for ``align`` left / centre / right. Shrinks to ``fit`` mm wide if given;
        ``spacing`` puts mm between characters (each then its own span); ``bold`` (a fraction of
        the em) strokes the glyphs as well. Returns the glyph box (advance x ascender..descender).
        """
        if not text:
            return None
        if fit is not None:
            width = self.text_width(text, size, cjk, latin)
            if width > fit:
                size *= fit / width
        pieces = runs(text, cjk, latin)
        if spacing:
            pieces = [(n, ch) for n, r in pieces for ch in r]
        widths = [pdf_font(n).text_length(r, fontsize=size) for n, r in pieces]
        total = sum(widths) + spacing * max(0, len(pieces) - 1)
        if align == "centre":
            x -= total / 2
        elif align == "right":
            x -= total
        baseline = y + CENTRE_ABOVE_BASELINE * size
        pen = x
        for (name, run), w in zip(pieces, widths, strict=True):
            if run.strip():
                self.used.setdefault(name, set()).update(run)
                shifts = ((0.0, 0.0), (self.overprint, 0.0), (0.0, self.overprint))
                for dx, dy in shifts if self.overprint else shifts[:1]:
                    self.page.insert_text(
                        _pt(pen + dx, baseline + dy),
                        run,
                        fontsize=size * PT_PER_MM,
                        fontname=self._font(name),
                        color=_rgb(colour),
                        fill=_rgb(colour),
                        render_mode=2 if bold else 0,
                        border_width=bold,
                    )
            pen += w + spacing
        asc = max(pdf_font(n).ascender for n, _ in pieces)
        desc = min(pdf_font(n).descender for n, _ in pieces)
        return TextBox(x, baseline - asc * size, x + total, baseline - desc * size)

    def vertical(self, cx: float, y0: float, y1: float, text: str, size: float) -> None:
        """Characters stacked one under another, spread over y0..y1 (the block headers)."""
        step = (y1 - y0) / len(text)
        for i, ch in enumerate(text):
            self.text(
                cx, y0 + step * (i + 0.5), ch, size, cjk=LABEL_FONT, align="centre", colour=FORM_RGB
            )


# -- the form ----------------------------------------------------------------------------------


def label(pen: PdfPen, x: float, y: float, text: str, size: float = D.LABEL_SIZE, **kw) -> None:
    pen.text(x, y, text, size, cjk=LABEL_FONT, latin=LABEL_FONT, colour=FORM_RGB, **kw)


def draw_form(pen: PdfPen, title: str = "电子发票（普通发票）") -> None:
    """The form's ruling and labels (red-brown)."""
    # Ruling.
    pen.box(D.FRAME_X0, D.FRAME_Y0, D.FRAME_X1, D.FRAME_Y1, D.FRAME_T)
    for y in (D.PARTY_Y1, D.ITEMS_Y1, D.TOTAL_Y1):
        pen.hline(y, D.FRAME_X0, D.FRAME_X1, D.RULE_T)
    for x in (D.BUYER_HEAD_X1, D.SELLER_HEAD_X0, D.SELLER_HEAD_X1):
        pen.vline(x, D.FRAME_Y0, D.PARTY_Y1, D.RULE_T)
    pen.vline(D.WORDS_LABEL_X1, D.ITEMS_Y1, D.TOTAL_Y1, D.RULE_T)
    pen.vline(D.BUYER_HEAD_X1, D.TOTAL_Y1, D.FRAME_Y1, D.RULE_T)

    # Block headers and party labels.
    head_size = 3.0
    for x0, x1, text in (
        (D.BUYER_HEAD_X0, D.BUYER_HEAD_X1, "购买方信息"),
        (D.SELLER_HEAD_X0, D.SELLER_HEAD_X1, "销售方信息"),
    ):
        pen.vertical((x0 + x1) / 2, D.FRAME_Y0 + 1.5, D.PARTY_Y1 - 1.5, text, head_size)
    head_cx = (D.BUYER_HEAD_X0 + D.BUYER_HEAD_X1) / 2
    pen.vertical(head_cx, D.TOTAL_Y1 + 3, D.FRAME_Y1 - 3, "备注", 3.0)
    for head_x1 in (D.BUYER_HEAD_X1, D.SELLER_HEAD_X1):
        label(pen, head_x1 + D.PARTY_LABEL_DX, D.NAME_Y, D.NAME_LABEL)
        label(pen, head_x1 + D.PARTY_LABEL_DX, D.TAX_ID_Y, D.TAX_ID_LABEL)

    # Item table header, 合计, 价税合计.
    for text, x0, x1 in D.ITEM_COLUMNS:
        label(pen, (x0 + x1) / 2, D.ITEM_HEAD_Y, text, align="centre")
    name_x0, name_x1 = D.ITEM_COLUMNS[D.COL_NAME][1:]
    label(pen, (name_x0 + name_x1) / 2, D.SUM_Y, "合计", align="centre", spacing=4.0)
    label(pen, (D.FRAME_X0 + D.WORDS_LABEL_X1) / 2, D.TOTAL_Y, "价税合计（大写）", align="centre")
    label(pen, D.SMALL_LABEL_X, D.TOTAL_Y, "（小写）")

    # Below the table and the top band.
    label(pen, D.DRAWER_LABEL_X, D.DRAWER_Y, "开票人：")
    label(pen, D.HEAD_LABEL_X, D.NUMBER_Y, "发票号码：", 3.0)
    label(pen, D.HEAD_LABEL_X, D.DATE_Y, "开票日期：", 3.0)
    pen.text(
        D.TITLE_CX,
        D.TITLE_Y,
        title,
        D.TITLE_SIZE,
        cjk=TITLE_FONT,
        latin=TITLE_FONT,
        align="centre",
        colour=FORM_RGB,
        fit=2 * D.TITLE_RULE_HALF + 4,  # 电子发票（增值税专用发票） stays clear of 发票号码
        bold=0.03,
    )
    for y, t in zip(D.TITLE_RULE_Y, (0.35, 0.2), strict=True):
        pen.hline(y, D.TITLE_CX - D.TITLE_RULE_HALF, D.TITLE_CX + D.TITLE_RULE_HALF, t)


@cache
def _radical_spellings() -> dict[int, int]:
    """Ideograph -> the radical (Kangxi Radicals, CJK Radicals Supplement) that stands for it."""
    spelled: dict[int, int] = {}
    for code in range(0x2E80, 0x2FE0):
        unified = unify_radicals(chr(code))
        if unified != chr(code):
            spelled.setdefault(ord(unified), code)
    return spelled


def _to_unicode_cmap(
    font: pymupdf.Font, chars: set[str], radicals: bool = False, mark: str = "⊗"
) -> bytes:
    """A ToUnicode CMap (Identity-H: code = glyph id) for ``chars`` only. ``radicals``: each
    ideograph that a radical stands for mapped to the radical, as producers do that write the
    map from a font's own character map, lowest code point first, in fonts that draw both with
    one glyph (一 reads as ⼀: :mod:`extractor.radicals`). ``mark``: what the circled cross
    before the amount in words is mapped to (fonts name that glyph ⊗, ⓧ or ⨂)."""
    spelled = dict(_radical_spellings()) if radicals else {}
    spelled[ord("⊗")] = ord(mark)
    pairs = sorted(
        {(gid, spelled.get(ord(c), ord(c))) for c in chars if (gid := font.has_glyph(ord(c)))}
    )
    lines = [
        "/CIDInit /ProcSet findresource begin",
        "12 dict begin",
        "begincmap",
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        "/CMapName /Adobe-Identity-UCS def",
        "/CMapType 2 def",
        "1 begincodespacerange",
        "<0000> <FFFF>",
        "endcodespacerange",
    ]
    for start in range(0, len(pairs), 100):
        chunk = pairs[start : start + 100]
        lines.append(f"{len(chunk)} beginbfchar")
        lines += [f"<{gid:04X}> <{code:04X}>" for gid, code in chunk]
        lines.append("endbfchar")
    lines += [
        "endcmap",
        "CMapName currentdict /CMap defineresource pop",
        "end",
        "end",
    ]
    return ("\n".join(lines) + "\n").encode("ascii")


def finish_pdf(
    doc: pymupdf.Document, used: dict[str, set[str]], radicals: bool = False, mark: str = "⊗"
) -> bytes:
    """Merge each page's content streams, subset the fonts, cut each font's ToUnicode map
    (PyMuPDF writes one for every glyph of the font) down to the characters set in it (spelled
    as radicals with ``radicals``, the words' mark as ``mark``: :func:`_to_unicode_cmap`), and
    save compressed, with no random file id."""
    for page in doc:
        page.clean_contents()
    doc.subset_fonts()
    done: set[int] = set()
    for pno in range(doc.page_count):
        for xref, _, _, _, resource, _ in doc.get_page_fonts(pno):
            kind, value = doc.xref_get_key(xref, "ToUnicode")
            if xref in done or kind != "xref" or resource not in used:
                continue
            done.add(xref)
            cmap_xref = int(value.split()[0])
            cmap = _to_unicode_cmap(pdf_font(resource), used[resource], radicals, mark)
            doc.update_stream(cmap_xref, cmap)
    return doc.tobytes(garbage=4, deflate=True, no_new_id=True)


def blank_form_pdf(title: str = "电子发票（普通发票）") -> bytes:
    """The blank form as a one-page PDF."""
    doc = pymupdf.open()
    page = doc.new_page(width=D.PAGE_W * PT_PER_MM, height=D.PAGE_H * PT_PER_MM)
    used: dict[str, set[str]] = {}
    draw_form(PdfPen(page, used), title)
    data = finish_pdf(doc, used)
    doc.close()
    return data


def render_pdf_page(page: pymupdf.Page, dpi: float) -> np.ndarray:
    """A PDF page as BGR uint8 at ``dpi``, exactly round(mm * dpi / 25.4) pixels each way."""
    ppm = dpi / 25.4
    w, h = round(page.rect.width / PT_PER_MM * ppm), round(page.rect.height / PT_PER_MM * ppm)
    zoom = dpi / 72
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
    rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[..., :3]
    out = np.full((h, w, 3), 255, np.uint8)
    ch, cw = min(h, pix.height), min(w, pix.width)
    out[:ch, :cw] = rgb[:ch, :cw, ::-1]
    return out


def render_blank_form(template: Template | None = None, dpi: float | None = None) -> np.ndarray:
    """The blank form (BGR uint8) at ``dpi`` (default: the template's registration dpi, 200)."""
    if template is not None and (template.page.width_mm, template.page.height_mm) != (
        D.PAGE_W,
        D.PAGE_H,
    ):
        raise ValueError(
            f"template {template.name!r} is {template.page.width_mm} x "
            f"{template.page.height_mm} mm; the digital form is {D.PAGE_W} x {D.PAGE_H} mm"
        )
    if dpi is None:
        dpi = template.registration.dpi if template is not None else 200
    with pymupdf.open(stream=blank_form_pdf(), filetype="pdf") as doc:
        return render_pdf_page(doc[0], dpi)


def write_reference(template: Template, out_path: str | Path | None = None) -> Path:
    """Write the digital template's reference image: the blank form at its registration dpi,
    palette-quantised to a small PNG."""
    return save_reference(render_blank_form(template), template, out_path)


# -- seal and QR --------------------------------------------------------------------------------


def monitor_seal_png(bureau: str) -> bytes:
    """The 全国统一发票监制章 as a red PNG with alpha (SEAL_DPI)."""
    tile = oval_seal(
        D.SEAL_RX,
        D.SEAL_RY,
        SEAL_DPI,
        arc_text="全国统一发票监制章",
        middle=[("国家税务总局", 2.3, "mono"), (bureau, 2.3, "mono")],
        bottom="",
        star=False,
        border=0.6,
    )
    alpha = np.clip(np.rint(tile * 0.9 * 255), 0, 255).astype(np.uint8)
    rgba = np.zeros((*alpha.shape, 4), np.uint8)
    rgba[..., :3] = SEAL_RGB
    rgba[..., 3] = alpha
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def seal_rect() -> tuple[float, float, float, float]:
    """Where the seal tile lands (mm): oval_seal pads the ellipse by 1 mm each side."""
    return (
        D.SEAL_CX - D.SEAL_RX - 1,
        D.SEAL_CY - D.SEAL_RY - 1,
        D.SEAL_CX + D.SEAL_RX + 1,
        D.SEAL_CY + D.SEAL_RY + 1,
    )


def qr_mask(payload: str) -> np.ndarray:
    qr = segno.make(payload, error="m", micro=False)
    return np.array([list(r) for r in qr.matrix_iter(scale=1, border=0)], dtype=bool)
