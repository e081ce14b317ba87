"""``python -m bench.received``: invoices as finance teams receive them, beyond scans.

Four kinds of document, each made fresh from seeds outside the fixtures and read with the
template picked per page (``auto``, the fallback on, as the service runs):

- ``screens``: a 数电票 PDF and a 增值税电子普通发票 shown in a PDF viewer and captured: the page
  at screen resolution (96, 110 and 130 dpi) on the viewer's grey with its toolbar, saved as
  PNG; or fitted to a phone's width at the same resolutions, white above and below, saved as
  the JPEG a chat app sends (quality 75). ``--dpi 72,80`` shows them zoomed out.
- ``carbon``: the national form as its copies show it, the data printed by a dot-matrix head
  through carbon in blue or violet (and in black, to compare), scanned at the light and medium
  levels and photographed at the geometry level.
- ``stack``: two clean scans laid in a stack, the top invoice whole and the one beneath showing
  past its edges, turned a few degrees: the top invoice's fields are counted, and the values
  of the one beneath that pass as valid are counted apart.
- ``merged``: 数电票 PDFs merged for printing, two to an A4 page (one above the other) or four
  (two by two, the page turned): the merged PDF itself (vector, its text layer kept, but the
  page no invoice's size) and its pages printed and scanned at 200 dpi. Each invoice is
  scored against the form read on its page that shares most of its fields.

Each row is a field-level tally (``extractor.evaluate.Tally``).

    python -m bench.received                 # every kind, ~9 minutes on one core
    python -m bench.received --kinds carbon
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping

import cv2
import numpy as np
import pymupdf

from extractor.evaluate import Tally
from extractor.pipeline import Extractor
from extractor.result import PageResult
from extractor.synth.digital import digital_pdf
from extractor.synth.digital_form import render_pdf_page
from extractor.synth.generate import make_document

SCREEN_SEEDS = range(20411000, 20411006)
CARBON_SEEDS = {
    "light": range(20269400, 20269410),
    "medium": range(20269300, 20269310),
    "geometry": range(20269500, 20269506),
}
STACK_SEEDS = range(20412000, 20412012)
INKS = {"blue": (160, 70, 85), "violet": (175, 90, 120), "black": (60, 42, 38)}  # BGR
VIEWER_GREY, TOOLBAR = (0x59, 0x56, 0x52), (0x32, 0x32, 0x32)
DESK = (90, 110, 130)

Case = tuple[bytes, Mapping[str, str]]  # an image and the fields it shows


def _row(name: str, tally: Tally) -> str:
    return (
        f"| {name} | {tally.exact}/{tally.fields} | {tally.right_flagged} | "
        f"{tally.wrong_flagged} | {tally.wrong_valid} | {tally.fallback} |"
    )


def _tally(extractor: Extractor, cases: Iterator[Case]) -> Tally:
    tally = Tally()
    for data, fields in cases:
        page = extractor.extract(data, "auto").pages[0]
        for field, expected in fields.items():
            tally.add(expected, page.fields.get(field))
    return tally


def _on_screen(page: np.ndarray, phone: bool) -> bytes:
    """``page`` (BGR, at screen resolution) as a desktop viewer (PNG) or a phone (JPEG 75)
    shows it."""
    h, w = page.shape[:2]
    if phone:
        screen = np.full((int(w * 2.1), w, 3), 245, np.uint8)  # portrait, the page at full width
        screen[:90] = 250
        screen[90:92] = 200
        top = (screen.shape[0] - h) // 2
        screen[top : top + h] = page
        return cv2.imencode(".jpg", screen, [cv2.IMWRITE_JPEG_QUALITY, 75])[1].tobytes()
    screen = np.full((h + 160, w + 400, 3), VIEWER_GREY, np.uint8)
    screen[:48] = TOOLBAR
    screen[100 : 100 + h, 200 : 200 + w] = page
    return cv2.imencode(".png", screen)[1].tobytes()


def _screens(phone: bool, dpi: int) -> Iterator[Case]:
    for seed in SCREEN_SEEDS:
        data, truth = digital_pdf([seed])
        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            shown = render_pdf_page(pdf[0], dpi)
        yield _on_screen(shown, phone), _fields(truth[0])
        doc = make_document(seed, "clean", dpi=dpi, electronic=True)
        yield _on_screen(doc.image, phone), _fields(doc.truth["pages"][0])  # type: ignore[index]


def _carbon(ink: tuple[int, int, int]) -> Iterator[Case]:
    for level, seeds in CARBON_SEEDS.items():
        for seed in seeds:
            doc = make_document(seed, level, data_ink=ink)
            yield doc.jpeg, _fields(doc.truth["pages"][0])  # type: ignore[index]


def _fields(page: object) -> Mapping[str, str]:
    return page["fields"]  # type: ignore[index,no-any-return]


def _stacked(seed: int) -> tuple[bytes, Mapping[str, str], Mapping[str, str]]:
    """Two clean scans in a stack, turned: the image, the top one's fields, the other's."""
    top, under = make_document(seed, "clean"), make_document(seed + 500, "clean")
    h, w = top.image.shape[:2]
    rng = np.random.default_rng(seed)
    dx = int(rng.uniform(-0.3, 0.3) * w)
    dy = int(rng.choice([-1, 1]) * rng.uniform(0.25, 0.6) * h)
    height, width = 2 * h + abs(dy), 2 * w
    desk = np.full((height, width, 3), DESK, np.uint8)
    x, y = w // 2, h // 2 + max(0, -dy)
    bh, bw = under.image.shape[:2]
    desk[y + dy : y + dy + bh, x + dx : x + dx + bw] = under.image
    desk[y : y + h, x : x + w] = top.image
    turn = cv2.getRotationMatrix2D((width / 2, height / 2), rng.uniform(-8, 8), 1.0)
    desk = cv2.warpAffine(desk, turn, (width, height), borderValue=DESK)
    jpeg = cv2.imencode(".jpg", desk, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
    return jpeg, _fields(top.truth["pages"][0]), _fields(under.truth["pages"][0])


def _stack_tally(extractor: Extractor) -> tuple[Tally, int]:
    """The top invoices' tally, and how many values of the ones beneath passed as valid."""
    tally, beneath = Tally(), 0
    for seed in STACK_SEEDS:
        jpeg, fields, under = _stacked(seed)
        pages: list[PageResult] = extractor.extract(jpeg, "auto").pages
        for field, expected in fields.items():
            tally.add(expected, pages[0].fields.get(field))
        beneath += sum(
            1
            for page in pages
            for name, got in page.fields.items()
            if got.valid and got.value and got.value == under.get(name) != fields.get(name)
        )
    return tally, beneath


