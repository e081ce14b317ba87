"""Fully digital invoices (数电票, template ``vat_invoice_digital``) with ground truth: born-digital
PDFs with a text layer, the same pages printed and scanned, and a scan wrapped in a PDF.

All deterministic from the seed: the content of document ``seed`` is
``make_digital_invoice(random.Random(f"digital:{seed}"))``, its data font is drawn from
``random.Random(f"render:{seed}")``, its print on paper from ``f"print:{seed}"``, its scan from
``f"scan:{seed}:{level}"`` (the classic generator's :func:`degrade`).

* ``digital_pdf(seeds) -> (pdf bytes, pages)``: one page per seed, vector, with a text layer.
* ``make_digital_document(seed, level, dpi=None) -> Document``: the page printed and scanned.
* ``generate_digital_invoice(seed, level) -> (image, truth)``.
* ``write_digital_set(out_dir, seed=2026, counts=None)``: ``pdf/`` (born-digital PDFs, one of
  them two pages) and ``scans/`` (JPEG scans at clean/light/medium and one image-only PDF).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pymupdf

from extractor.synth import digital_layout as D
from extractor.synth.content import Party, as_red_letter, as_tax_exempt, printed_tax
from extractor.synth.degrade import Scan
from extractor.synth.digital_content import DigitalInvoice, make_digital_invoice
from extractor.synth.digital_form import (
    PT_PER_MM,
    PdfPen,
    draw_form,
    finish_pdf,
    monitor_seal_png,
    qr_mask,
    render_pdf_page,
    seal_rect,
)
from extractor.synth.generate import Document, truth_json, write_pdf
from extractor.synth.ofd import ofd_from_pdf
from extractor.synth.pages import A4_H, A4_W, letter, letter_layout
from extractor.synth.raster import TextBox, to_uint8
from extractor.synth.render import RenderedPage, paper
from extractor.synth.sheet import degrade_on

TEMPLATE = "vat_invoice_digital"
PDF_LEVEL = "digital_pdf"
SCAN_LEVELS = ("clean", "light", "medium")
CLEAN_DPI = 200
SCAN_DPI_CHOICES = (150, 150, 180)  # light / medium (small files: the fixture set is capped)
DATA_FONTS = {"ming": "AR PL UMing CN", "hei": "WenQuanYi Zen Hei"}
# What write_digital_set writes by default: single-page PDFs, two-page PDFs, scans per level,
# scans wrapped in an image-only PDF, OFD packages.
DEFAULT_DIGITAL_COUNTS = {
    "pdf": 3,
    "pdf_2page": 1,
    "clean": 2,
    "light": 2,
    "medium": 2,
    "image_pdf": 1,
    "ofd": 2,
}
OFD_LEVEL = "digital_ofd"


def content(seed: int, red_letter: bool = False, tax_exempt: bool = False) -> DigitalInvoice:
    inv = make_digital_invoice(random.Random(f"digital:{seed}"))
    inv = as_tax_exempt(inv) if tax_exempt else inv
    return as_red_letter(inv) if red_letter else inv


def data_font(seed: int) -> str:
    return random.Random(f"render:{seed}").choice(("ming", "ming", "hei"))


# -- drawing ------------------------------------------------------------------------------------


def draw_data(pen: PdfPen, inv: DigitalInvoice, cjk: str) -> dict[str, list[float]]:
    """Print every value of ``inv`` (black, exactly placed); returns the fields' text boxes."""
    boxes: dict[str, list[float]] = {}

    def put(name: str, box: TextBox | None) -> None:
        if box is not None:
            boxes[name] = box.as_xywh()

    def value(x: float, y: float, text: str, size: float = D.VALUE_SIZE, **kw) -> TextBox | None:
        return pen.text(x, y, text, size, cjk=cjk, **kw)

    mask = qr_mask(inv.qr_payload)
    pen.cells(D.QR_X0, D.QR_Y0, D.QR_SIZE / mask.shape[0], mask)

    put("invoice_number", value(D.HEAD_VALUE_X, D.NUMBER_Y, inv.number))
    put("issue_date", value(D.HEAD_VALUE_X, D.DATE_Y, inv.date_text))
    for prefix, party, head_x1, x_end in (
        ("buyer", inv.buyer, D.BUYER_HEAD_X1, D.SELLER_HEAD_X0),
        ("seller", inv.seller, D.SELLER_HEAD_X1, D.FRAME_X1),
    ):
        x = head_x1 + D.NAME_VALUE_DX
        put(f"{prefix}_name", value(x, D.NAME_Y, party.name, fit=x_end - 1.5 - x))
        x = head_x1 + D.TAX_ID_VALUE_DX
        put(f"{prefix}_tax_id", value(x, D.TAX_ID_Y, party.tax_id, fit=x_end - 1.5 - x))

    cols = D.ITEM_COLUMNS
    size = D.ITEM_SIZE
    for k, item in enumerate(inv.items[: D.MAX_ITEMS]):
        y = D.item_y(k)
        _, x0, x1 = cols[D.COL_NAME]
        value(x0 + 1.0, y, item.name, size, fit=x1 - x0 - 1.5)
        _, x0, x1 = cols[D.COL_SPEC]
        value(x0 + 1.0, y, item.spec, size, fit=x1 - x0 - 2.0)
        _, x0, x1 = cols[D.COL_UNIT]
        value((x0 + x1) / 2, y, item.unit, size, align="centre")
        for col, text in (
            (D.COL_QTY, item.quantity),
            (D.COL_PRICE, item.unit_price),
            (D.COL_AMOUNT, f"{item.amount:.2f}"),
            (D.COL_TAX, item.tax_text),
        ):
            _, x0, x1 = cols[col]
            value(x1 - 0.5, y, text, size, align="right", fit=x1 - x0 - 2.0)
        _, x0, x1 = cols[D.COL_RATE]
        value((x0 + x1) / 2, y, item.rate_text, size, align="centre")

    put("amount", value(cols[D.COL_AMOUNT][2] - 0.5, D.SUM_Y, f"¥{inv.amount:.2f}", align="right"))
    put("tax", value(cols[D.COL_TAX][2] - 0.5, D.SUM_Y, printed_tax(inv), align="right"))
    put(
        "total_in_words",
        value(D.WORDS_X, D.TOTAL_Y, "⊗" + inv.words, 3.4, fit=D.SMALL_LABEL_X - 6 - D.WORDS_X),
    )
    put("total", value(D.SMALL_VALUE_X, D.TOTAL_Y, f"¥{inv.total:.2f}"))

    if inv.remark:
        value(D.REMARK_X, D.REMARK_Y, inv.remark, size, fit=D.FRAME_X1 - D.REMARK_X - 2)
    drawer_x = D.DRAWER_LABEL_X + pen.text_width("开票人：", D.LABEL_SIZE, "ming", "ming") + 3.0
    value(drawer_x, D.DRAWER_Y, inv.drawer)
    return boxes


