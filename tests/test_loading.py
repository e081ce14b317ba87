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