MERGED_SEEDS = range(20413000, 20413008)
A4_PT = (595.28, 841.89)


def _merged(per_page: int) -> tuple[bytes, list[list[Mapping[str, str]]]]:
    """The invoices of :data:`MERGED_SEEDS` merged ``per_page`` (2 or 4) to an A4 page, and
    each page's invoices' fields."""
    merged, truth = pymupdf.open(), []
    seeds = list(MERGED_SEEDS)
    for first in range(0, len(seeds), per_page):
        if per_page == 2:
            page = merged.new_page(width=A4_PT[0], height=A4_PT[1])
            w, h = A4_PT[0], A4_PT[1] / 2
            cells = [pymupdf.Rect(0, k * h, w, (k + 1) * h) for k in range(2)]
        else:
            page = merged.new_page(width=A4_PT[1], height=A4_PT[0])
            w, h = A4_PT[1] / 2, A4_PT[0] / 2
            cells = [
                pymupdf.Rect(c * w, r * h, (c + 1) * w, (r + 1) * h) for r in (0, 1) for c in (0, 1)
            ]
        fields = []
        for cell, seed in zip(cells, seeds[first : first + per_page], strict=True):
            data, pages = digital_pdf([seed])
            with pymupdf.open(stream=data, filetype="pdf") as one:
                page.show_pdf_page(_inset(cell, 10), one, 0)
            fields.append(_fields(pages[0]))
        truth.append(fields)
    return merged.tobytes(), truth


def _inset(rect: pymupdf.Rect, by: float) -> pymupdf.Rect:
    return pymupdf.Rect(rect.x0 + by, rect.y0 + by, rect.x1 - by, rect.y1 - by)


def _score_forms(tally: Tally, forms: list[PageResult], invoices: list[Mapping[str, str]]) -> None:
    for fields in invoices:
        best = max(
            forms,
            key=lambda form: sum(
                (got := form.fields.get(name)) is not None and got.value == value
                for name, value in fields.items()
            ),
            default=None,
        )
        for name, expected in fields.items():
            tally.add(expected, best.fields.get(name) if best is not None else None)


def _merged_tallies(extractor: Extractor, per_page: int) -> tuple[Tally, Tally]:
    """The merged PDF's tally, and its pages' printed and scanned at 200 dpi."""
    pdf, truth = _merged(per_page)
    as_pdf, scanned = Tally(), Tally()
    pages = extractor.extract(pdf, "auto").pages
    for number, invoices in enumerate(truth, start=1):
        _score_forms(as_pdf, [p for p in pages if p.page == number], invoices)
    with pymupdf.open(stream=pdf, filetype="pdf") as merged:
        for page, invoices in zip(merged, truth, strict=True):
            printed = render_pdf_page(page, 200)
            scan = cv2.imencode(".jpg", printed, [cv2.IMWRITE_JPEG_QUALITY, 85])[1]
            _score_forms(scanned, extractor.extract(scan.tobytes(), "auto").pages, invoices)
    return as_pdf, scanned


KINDS = ("screens", "carbon", "stack", "merged")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--dpi", default="96,110,130", help="screen resolutions (screens)")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if unknown := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown kind(s) {', '.join(unknown)}: one of {', '.join(KINDS)}")
    extractor = Extractor(threads=1)
    print("| images | fields right | right but flagged | wrong and flagged | wrong but valid | "
          "from the fallback |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    if "screens" in kinds:
        for phone in (False, True):
            for dpi in (int(d) for d in args.dpi.split(",")):
                name = f"screens: {'a phone, JPEG 75' if phone else 'a desktop viewer, PNG'}"
                tally = _tally(extractor, _screens(phone, dpi))
                print(_row(f"{name}, {dpi} dpi", tally), flush=True)
    if "carbon" in kinds:
        for ink, bgr in INKS.items():
            print(_row(f"carbon: data in {ink}", _tally(extractor, _carbon(bgr))), flush=True)
    if "stack" in kinds:
        tally, beneath = _stack_tally(extractor)
        print(_row("stack: the top invoice", tally), flush=True)
    if "merged" in kinds:
        for per_page in (2, 4):
            as_pdf, scanned = _merged_tallies(extractor, per_page)
            print(_row(f"merged: {per_page} to an A4 page, the PDF", as_pdf))
            print(_row(f"merged: {per_page} to an A4 page, printed and scanned", scanned))
    if "stack" in kinds:
        print(f"\nvalues of the invoice beneath a stack's top one passed as valid: {beneath}")


if __name__ == "__main__":
    main()
