"""The invoice's QR code as a free cross-check of the fields read from the print.

Classic and electronic invoices encode ``01,<type>,<code>,<number>,<amount>,<YYYYMMDD>,
<check code>,<crc>``; a template's ``qr`` section says where the code is printed and which
payload position holds which field. A field whose value disagrees with the QR code is flagged.

Decoded with zxing-cpp: on the fixtures' 50 registered JPEG pages it reads 45 codes (every
payload right) in 0.5 ms per page, where OpenCV's ``QRCodeDetector`` read 42 in 7.2 ms.
"""

from __future__ import annotations

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


def read_qr(page: np.ndarray, homography: np.ndarray, template: Template) -> str | None:
    """The decoded QR payload in the template's QR box (or, when none is there, within
    QR_MARGIN_MM of it), or None when there is none."""
    if template.qr is None:
        return None
    for margin in (0.0, QR_MARGIN_MM):
        payload = _read_qr_in(page, homography, template.qr.box, template.px_per_mm, margin)
        if payload is not None:
            return payload
    return None


def _read_qr_in(
    page: np.ndarray, homography: np.ndarray, box: Box, ppm: float, margin: float
) -> str | None:
    origin = ((box.x - margin) * ppm, (box.y - margin) * ppm)
    size = (round((box.w + 2 * margin) * ppm), round((box.h + 2 * margin) * ppm))
    crop, _ = cut_out(page, homography, origin, size)
    gray = crop if crop.ndim == 2 else crop[..., 2]  # red channel: the red seal drops out
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
