"""Registration's frame outline on pages where something touches the frame from outside."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.registration import _quad, fit_sides, register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_fit_sides_ignores_a_bulge_on_a_tilted_frame() -> None:
    """A ring (a seal) stamped over the frame's corner pulls the hull's corner out; the fitted
    sides still meet at the frame's true corners."""
    piece = np.zeros((700, 900), np.uint8)
    corners = np.array([[120, 160], [760, 90], [800, 560], [150, 610]], np.float32)
    cv2.polylines(piece, [corners.astype(np.int32)], True, 255, 3)
    cv2.line(piece, (135, 380), (780, 330), 255, 2)  # a row of the table inside
    cv2.ellipse(piece, (170, 560), (90, 70), 0, 0, 360, 255, 3)  # the seal, over the corner
    ys, xs = np.nonzero(piece)
    hull = cv2.convexHull(np.column_stack([xs, ys]).astype(np.int32))
    rough = _quad(hull)
    fitted = fit_sides(rough, piece > 0)
    assert fitted is not None

    def error(quad: np.ndarray) -> float:
        return max(float(np.min(np.linalg.norm(quad - c, axis=1))) for c in corners)

    assert error(rough) > 15  # the hull's corner sits on the seal
    assert error(fitted) < 4  # the outer edge of a 3 px line, not its middle


def test_a_photo_with_a_faded_seal_over_the_frame_registers() -> None:
    """heavy/vat_invoice_0043: a phone photo (23 degrees, perspective, a quarter turn) whose seal
    is too faded for the colour mask and touches the frame; it used to be unmatched (0.63)."""
    template = TemplateStore().get("vat_invoice")
    path = FIXTURES / "heavy/vat_invoice_0043.jpg"
    alignment = register(cv2.imread(str(path)), template)
    assert alignment.matched and alignment.score > 0.9


def test_a_black_and_white_scan_under_warm_light_registers() -> None:
    """medium/vat_invoice_0034, a scan binarised like a fax, photographed under tungsten light
    (blue at 65%, green at 79%, red at 90%) and saved as a JPEG: the colour bleeding into its
    black print reads as crimson, hue near 0 and saturated, and was taken for a seal's ink and
    cut out of the frame (matched at 0.77 through a wrong outline, every field wrong). Black is
    no seal: it registers where the scan itself does."""
    template = TemplateStore().get("vat_invoice")
    scan = cv2.imread(str(FIXTURES / "medium/vat_invoice_0034.jpg"))
    warm = np.clip(scan * np.float32([0.65, 0.79, 0.9]), 0, 255).astype(np.uint8)
    _, jpeg = cv2.imencode(".jpg", warm, [cv2.IMWRITE_JPEG_QUALITY, 80])
    alignment = register(cv2.imdecode(jpeg, cv2.IMREAD_COLOR), template)
    reference = register(scan, template)
    assert alignment.matched and alignment.score > 0.95
    w, h = template.reference_size_px
    corners = np.array([[[0, 0], [w, 0], [w, h], [0, h]]], np.float64)
    moved = cv2.perspectiveTransform(corners, alignment.homography)
    assert np.abs(moved - cv2.perspectiveTransform(corners, reference.homography)).max() < 3


@pytest.mark.parametrize(("top", "encoding"), [(0, ".png"), (57, ".jpg")])
def test_a_frame_the_small_working_copy_shows_in_pieces_registers_whole(
    top: int, encoding: str
) -> None:
    """digital/scans/vat_invoice_digital_0008 printed on the top of an A4 sheet (the sheet
    scanned whole, 1,485 x 2,100 px): on the page's working copy (1,200 px high) the frame's
    lines break where the seal's mask cuts them, its right piece alone matched 0.87-0.92 and
    the form lay 50-280 px off. Two pieces together are an outline too: the form lands where it
    does on the scan alone."""
    template = TemplateStore().get("vat_invoice_digital")
    scan = cv2.imread(str(FIXTURES / "digital/scans/vat_invoice_digital_0008.jpg"))
    height, width = scan.shape[:2]
    sheet = np.full((2100, width, 3), 250, np.uint8)
    sheet[top : top + height] = scan
    quality = [cv2.IMWRITE_JPEG_QUALITY, 85] if encoding == ".jpg" else []
    sheet = cv2.imdecode(cv2.imencode(encoding, sheet, quality)[1], cv2.IMREAD_COLOR)
    w, h = template.reference_size_px
    grid = np.array([[[x, y] for x in np.linspace(0, w, 5) for y in np.linspace(0, h, 4)]])
    alone = cv2.perspectiveTransform(grid, register(scan, template).homography)[0]
    alignment = register(sheet, template)
    assert alignment.matched and alignment.score > 0.95
    found = cv2.perspectiveTransform(grid, alignment.homography)[0] - [0, top]
    assert np.linalg.norm(found - alone, axis=1).max() < 4
