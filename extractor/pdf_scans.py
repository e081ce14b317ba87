"""The scan inside an image-only PDF page, taken as it is instead of rendering the page.

A scanner's PDF page draws one image and nothing else, or nothing else but invisible text (a
searchable scan's OCR layer: another program's guess at the image, which the loader does not
take for the page's text, :func:`is_scan`). Rendering such a page at the loader's dpi decodes
the image and resamples it; reading the embedded image only decodes it (33 against 103 CPU ms
per page over 96 scanned PDF pages at 150-300 dpi, docs/benchmarks.md) and hands the pipeline
the scanner's own pixels, so a scan reads the same whether it comes as a JPEG or inside a PDF.
Only a plain image lying over the whole page is read this way, turned and mirrored as the page
shows it; anything else (vector drawings, visible text, annotations, masks, a /Decode array,
CMYK, pixels that are not square, an image framed in a larger page) is rendered as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import cv2
import numpy as np

if TYPE_CHECKING:
    import pymupdf

REDUCTIONS = (8, 4, 2)
"""JPEG scans of twice the loader's dpi or more are decoded at 1/2, 1/4 or 1/8 of their size by
the decoder itself (libjpeg's DCT scaling), the most that keeps at least the loader's dpi."""
_REDUCED = {
    2: cv2.IMREAD_REDUCED_COLOR_2,
    4: cv2.IMREAD_REDUCED_COLOR_4,
    8: cv2.IMREAD_REDUCED_COLOR_8,
}
_PLAIN_SPACES = ("DeviceGray", "DeviceRGB", "ICCBased")  # ICC: grey or colour, checked decoded


def is_scan(page: pymupdf.Page) -> bool:
    """Whether ``page`` draws one image and, besides, at most invisible text (an OCR layer)."""
    drawn = [kind for kind, _ in page.get_bboxlog()]
    return drawn.count("fill-image") == 1 and set(drawn) <= {"fill-image", "ignore-text"}


def embedded_scan(
    doc: pymupdf.Document, page: pymupdf.Page, dpi: float, max_pixels: int
) -> tuple[np.ndarray, float] | None:
    """(image, its dpi): the one image ``page`` of ``doc`` draws (a page :func:`is_scan` holds
    to be a scan), turned as the page shows it, at its own resolution (or reduced towards
    ``dpi``, the loader's); None when the page must be rendered, also when the image would
    decode to more than ``max_pixels`` (rendering checks the page's own size)."""
    if page.first_annot is not None:
        return None
    listed = page.get_images(full=True)  # what the PDF says of the image, nothing decoded
    infos = page.get_image_info()  # where it is drawn (with xrefs it would decode the image)
    if len(listed) != 1 or len(infos) != 1:
        return None
    xref, soft_mask, width, height, bits, space, _, _, codec = listed[0][:9]
    if soft_mask or bits != 8 or space not in _PLAIN_SPACES:
        return None
    turn = _orientation(np.array(infos[0]["transform"]), page.rotation_matrix)
    if turn is None or any(
        doc.xref_get_key(xref, key)[0] != "null" for key in ("Decode", "SMask", "Mask", "ImageMask")
    ):
        return None
    import pymupdf  # at run time: imported only when a PDF is read

    shown = pymupdf.Rect(infos[0]["bbox"]) * page.rotation_matrix
    if not _covers(shown, page.rect):
        return None  # the page (its size, its margins) is what the pipeline is handed
    jpeg = codec == "DCTDecode"
    wanted = 0.99 * min(shown.width, shown.height) * dpi / 72  # px across, at the loader's dpi
    reduce = next((r for r in REDUCTIONS if jpeg and min(width, height) / r >= wanted), 1)
    if (width / reduce) * (height / reduce) > max_pixels:
        return None  # checked before anything is decoded
    image = _decoded_jpeg(doc, xref, reduce) if jpeg else _decoded(doc, xref)
    if image is None:
        return None
    image = turn(image)
    ppi_x, ppi_y = image.shape[1] / shown.width * 72, image.shape[0] / shown.height * 72
    if abs(ppi_x - ppi_y) > 0.02 * ppi_y:
        return None  # pixels not square (a fax's 204 x 98 dpi): rendering makes them square
    return image, ppi_x


def _covers(image: pymupdf.Rect, page: pymupdf.Rect, slack: float = 0.01) -> bool:
    """Whether the image lies over the whole page, to ``slack`` of the page's size."""
    tolerance = slack * max(page.width, page.height)
    return all(abs(a - b) <= tolerance for a, b in zip(image, page, strict=True))


def _decoded_jpeg(doc: pymupdf.Document, xref: int, reduce: int) -> np.ndarray | None:
    """A DCT image's own JPEG stream, decoded (1/``reduce`` of its size), if it is grey or
    colour (not CMYK: PDFs often store Adobe's inverted CMYK, which decoders read as a negative).
    Its EXIF orientation, if any, is not the PDF's: the page's drawing turns it."""
    meta = doc.extract_image(xref)  # for DCT: the stream as it is, not decoded
    if not meta or meta.get("ext") not in ("jpeg", "jpg") or meta.get("colorspace") not in (1, 3):
        return None
    flags = _REDUCED.get(reduce, cv2.IMREAD_COLOR) | cv2.IMREAD_IGNORE_ORIENTATION
    image = cv2.imdecode(np.frombuffer(meta["image"], np.uint8), flags)
    return image if image is not None and image.size else None


def _decoded(doc: pymupdf.Document, xref: int) -> np.ndarray | None:
    """Any other 8-bit grey or colour image (Flate, JPEG 2000...), decoded by MuPDF."""
    import pymupdf

    pix = pymupdf.Pixmap(doc, xref)
    if pix.alpha or pix.n not in (1, 3):
        return None
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)
    return cv2.cvtColor(image, cv2.COLOR_RGB2BGR if pix.n == 3 else cv2.COLOR_GRAY2BGR)


def _orientation(
    transform: np.ndarray, rotation: pymupdf.Matrix
) -> Callable[[np.ndarray], np.ndarray] | None:
    """How to turn the image's pixel array into the page as shown: a function of the array, or
    None when the image is not drawn axis-aligned. ``transform`` (a, b, c, d, e, f) maps the
    image's unit square (row 0 at v = 0) onto the unrotated page, the page's ``rotation``
    matrix that onto the page as shown."""
    a, b, c, d = transform[:4]
    r = np.array(list(rotation)[:4], dtype=float).reshape(2, 2)
    along_u = np.array([a, b]) @ r  # the way an image row runs on the shown page (u: column)
    along_v = np.array([c, d]) @ r  # the way an image column runs (v: row)
    if _axis(along_u) is None or _axis(along_v) is None or _axis(along_u) == _axis(along_v):
        return None
    transposed = _axis(along_u) == 1  # the image's rows run down the page
    flip_x = (along_v if transposed else along_u)[0] < 0
    flip_y = (along_u if transposed else along_v)[1] < 0

    def turn(image: np.ndarray) -> np.ndarray:
        shown = image.swapaxes(0, 1) if transposed else image
        shown = shown[:, ::-1] if flip_x else shown
        shown = shown[::-1] if flip_y else shown
        return np.ascontiguousarray(shown)

    return turn


def _axis(vector: np.ndarray) -> int | None:
    """0 when ``vector`` runs along x, 1 along y, None when it is slanted."""
    x, y = abs(float(vector[0])), abs(float(vector[1]))
    if y <= 1e-3 * x:
        return 0
    if x <= 1e-3 * y:
        return 1
    return None
