import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest

from extractor.errors import (
    CorruptInputError,
    InputError,
    TooLargeInputError,
    UnsupportedInputError,
)
from extractor.loading import iter_pages, read_source, sniff


def _png(h: int = 40, w: int = 60) -> bytes:
    return cv2.imencode(".png", np.full((h, w, 3), 200, np.uint8))[1].tobytes()


def _pdf(pages: int) -> bytes:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page(width=300, height=200).insert_text((20, 40), f"page {i}")
    return doc.tobytes()


def test_type_comes_from_content() -> None:
    assert sniff(_png()) == "png"
    assert sniff(_pdf(1)) == "pdf"
    with pytest.raises(UnsupportedInputError):
        sniff(b"hello, I am a text file named invoice.png")
    with pytest.raises(CorruptInputError, match="empty"):
        sniff(b"")


LEAN_IMPORT = """
import importlib.util, sys
from pathlib import Path
from extractor.loading import PYMUPDF_EXTRAS, iter_pages
pages = list(iter_pages(Path(sys.argv[1]).read_bytes()))
print(len(pages), *sorted(name for name in PYMUPDF_EXTRAS if name in sys.modules))
if importlib.util.find_spec("pymupdf.layout"):  # PyMuPDF 2: still there for whoever asks
    import pymupdf, pymupdf.layout
    print("layout", callable(pymupdf._get_layout))
"""