def draw_invoice_page(
    doc: pymupdf.Document,
    inv: DigitalInvoice,
    cjk: str,
    used: dict[str, set[str]],
    overprint: float = 0.0,
) -> dict[str, object]:
    """Add ``inv`` as a new page of ``doc``; returns what was printed where (the truth's print).
    ``used`` collects the characters set in each font; ``overprint``: :attr:`PdfPen.overprint`."""
    page = doc.new_page(width=D.PAGE_W * PT_PER_MM, height=D.PAGE_H * PT_PER_MM)
    pen = PdfPen(page, used, overprint)
    pen.image(*seal_rect(), monitor_seal_png(inv.region.bureau))
    draw_form(pen, inv.title)
    boxes = draw_data(pen, inv, cjk)
    return {
        "kind": "born_digital_pdf",
        "page_size_mm": [D.PAGE_W, D.PAGE_H],
        "data_font": DATA_FONTS[cjk],
        "latin_font": "DejaVu Sans Mono",
        "field_text_boxes_mm": boxes,
        "qr_box_mm": [D.QR_X0, D.QR_Y0, D.QR_SIZE, D.QR_SIZE],
        "monitor_seal": {
            "centre_mm": [D.SEAL_CX, D.SEAL_CY],
            "size_mm": [2 * D.SEAL_RX, 2 * D.SEAL_RY],
        },
    }


def draw_letter_page(doc: pymupdf.Document, seed: int, used: dict[str, set[str]]) -> str:
    """Add the cover letter of ``seed`` (:func:`~extractor.synth.pages.letter`) as a new A4
    page of ``doc``, typed: its text is the page's text layer, no form. Returns its title."""
    said, _, _ = letter(seed)
    page = doc.new_page(width=A4_W * PT_PER_MM, height=A4_H * PT_PER_MM)
    pen = PdfPen(page, used)
    for line in letter_layout(said, pen)[0]:
        pen.text(
            line.x, line.y, line.text, line.size, cjk=line.cjk, align=line.align, colour=(0, 0, 0)
        )
    return said.title


