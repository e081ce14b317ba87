"""The full-page OCR baseline: RapidOCR det + cls + rec (PP-OCRv6 small det/rec and the
mobile cls model bundled in the ``rapidocr`` wheel) over the whole decoded page.

For a per-core figure it runs ONNX Runtime with one intra-op and one inter-op thread, as the ROI
path does. Only its time is measured: finding the fields in its output by their labels is the
fallback path's work (extractor/fullpage.py), not the baseline's.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def fullpage_engine(threads: int = 1) -> object:
    from rapidocr import RapidOCR

    return RapidOCR(
        params={
            "Global.log_level": "error",
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }
    )


def read_page(engine: object, path: Path) -> int:
    """Decode ``path`` and OCR the whole page; the number of text lines found."""
    image = cv2.imdecode(np.frombuffer(path.read_bytes(), np.uint8), cv2.IMREAD_COLOR)
    result = engine(image)  # type: ignore[operator]
    return 0 if result.txts is None else len(result.txts)