def test_reading_a_pdf_leaves_pymupdfs_layout_extras_unimported(tmp_path: Path) -> None:
    """PyMuPDF 2 imports a layout-analysis model with itself; a worker reading PDFs does not
    load it (a fresh process: the tests' own ``import pymupdf`` loaded everything here)."""
    path = tmp_path / "two.pdf"
    path.write_bytes(_pdf(2))
    out = subprocess.run(
        [sys.executable, "-c", LEAN_IMPORT, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[1],
    ).stdout.split("\n")
    assert out[0] == "2"  # both pages read, no extra imported
    assert out[1] in ("layout True", "")


def test_pdf_pages_render_at_dpi_and_select() -> None:
    pages = list(iter_pages(_pdf(3), dpi=144, pages={0, 2}))
    assert [p.index for p in pages] == [0, 2]
    assert pages[0].image.shape == (400, 600, 3)


def test_truncated_inputs_are_corrupt() -> None:
    with pytest.raises(CorruptInputError):
        list(iter_pages(_pdf(2)[:200]))
    with pytest.raises(CorruptInputError):
        list(iter_pages(_png()[:30]))


def test_multipage_tiff() -> None:
    frames = [np.full((30, 50, 3), v, np.uint8) for v in (10, 200)]
    ok, buf = cv2.imencodemulti(".tiff", frames)
    assert ok
    pages = list(iter_pages(buf.tobytes()))
    assert len(pages) == 2 and pages[1].image.mean() > 150


def test_pixel_limit_checked_from_header() -> None:
    data = bytearray(_png())
    data[16:20] = (60000).to_bytes(4, "big")
    data[20:24] = (60000).to_bytes(4, "big")
    with pytest.raises(TooLargeInputError):
        list(iter_pages(bytes(data)))


def test_missing_file(tmp_path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_source(tmp_path / "nope.pdf")


def test_a_pdf_page_with_a_text_layer_is_rendered_only_when_its_image_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import extractor.loading as loading

    rendered: list[int] = []
    real = loading._render
    monkeypatch.setattr(loading, "_render", lambda *a: rendered.append(a[1]) or real(*a))
    doc = pymupdf.open()
    doc.new_page(width=300, height=200).insert_text((20, 40), "one two three four five six")
    doc.new_page(width=300, height=200).insert_text((20, 40), "scan")  # no usable text layer
    pages = list(iter_pages(doc.tobytes(), dpi=144))  # the loader has closed its document
    assert [p.words is not None for p in pages] == [True, False]
    assert rendered == [1]  # the page without words was rendered by the loader
    image = pages[0].image
    assert image.shape == (400, 600, 3) and image.min() < 100  # its words, drawn
    assert pages[0].image is image and rendered == [1, 0]  # once


# -- scanned PDF pages: the embedded image, not a render ------------------------------------------


def _scan_image(w: int = 480, h: int = 300) -> np.ndarray:
    """An asymmetric page: a turned or mirrored copy of it differs from it everywhere."""
    image = np.full((h, w, 3), 235, np.uint8)
    cv2.rectangle(image, (20, 20), (w - 40, h - 60), (40, 40, 40), 3)
    cv2.putText(image, "INV 0123", (40, 90), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (20, 20, 120), 4)
    cv2.circle(image, (w - 90, h - 110), 30, (30, 30, 200), -1)
    return image


def _scan_pdf(
    image: np.ndarray, *, rotate: int = 0, page_rotation: int = 0, dpi: float = 100.0
) -> bytes:
    h, w = image.shape[:2]
    if rotate in (90, 270):
        w, h = h, w
    doc = pymupdf.open()
    page = doc.new_page(width=w / dpi * 72, height=h / dpi * 72)
    jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
    page.insert_image(page.rect, stream=jpeg, rotate=rotate)
    page.set_rotation(page_rotation)
    return doc.tobytes()


def _rendered(data: bytes, dpi: int) -> np.ndarray:
    page = pymupdf.open(stream=data, filetype="pdf")[0]
    pix = page.get_pixmap(matrix=pymupdf.Matrix(dpi / 72, dpi / 72), alpha=False)
    rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)


def _no_render(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    import extractor.loading as loading

    rendered: list[int] = []
    real = loading._render
    monkeypatch.setattr(loading, "_render", lambda *a: rendered.append(a[1]) or real(*a))
    return rendered


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def _as_rendered(image: np.ndarray, rendered: np.ndarray) -> np.ndarray:
    return cv2.resize(image, rendered.shape[1::-1], interpolation=cv2.INTER_AREA)


@pytest.mark.parametrize(
    ("rotate", "page_rotation"), [(0, 0), (90, 0), (0, 90), (270, 90), (180, 270)]
)
def test_a_scanned_pdf_page_is_its_embedded_image_as_the_page_shows_it(
    monkeypatch: pytest.MonkeyPatch, rotate: int, page_rotation: int
) -> None:
    data = _scan_pdf(_scan_image(), rotate=rotate, page_rotation=page_rotation, dpi=100)
    rendered = _no_render(monkeypatch)
    (page,) = iter_pages(data, dpi=150)
    assert rendered == []  # decoded, at the scan's own 100 dpi
    assert page.dpi == pytest.approx(100, rel=0.01)
    expected = _rendered(data, 150)
    shown = _as_rendered(page.image, expected)
    assert _difference(shown, expected) < 3
    for wrong in (shown[::-1], shown[:, ::-1]):  # what a missed turn or mirror would give
        assert _difference(np.ascontiguousarray(wrong), expected) > 10


@pytest.mark.parametrize("kind", [".jpg", ".png"])
def test_a_scan_reads_the_same_from_an_image_file_and_from_a_pdf(kind: str) -> None:
    scan = cv2.imencode(kind, _scan_image())[1].tobytes()  # a PNG is kept as a Flate image
    doc = pymupdf.open()
    doc.new_page(width=480 / 150 * 72, height=300 / 150 * 72).insert_image(
        pymupdf.Rect(0, 0, 480 / 150 * 72, 300 / 150 * 72), stream=scan
    )
    (from_pdf,) = iter_pages(doc.tobytes(), dpi=200)
    (from_file,) = iter_pages(scan)
    assert np.array_equal(from_pdf.image, from_file.image)  # not resampled to 200 dpi
    assert from_pdf.dpi == pytest.approx(150)


def test_a_mirrored_scan_is_mirrored_back(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = pymupdf.open(stream=_scan_pdf(_scan_image()), filetype="pdf")
    page = doc[0]
    w, h = page.rect.width, page.rect.height
    (xref,) = page.get_contents()
    name = doc.xref_stream(xref).split(b"/")[1].split()[0].decode()
    doc.update_stream(xref, f"q {-w} 0 0 {h} {w} 0 cm /{name} Do Q".encode())
    data = doc.tobytes()
    rendered = _no_render(monkeypatch)
    (loaded,) = iter_pages(data, dpi=100)
    assert rendered == []
    assert _difference(loaded.image, _rendered(data, 100)) < 3


def test_a_large_scan_is_decoded_reduced_towards_the_loaders_dpi(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = cv2.resize(_scan_image(), None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC)
    data = _scan_pdf(big, dpi=400)  # a 400 dpi scan read at 100 dpi: decoded at 1/4
    decoded: list[int] = []
    real = cv2.imdecode
    monkeypatch.setattr(cv2, "imdecode", lambda buf, f: decoded.append(f) or real(buf, f))
    (page,) = iter_pages(data, dpi=100)
    assert decoded and decoded[0] & cv2.IMREAD_REDUCED_COLOR_4 == cv2.IMREAD_REDUCED_COLOR_4
    assert page.image.shape == (300, 480, 3) and page.dpi == pytest.approx(100)
    assert _difference(page.image, _rendered(data, 100)) < 3
    (at_150,) = iter_pages(data, dpi=150)  # 1/2, 200 dpi: never below the loader's dpi
    assert at_150.image.shape == (600, 960, 3)


def test_a_scan_with_anything_drawn_over_it_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = pymupdf.open(stream=_scan_pdf(_scan_image()), filetype="pdf")
    doc[0].draw_rect(pymupdf.Rect(10, 10, 60, 40), color=(1, 0, 0), width=2)  # a stamp, say
    annotated = pymupdf.open(stream=_scan_pdf(_scan_image()), filetype="pdf")
    annotated[0].add_text_annot((30, 30), "checked")
    fax = cv2.resize(_scan_image(), None, fx=1.0, fy=0.5)  # 100 x 50 dpi
    stretched = pymupdf.open()
    stretched.new_page(width=480 / 100 * 72, height=300 / 100 * 72).insert_image(
        pymupdf.Rect(0, 0, 480 / 100 * 72, 300 / 100 * 72),
        stream=cv2.imencode(".jpg", fax)[1].tobytes(),
        keep_proportion=False,
    )
    framed = pymupdf.open()  # a scan in the middle of a larger page
    framed.new_page(width=480 / 100 * 72, height=300 / 100 * 72).insert_image(
        pymupdf.Rect(36, 36, 480 / 100 * 72 - 36, 300 / 100 * 72 - 36),
        stream=cv2.imencode(".jpg", _scan_image())[1].tobytes(),
    )
    rendered = _no_render(monkeypatch)
    for data in (doc.tobytes(), annotated.tobytes(), stretched.tobytes(), framed.tobytes()):
        (page,) = iter_pages(data, dpi=100)
        assert page.image.shape == (300, 480, 3) and page.dpi == 100
    assert rendered == [0, 0, 0, 0]


def test_a_searchable_scans_ocr_layer_is_not_taken_for_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Invisible text over a scan is another program's guess at the image: the page is read as
    the scan. Invisible text over vector drawings (glyphs drawn as paths) is the page's text."""
    guess = "发票号码 12345678 名称 深圳市某某科技有限公司 金额 100.00"
    searchable = pymupdf.open(stream=_scan_pdf(_scan_image()), filetype="pdf")
    searchable[0].insert_text((20, 40), guess, render_mode=3, fontname="china-s")
    outlined = pymupdf.open()
    page = outlined.new_page(width=345, height=216)
    page.draw_rect(pymupdf.Rect(10, 10, 300, 200), color=(0, 0, 0), width=1)
    page.insert_text((20, 40), guess, render_mode=3, fontname="china-s")
    rendered = _no_render(monkeypatch)
    (scan,) = iter_pages(searchable.tobytes(), dpi=100)
    assert scan.words is None and rendered == []  # the embedded scan, no text layer
    assert _difference(scan.image, _rendered(searchable.tobytes(), 100)) < 3
    (drawn,) = iter_pages(outlined.tobytes(), dpi=100)
    assert drawn.words is not None and "12345678" in [w.text for w in drawn.words]


def test_a_scan_over_the_pixel_limit_is_not_decoded_from_the_pdf(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = np.full((3000, 3000, 3), 230, np.uint8)  # a Flate image: tiny in the file
    doc = pymupdf.open()
    doc.new_page(width=200, height=200).insert_image(
        pymupdf.Rect(0, 0, 200, 200), stream=cv2.imencode(".png", big)[1].tobytes()
    )
    import extractor.pdf_scans as pdf_scans

    decoded: list[int] = []
    real = pdf_scans._decoded
    monkeypatch.setattr(pdf_scans, "_decoded", lambda *a: decoded.append(a[1]) or real(*a))
    (page,) = iter_pages(doc.tobytes(), dpi=100, max_pixels=1_000_000)
    assert decoded == []  # 9 MP over the limit: the page is rendered at 100 dpi instead
    assert page.image.shape == (278, 278, 3) and page.dpi == 100
    (full,) = iter_pages(doc.tobytes(), dpi=100)
    assert len(decoded) == 1 and full.image.shape == (3000, 3000, 3)  # under it: the scan
