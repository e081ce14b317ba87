"""The invoice's QR code as a free cross-check of the fields read from the print.

Classic and electronic invoices encode ``01,<type>,<code>,<number>,<amount>,<YYYYMMDD>,
<check code>,<crc>``; a template's ``qr`` section says where the code is printed and which
payload position holds which field. A field whose value disagrees with the QR code is flagged.

Decoded with zxing-cpp: on the fixtures' 50 registered JPEG pages it reads 45 codes (every
payload right) in 0.5 ms per page, where OpenCV's ``QRCodeDetector`` read 42 in 7.2 ms.
"""

from __future__ import annotations

import cv2
import numpy as np
import zxingcpp

from extractor.crops import cut_out
from extractor.fields import FieldValueError, get_normalizer
from extractor.templates import Box, Template

QR_MARGIN_MM = 6.0
"""Where the QR box holds no code, it is searched again this much larger on every side: the
printer prints the code with the data, and a print 6 mm off the form took a quarter of the code
out of the box. (Not at first: on a blurred photo, the larger crop's clutter hid a code the box
alone gave.)"""


BLURRED_SCALE = 2.0
BLURRED_BLOCK_MM = 2.0
"""Where neither crop gives a code, it is cut again (with the margin) at twice the template's
resolution and thresholded against each point's neighbourhood (:data:`BLURRED_BLOCK_MM`
across, two or three of a code's modules): a photo's code, its modules 3-4 px and blurred,
that zxing's own binariser does not resolve. On 40 heavy e-invoice photos and 38 photos at an
angle (seeds 20280000-039) codes read 12 -> 16 and 23 -> 27, a millisecond or two each."""
INKED_SCALE = 3.0
"""Where that gives none either, it is cut at three times the resolution and thresholded at
its neighbourhood's mean itself, not under it: a code a dot-matrix head printed, each dot
spreading its ink past the modules' edges, so that light modules between dark ones narrow to
a pixel or two and the mean's margin closes them (on 120 pages printed with pins, medium and
geometry, seeds 20291000-014: codes read 49 -> 64)."""


def read_qr(page: np.ndarray, homography: np.ndarray, template: Template) -> str | None:
    """The decoded QR payload in the template's QR box (or, when none is there, within
    QR_MARGIN_MM of it; or, when none is read there either, in that crop enlarged and
    thresholded: :data:`BLURRED_SCALE`, :data:`INKED_SCALE`), or None when there is none."""
    if template.qr is None:
        return None
    box, ppm = template.qr.box, template.px_per_mm
    tries = [
        (0.0, 1.0, None),
        (QR_MARGIN_MM, 1.0, None),
        (QR_MARGIN_MM, BLURRED_SCALE, 5),
        (QR_MARGIN_MM, INKED_SCALE, 0),
    ]
    for margin, scale, under_mean in tries:
        payload = _read_qr_in(page, homography, box, ppm, margin, scale, under_mean)
        if payload is not None:
            return payload
    return None


def _read_qr_in(
    page: np.ndarray,
    homography: np.ndarray,
    box: Box,
    ppm: float,
    margin: float,
    scale: float = 1.0,
    under_mean: int | None = None,
) -> str | None:
    """The payload of a code in ``box`` (with ``margin`` mm around it) cut at ``scale`` times
    the template's resolution; with ``under_mean``, thresholded at that many grey levels under
    the mean of each point's neighbourhood (:data:`BLURRED_BLOCK_MM` across), else zxing's own
    binariser."""
    ppm *= scale
    origin = ((box.x - margin) * ppm, (box.y - margin) * ppm)
    size = (round((box.w + 2 * margin) * ppm), round((box.h + 2 * margin) * ppm))
    enlarged = homography @ np.diag([1 / scale, 1 / scale, 1.0])
    crop, _ = cut_out(page, enlarged, origin, size)
    gray = crop if crop.ndim == 2 else crop[..., 2]  # red channel: the red seal drops out
    if under_mean is not None:
        block = round(BLURRED_BLOCK_MM * ppm) | 1
        gray = cv2.adaptiveThreshold(
            gray, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, block, under_mean
        )
    found = zxingcpp.read_barcodes(gray, formats=zxingcpp.BarcodeFormat.QRCode)
    return next((code.text for code in found if code.text), None)


def qr_values(template: Template, payload: str) -> dict[str, str]:
    """Field values the payload states, normalised like the fields they check."""
    if template.qr is None:
        return {}
    parts = payload.split(",")
    values: dict[str, str] = {}
    for name, position in template.qr.fields.items():
        if position >= len(parts) or not parts[position].strip():
            continue
        spec = template.field(name)
        try:
            values[name] = get_normalizer(spec.normalizer, spec.kind)(parts[position])
        except FieldValueError:
            continue
    return values