def digital_pdf(
    seeds: list[int],
    title: str = "",
    *,
    radicals: bool = False,
    letter_at: int | None = None,
    overprinted: bool = False,
    red_letter: bool = False,
    buyer: Party | None = None,
    tax_exempt: bool = False,
    words_mark: str = "⊗",
) -> tuple[bytes, list[dict[str, object]]]:
    """A born-digital PDF with one invoice page per seed, and each page's truth entry.
    ``radicals``: its text layer spells ideographs as the radicals the fonts draw with the same
    glyph (一 as ⼀, 长 as ⻓), as many issuing systems' PDFs do (:mod:`extractor.radicals`).
    ``letter_at``: a typed cover letter (no invoice, no fields) is page ``letter_at``, as a
    company's PDF of invoices and their covering letter has it. ``overprinted``: every text
    drawn three times, 0.1 mm apart (bold by overprinting: the text layer holds each line
    three times over). ``red_letter``: each invoice the red-letter one that cancels the seed's
    (:func:`~extractor.synth.content.as_red_letter`). ``buyer``: each invoice's buyer instead
    of the seed's (a person: a name and nothing else). ``tax_exempt``: each sale exempt from
    tax (:func:`~extractor.synth.content.as_tax_exempt`). ``words_mark``: the character the
    text layer gives the circled cross printed before the amount in words (its glyph is drawn
    as ever: fonts name it ⊗, ⓧ or ⨂)."""
    doc = pymupdf.open()
    pages: list[dict[str, object]] = []
    used: dict[str, set[str]] = {}
    for seed in seeds:
        if len(pages) == letter_at:
            said = draw_letter_page(doc, seed, used)
            pages.append(
                {
                    "page": len(pages),
                    "template": None,
                    "fields": {},
                    "kind": "cover_letter",
                    "title": said,
                }
            )
        inv = content(seed, red_letter, tax_exempt)
        if buyer is not None:
            inv = replace(inv, buyer=buyer)
        info = draw_invoice_page(doc, inv, data_font(seed), used, 0.1 if overprinted else 0.0)
        pages.append(
            {
                "page": len(pages),
                "template": TEMPLATE,
                "seed": seed,
                "fields": inv.fields(),
                "print": info,
                "extra": inv.extra(),
            }
        )
    stamp = "D:" + content(seeds[0]).issue_date.strftime("%Y%m%d") + "120000+08'00'"
    doc.set_metadata(
        {
            "title": title or f"数电票 {content(seeds[0]).number}",
            "producer": "roi synth",
            "creator": "roi synth",
            "creationDate": stamp,
            "modDate": stamp,
        }
    )
    data = finish_pdf(doc, used, radicals, words_mark)
    doc.close()
    return data, pages


# -- printed and scanned ------------------------------------------------------------------------


def dpi_for(seed: int, level: str) -> int:
    if level == "clean":
        return CLEAN_DPI
    return random.Random(f"dpi:{seed}:{level}").choice(SCAN_DPI_CHOICES)


def printed_page(
    seed: int,
    dpi: float,
    red_letter: bool = False,
    tax_exempt: bool = False,
    buyer: Party | None = None,
) -> tuple[RenderedPage, dict[str, object]]:
    """The invoice of ``seed`` printed (by a laser printer) on white office paper."""
    data, pages = digital_pdf([seed], red_letter=red_letter, tax_exempt=tax_exempt, buyer=buyer)
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        image = render_pdf_page(doc[0], dpi)
    rng = random.Random(f"print:{seed}")
    nrng = np.random.default_rng(rng.getrandbits(64))
    h, w = image.shape[:2]
    base = (238 + rng.uniform(-4, 4), 243 + rng.uniform(-3, 3), 246 + rng.uniform(-3, 3))
    sheet = paper(h, w, nrng, base)
    printed = to_uint8(sheet * (image.astype(np.float32) / 255))
    page = RenderedPage(
        printed,
        np.zeros((h, w), np.float32),
        dpi,
        D.PAGE_W,
        D.PAGE_H,
        {**pages[0]["print"], "kind": "printed_born_digital_pdf"},  # type: ignore[dict-item]
    )
    return page, pages[0]


def _degradations(scan: Scan, dpi: float) -> dict[str, object]:
    out: dict[str, object] = {"dpi": dpi, **scan.params}
    h, w = scan.image.shape[:2]
    out["image_size_px"] = [w, h]
    out["page_to_image"] = [[round(float(v), 6) for v in row] for row in scan.page_to_image]
    return out


