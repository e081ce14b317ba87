"""Full-page OCR (RapidOCR det + cls + rec) as the fallback runs it, on a real fixture page."""

import json
from pathlib import Path

import cv2
import numpy as np
import onnxruntime as ort
import pytest

from extractor.fullpage import TextLine, get_fullpage_ocr
from extractor.pipeline import Extractor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_reads_the_lines_of_a_scanned_page_with_a_lean_detector() -> None:
    path = FIXTURES / "medium/vat_invoice_0027.jpg"
    truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]
    ocr = get_fullpage_ocr(threads=1)
    lines = ocr(cv2.imread(str(path)))
    texts = " ".join(line.text for line in lines)
    for field in ("invoice_number", "buyer_tax_id", "seller_tax_id"):
        assert truth["fields"][field] in texts, field
    assert all(line.quad.shape == (4, 2) and 0 <= line.score <= 1 for line in lines)
    # the detector's session holds smaller intermediates than RapidOCR's own (docs/benchmarks.md)
    options = ocr._engine.text_det.session.session.get_session_options()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert not options.enable_cpu_mem_arena


def test_an_extractor_runs_its_fallback_where_its_recogniser_runs() -> None:
    ocr = Extractor(threads=1).fullpage_ocr()
    assert ocr is get_fullpage_ocr("cpu", 1) and ocr.provider == "cpu"
    options = ocr._engine.text_det.session.session.get_session_options()
    assert options.intra_op_num_threads == 1


def test_a_shared_process_detector_sleeps_between_tasks() -> None:
    """``spin=False`` (the shared fallback process): the detector's threads do not spin."""
    key = "session.intra_op.allow_spinning"
    shared = get_fullpage_ocr("cpu", 2, spin=False)
    assert shared is not get_fullpage_ocr("cpu", 2)
    options = shared._engine.text_det.session.session.get_session_options()
    assert options.get_session_config_entry(key) == "0"
    assert options.intra_op_num_threads == 2
    own = get_fullpage_ocr("cpu", 2)._engine.text_det.session.session.get_session_options()
    with pytest.raises(RuntimeError, match="does not have configuration"):
        own.get_session_config_entry(key)  # ONNX Runtime's default: spin


def test_a_glance_says_no_only_where_it_can_tell() -> None:
    """A glance (lines detected at 960 px, their starts read) says that no line starts with what
    it looks for only where the page's lines are many and large enough at that size to be seen:
    a scanned cover letter, yes; a form photographed small in a 4000 x 3000 frame (at 960 px its
    text a sixth of its scan's size: 4 of the 47 lines full-page OCR finds), no: that page is
    read whole, as it was before glances."""
    from extractor.loading import iter_pages

    ocr = get_fullpage_ocr(threads=1)
    letter = next(iter_pages((FIXTURES / "multipage/vat_invoice_0046.pdf").read_bytes())).image
    form = cv2.imread(str(FIXTURES / "clean/vat_invoice_0002.jpg"))
    photo = np.full((3000, 4000, 3), 200, np.uint8)
    small = cv2.resize(form, None, fx=0.7, fy=0.7, interpolation=cv2.INTER_AREA)
    photo[500 : 500 + small.shape[0], 300 : 300 + small.shape[1]] = small
    seen: list[str] = []

    def nothing(text: str) -> None:  # says neither yes nor no: read on
        seen.append(text)

    assert not ocr.shows(letter, nothing) and len(seen) >= 8  # every line's start read
    seen.clear()
    assert ocr.shows(photo, nothing) and seen == []  # too small to tell: nothing read
    assert ocr.shows(form, lambda text: "发票代码" in text or None)
    # a line's start is where its text starts, on a page upside down too: at its crop's end
    seller = json.loads((FIXTURES / "clean/vat_invoice_0002.json").read_text(encoding="utf-8"))
    name = seller["pages"][0]["fields"]["seller_name"]
    upside_down = np.ascontiguousarray(np.rot90(form, 2))
    assert ocr.shows(upside_down, lambda text: text.startswith(name[:6]) or None)


@pytest.fixture(scope="module")
def upright_pages() -> dict[int, tuple[np.ndarray, list[TextLine]]]:
    """A clean scan, and the same photographed 30 degrees off (turned on a larger canvas), each
    with its lines read upright (made once, as a test asks for one)."""
    return {}


def _upright(
    tilt: int, pages: dict[int, tuple[np.ndarray, list[TextLine]]]
) -> tuple[np.ndarray, list[TextLine]]:
    if tilt not in pages:
        page = cv2.imread(str(FIXTURES / "clean/vat_invoice_0002.jpg"))
        if tilt:
            h, w = page.shape[:2]
            side = int(np.hypot(h, w))
            turn = cv2.getRotationMatrix2D((w / 2, h / 2), tilt, 1.0)
            turn[:, 2] += ((side - w) / 2, (side - h) / 2)
            page = cv2.warpAffine(page, turn, (side, side), borderValue=(90, 60, 40))
        pages[tilt] = page, get_fullpage_ocr(threads=1)(page)
    return pages[tilt]


@pytest.mark.parametrize(("tilt", "turns"), [(0, 1), (0, 2), (0, 3), (30, 1)])
def test_a_turned_page_reads_line_for_line_as_upright(
    tilt: int, turns: int, upright_pages: dict[int, tuple[np.ndarray, list[TextLine]]]
) -> None:
    """A page scanned or photographed turned (a quarter, a half, three quarters: np.rot90's
    counter-clockwise turns) is read set upright, so its lines are those of the upright page,
    each outline in the turned image's px and starting at its text's top left. RapidOCR turns
    only the lines its classifier is sure of: upside down, a third of a photo's lines were read
    upside down, and too few labels were left to align the page by. A photo 30 degrees off
    turned on its side (its lines at 120 degrees) is set within 45 degrees of upright: its
    lines were read as cut, but fewer found."""
    upright, expected = _upright(tilt, upright_pages)
    h, w = upright.shape[:2]
    lines = get_fullpage_ocr(threads=1)(np.ascontiguousarray(np.rot90(upright, turns)))
    assert [line.text for line in lines] == [line.text for line in expected]
    # the turned image's px -> the upright's (np.rot90 k=1: x' = y, y' = w - 1 - x)
    back = {
        1: lambda q: np.stack([w - 1 - q[:, 1], q[:, 0]], axis=1),
        2: lambda q: np.stack([w - 1 - q[:, 0], h - 1 - q[:, 1]], axis=1),
        3: lambda q: np.stack([q[:, 1], h - 1 - q[:, 0]], axis=1),
    }[turns]
    for line, same in zip(lines, expected, strict=True):
        assert np.abs(back(line.quad) - same.quad).max() < 0.5, line.text