def make_digital_document(
    seed: int,
    level: str,
    dpi: float | None = None,
    red_letter: bool = False,
    tax_exempt: bool = False,
    buyer: Party | None = None,
    a4: bool = False,
) -> Document:
    """The 数电票 of ``seed`` printed and scanned at ``level`` (clean, light, medium, heavy);
    ``red_letter``: the red-letter invoice that cancels it; ``tax_exempt``: the sale exempt
    from tax; ``buyer``: the buyer instead of the seed's; ``a4``: printed at the top of an A4
    sheet, the sheet scanned or photographed whole (:func:`~extractor.synth.sheet.on_a4`)."""
    dpi = dpi if dpi is not None else dpi_for(seed, level)
    page, entry = printed_page(seed, dpi, red_letter, tax_exempt, buyer)
    scan = degrade_on(page, level, random.Random(f"scan:{seed}:{level}"), a4)
    truth: dict[str, object] = {
        "template": TEMPLATE,
        "seed": seed,
        "level": level,
        "degradations": _degradations(scan, dpi),
        "pages": [
            {
                "page": 0,
                "template": TEMPLATE,
                "fields": entry["fields"],
                "print": page.info,
                "extra": entry["extra"],
            }
        ],
    }
    return Document(scan.image, scan.jpeg, truth, dpi)


def generate_digital_invoice(seed: int, level: str) -> tuple[np.ndarray, dict[str, object]]:
    """A scanned 数电票 (BGR uint8) and its ground truth. Same arguments, same pixels."""
    doc = make_digital_document(seed, level)
    return doc.image, doc.truth


# -- the fixture set ----------------------------------------------------------------------------


def digital_seed(base_seed: int, number: int) -> int:
    """Seed of digital document ``number``: apart from the classic set's ``seed * 10000 + n``."""
    return base_seed * 10000 + 5000 + number


def _write(path: Path, data: bytes, truth: dict[str, object]) -> list[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    truth_path = path.with_suffix(".json")
    truth_path.write_text(truth_json({"file": path.name, **truth}), encoding="utf-8")
    return [path, truth_path]


def _born_digital_truth(
    seed: int, level: str, degradations: dict[str, object], pages: list[dict[str, object]]
) -> dict[str, object]:
    """The truth of a born-digital document (a PDF, or that PDF as OFD): no scan went on."""
    return {
        "template": TEMPLATE,
        "seed": seed,
        "level": level,
        "degradations": degradations,
        "pages": pages,
    }


def write_digital_set(
    out_dir: Path, seed: int = 2026, counts: dict[str, int] | None = None
) -> list[Path]:
    """Write ``out_dir/pdf/``, ``out_dir/scans/`` and ``out_dir/ofd/``; returns the paths
    written.

    Files are ``vat_invoice_digital_NNNN.{pdf,jpg,ofd}`` + ``.json``, numbered across the set;
    document ``n`` has seed ``seed * 10000 + 5000 + n`` (the pages of a two-page PDF
    ``seed * 10 + i``). ``counts`` keys: pdf, pdf_2page, clean, light, medium, image_pdf, ofd
    (the invoice's PDF written as OFD: :func:`~extractor.synth.ofd.ofd_from_pdf`, every second
    one with its text objects scaled by their CTM).
    """
    counts = {**DEFAULT_DIGITAL_COUNTS, **(counts or {})}
    out_dir = Path(out_dir)
    written: list[Path] = []
    number = 0
    for pages in [1] * counts.get("pdf", 0) + [2] * counts.get("pdf_2page", 0):
        number += 1
        doc_seed = digital_seed(seed, number)
        seeds = [doc_seed] if pages == 1 else [doc_seed * 10 + i for i in range(pages)]
        data, entries = digital_pdf(seeds)
        truth = _born_digital_truth(doc_seed, PDF_LEVEL, {}, entries)
        written += _write(out_dir / "pdf" / f"{TEMPLATE}_{number:04d}.pdf", data, truth)
    for level in SCAN_LEVELS:
        for _ in range(counts.get(level, 0)):
            number += 1
            doc = make_digital_document(digital_seed(seed, number), level)
            path = out_dir / "scans" / f"{TEMPLATE}_{number:04d}.jpg"
            written += _write(path, doc.jpeg, doc.truth)
    for _ in range(counts.get("image_pdf", 0)):
        number += 1
        doc = make_digital_document(digital_seed(seed, number), "light")
        path = out_dir / "scans" / f"{TEMPLATE}_{number:04d}.pdf"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_pdf([doc], path)
        truth_path = path.with_suffix(".json")
        truth_path.write_text(
            truth_json({"file": path.name, **doc.truth, "kind": "image_only_pdf"}),
            encoding="utf-8",
        )
        written += [path, truth_path]
    for i in range(counts.get("ofd", 0)):
        number += 1
        doc_seed = digital_seed(seed, number)
        data, entries = digital_pdf([doc_seed])
        truth = _born_digital_truth(doc_seed, OFD_LEVEL, {"ctm": i % 2 == 1}, entries)
        ofd = ofd_from_pdf(data, ctm=i % 2 == 1)
        written += _write(out_dir / "ofd" / f"{TEMPLATE}_{number:04d}.ofd", ofd, truth)
    return written
