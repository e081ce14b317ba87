"""Full-page OCR (detection + direction classification + recognition) for the fallback path.

It runs RapidOCR with the PP-OCRv6 det/rec and the cls models its wheel ships (nothing is
downloaded). On CPU and CUDA it uses ONNX Runtime; with ``provider="tensorrt"`` it uses
RapidOCR's own TensorRT engine, which already carries optimisation profiles for det, cls and rec
and caches the built engines on disk (ORT's TensorRT EP would need the same profiles written
out per model; one engine builder for three models is less to get wrong).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Literal, Protocol

import cv2
import numpy as np

from extractor.engines.ppocr import cudnn_conv_algo_search
from extractor.errors import EngineError
from extractor.memory import large_buffers_mapped
from extractor.radicals import unify_radicals

Provider = Literal["cpu", "cuda", "tensorrt"]


@dataclass(frozen=True, slots=True)
class TextLine:
    """One line found on the page: its outline (4x2, page px), text and confidence."""

    quad: np.ndarray
    text: str
    score: float

    @property
    def centre(self) -> np.ndarray:
        return self.quad.mean(axis=0)

    @property
    def height(self) -> float:
        return float(
            (
                np.linalg.norm(self.quad[3] - self.quad[0])
                + np.linalg.norm(self.quad[2] - self.quad[1])
            )
            / 2
        )


def mapped(quad: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """A quad's corners (N x 2) through a homography (template mm -> page px for the text
    layer, page px -> reference px for a line full-page OCR found, view px -> page px)."""
    points = quad.reshape(-1, 1, 2).astype(np.float64)
    return cv2.perspectiveTransform(points, matrix).reshape(-1, 2)


@dataclass(frozen=True, slots=True)
class View:
    """A part of a page read as an image of its own: ``matrix`` (3x3) takes page px to the
    view's px, ``size`` is the view's (width, height) px. A band of the form set upright by the
    page's registration reads as well on a tilted photo as on a straight scan, at its own size."""

    matrix: np.ndarray
    size: tuple[int, int]
    back: np.ndarray = field(init=False, repr=False)
    """The view's px -> page px (the inverse, made once: every line found is taken back)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "back", np.linalg.inv(self.matrix))

    def of(self, image: np.ndarray) -> np.ndarray:
        """The view's pixels (white where it reaches past the page)."""
        return cv2.warpPerspective(
            image, self.matrix, self.size, flags=cv2.INTER_LINEAR, borderValue=(255, 255, 255)
        )

    def to_page(self, quad: np.ndarray) -> np.ndarray:
        """An outline (N x 2, view px) in the page's px."""
        return mapped(quad, self.back).astype(np.float32)


DET_MAX_SIDE = 1600
"""Long side, in px, of the page text detection runs on. Measured on 8 medium and heavy fixture
pages against RapidOCR's default (shortest side >= 736, i.e. a 200-dpi page unscaled): as many
lines found, 1.82 instead of 2.17 s of one core per page, peak RSS 679 instead of 886 MB, and
every field of ``roi eval fixtures`` the same. 1280 was cheaper still (1.57 s, 578 MB) but split
lines differently and let two names read by the fallback through wrong."""

GLANCE_SIDE = 960
"""Long side, in px, of the page a glance (:meth:`FullPageOCR.shows`) detects lines on: a third
of the detector's work at :data:`DET_MAX_SIDE` and under half its memory (a cover letter at
1,226 x 1,747 px: 0.38 against 1.28 s of one core, +138 against +335 MB). The form's labels
are found at it as at the full size on the pages no frame registers (13-17 against 12-22 on
three steep photos)."""
GLANCE_LINES = 8
GLANCE_LINE_HEIGHT = 14.0
"""A glance that finds fewer lines than this, or lines whose median height is under this many
px, cannot tell a page from a form at its size (a form photographed small in a large frame: 4
lines found at 960 px where 47 are at 1,600, and none of them a label): it does not say no, and
the page is read whole. Pages at a legible size show 11-86 lines at a glance, of 16-26 px."""
GLANCE_HEIGHTS = 10
"""A glance reads each line's start only, this many times the line's height: where a form's
label is (at the line's first or second character; the longest, 价税合计（大写）, is 8)."""
GLANCE_MOST_LINES = 100
"""A glance reads this many line starts at most, top to bottom (~50 ms of one core each): a
form shows enough of its labels within 60 (72 turns of 18 photos and scans no frame registers
on: 1-60, median 7; those that show none, 31-66 lines in all), and a page that has not is none
(a goods list's 188 lines cost 11 s of one core to the last)."""


REC_BATCH = {"cpu": 1, "cuda": 6, "tensorrt": 6}
"""Lines RapidOCR recognises per batch (its default: 6), each padded to the widest of its batch
(and to at least 320 px). On the CPU, where the cost is per input column, one at a time: the
fallback as the service runs it took 24% less CPU on medium to geometry fixture pages, and read
every field as before but for flagged ones (docs/benchmarks.md)."""


class FullPageReader(Protocol):
    """What the fallback asks of full-page OCR: :class:`FullPageOCR` in this process, or
    :class:`~extractor.fullpage_server.RemoteFullPageOCR`, one in a process of its own."""

    @property
    def setting(self) -> str:
        """What, besides the image, decides the lines found (:mod:`extractor.label_cache`)."""
        ...

    def __call__(
        self,
        image: np.ndarray,
        views: Sequence[View] | None = None,
        keep: Callable[[np.ndarray], bool] | None = None,
    ) -> list[TextLine]: ...

    def shows(self, image: np.ndarray, starts: Callable[[str], bool | None]) -> bool:
        """Whether ``starts``, given the starts of ``image``'s lines one by one, says yes to one
        (it looks for a form's labels) before it says no (None: read on), at a glance: much less
        than reading it whole."""
        ...


class FullPageOCR:
    """RapidOCR over a whole page; loaded once per process (see :func:`get_fullpage_ocr`)."""

    def __init__(
        self,
        provider: Provider = "cpu",
        threads: int = 0,
        cache_dir: str | None = None,
        spin: bool = True,
    ):
        """``spin`` False: the detector's threads wait for work asleep, not spinning (a process
        that shares its cores with others: :mod:`extractor.fullpage_server`)."""
        try:
            from rapidocr import RapidOCR
        except ImportError as exc:  # pragma: no cover - rapidocr is a core dependency
            raise EngineError("full-page OCR needs the rapidocr package") from exc
        params: dict[str, object] = {
            "Global.log_level": "error",
            "EngineConfig.onnxruntime.intra_op_num_threads": threads or -1,
            # detection on the page shrunk to DET_MAX_SIDE (lines are then read from the
            # full-resolution page): RapidOCR's default keeps a 200-dpi page whole
            "Det.limit_type": "max",
            "Det.limit_side_len": DET_MAX_SIDE,
            "Rec.rec_batch_num": REC_BATCH[provider],
        }
        if provider == "cuda":
            params["EngineConfig.onnxruntime.use_cuda"] = True
            params["EngineConfig.onnxruntime.cuda_ep_cfg.cudnn_conv_algo_search"] = (
                cudnn_conv_algo_search()
            )
        elif provider == "tensorrt":
            for stage in ("Det", "Cls", "Rec"):
                params[f"{stage}.engine_type"] = "tensorrt"
            params["EngineConfig.tensorrt.use_fp16"] = True
            if cache_dir:
                params["EngineConfig.tensorrt.cache_dir"] = cache_dir
        try:
            self._engine = RapidOCR(params=params)
            if provider == "cpu":
                self._lean_detector(threads, spin)
        except Exception as exc:
            raise EngineError(f"cannot start full-page OCR ({provider}): {exc}") from exc
        self.provider = provider
        self.setting = (
            f"rapidocr {version('rapidocr')}, {provider}, detection at {DET_MAX_SIDE} px, "
            f"lines read {REC_BATCH[provider]} at a time, outlines from their text's start"
        )
        """What, besides the image, decides the lines found (:mod:`extractor.label_cache`)."""

    def _lean_detector(self, threads: int, spin: bool = True) -> None:
        """Give RapidOCR's text detector a session with ONNX Runtime's *extended* graph
        optimisations instead of *all*: the layout transforms that *all* adds hold larger
        intermediate tensors. Measured on one thread with a 1600 x 928 input: peak RSS 329 instead
        of 459 MB, 0.68 instead of 0.79 s of CPU. RapidOCR's configuration cannot carry a
        session, so the loaded detector's one is replaced."""
        import onnxruntime as ort

        try:  # private (rapidocr is pinned): no public way to set a detector's options
            detector = self._engine._load_det_model()
            path = detector.session.session._model_path
        except AttributeError:  # another rapidocr: keep its own session
            return
        options = ort.SessionOptions()
        options.enable_cpu_mem_arena = False
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        if not spin:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        detector.session.session = ort.InferenceSession(
            path,
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )

    def __call__(
        self,
        image: np.ndarray,
        views: Sequence[View] | None = None,
        keep: Callable[[np.ndarray], bool] | None = None,
    ) -> list[TextLine]:
        """The lines of ``image``, or of its ``views`` only (each read alone), in the image's px.
        A view is detected at the scale the whole image would be: the detector's lines depend
        on it (a name's line found shorter at another). With ``keep`` (a line's 4x2 outline,
        image px -> bool), lines it refuses are not read."""
        if views is None:
            try:
                return self._read(image, DET_MAX_SIDE, keep, orient=True)
            except _TurnedPage as turned:  # read again, the page's text set upright
                views = [turned.view(image.shape)]
        scale = min(1.0, DET_MAX_SIDE / max(image.shape[:2]))
        lines = []
        for view in views:
            side = max(32, round(max(view.size) * scale))
            moved = None if keep is None else (lambda quad, v=view: keep(v.to_page(quad)))
            lines += [
                TextLine(view.to_page(ln.quad), ln.text, ln.score)
                for ln in self._read(view.of(image), side, moved)
            ]
        return lines

    def shows(self, image: np.ndarray, starts: Callable[[str], bool | None]) -> bool:
        """Whether ``starts`` says yes to one of ``image``'s lines: its lines detected at
        :data:`GLANCE_SIDE` and read top to bottom, each only its first :data:`GLANCE_HEIGHTS`
        heights, each given to ``starts`` until it says yes or no (None: read on;
        :data:`GLANCE_MOST_LINES` at most); True, unread, where the lines are too few or too
        small at that size to tell (:data:`GLANCE_LINES`). A page no frame registered on that
        shows too little of its form's labels to find a field by is no such form, and reading
        it whole would cost ~3x more (a scanned cover letter: 0.74 against 2.3 s of one core)
        and the detector's memory at full size; on a form, a field's label is found within a
        few lines (0.4-1.2 s on three steep photos)."""
        from rapidocr.main import RapidOCRError
        from rapidocr.utils.process_img import get_rotate_crop_image

        engine = self._engine
        image = engine.load_img(image)  # BGR, as RapidOCR's own call makes it
        detector = engine._load_det_model()  # private (rapidocr is pinned)
        detector.limit_side_len = GLANCE_SIDE
        try:
            with large_buffers_mapped():
                found = detector(image)
        finally:
            detector.limit_side_len = DET_MAX_SIDE
        boxes = [] if found.boxes is None else list(found.boxes)
        if max(image.shape[:2]) > GLANCE_SIDE:  # shrunk for the glance: is its text still seen?
            scale = GLANCE_SIDE / max(image.shape[:2])
            heights = [np.linalg.norm(box[3] - box[0]) * scale for box in boxes]
            if len(boxes) < GLANCE_LINES or np.median(heights) < GLANCE_LINE_HEIGHT:
                return True  # no telling at this size: read it whole
        top_down = sorted(boxes, key=lambda quad: (quad[:, 1].min(), quad[:, 0].min()))
        for box in top_down[:GLANCE_MOST_LINES]:
            line = get_rotate_crop_image(image, np.array(box, np.float32))
            reach = GLANCE_HEIGHTS * line.shape[0]
            try:
                upright, direction = engine.cls_and_rotate([line[:, :reach]])
                if _upside_down(engine, direction.cls_res[0]):  # its start is at the crop's end
                    upright = [cv2.rotate(line[:, -reach:], cv2.ROTATE_180)]
                text = engine.recognize_txt(upright).txts[0]
            except RapidOCRError:  # nothing read on it
                continue
            said = starts(unify_radicals(str(text)))
            if said is not None:  # a form, or plainly none
                return said
        return False

    def _read(
        self,
        image: np.ndarray,
        det_side: int,
        keep: Callable[[np.ndarray], bool] | None = None,
        orient: bool = False,
    ) -> list[TextLine]:
        """RapidOCR on ``image``, detection on it shrunk to ``det_side`` px on its long side
        (one call at a time: the engine is set up for it, as a worker's one thread does). With
        ``orient``, an image whose text reads turned raises :class:`_TurnedPage` before its
        lines are recognised (:class:`_Steps`)."""
        engine = self._engine
        detector = engine._load_det_model()  # private (rapidocr is pinned)
        detector.limit_side_len = det_side
        if keep is not None:  # instance attributes: RapidOCR's own call finds them
            engine.detect_and_crop = _keeping(engine, keep, image.shape)
        engine.run_ocr_steps = _Steps(engine, orient)
        try:
            with large_buffers_mapped():  # its activations must not fragment the worker's heap
                result = engine(image)
        finally:
            detector.limit_side_len = DET_MAX_SIDE
            engine.__dict__.pop("detect_and_crop", None)
            engine.__dict__.pop("run_ocr_steps", None)
        if result.boxes is None or result.txts is None:
            return []
        return [
            TextLine(
                np.asarray(box, np.float32).reshape(4, 2), unify_radicals(str(text)), float(score)
            )
            for box, text, score in zip(result.boxes, result.txts, result.scores, strict=True)
            if str(text).strip()
        ]


class _TurnedPage(Exception):
    """The page's text reads turned ``turns`` quarter turns clockwise: set upright by turning it
    as many counter-clockwise (:meth:`view`), it reads as a page scanned upright does."""

    def __init__(self, turns: int):
        super().__init__(f"the page reads turned {90 * turns} degrees")
        self.turns = turns

    def view(self, shape: tuple[int, ...]) -> View:
        """The page (``shape``: its image's) turned upright, as a :class:`View`."""
        h, w = shape[:2]
        matrix = {
            1: [[0, 1, 0], [-1, 0, w - 1], [0, 0, 1]],
            2: [[-1, 0, w - 1], [0, -1, h - 1], [0, 0, 1]],
            3: [[0, -1, h - 1], [1, 0, 0], [0, 0, 1]],
        }[self.turns]
        return View(np.array(matrix, np.float64), (h, w) if self.turns % 2 else (w, h))


PAGE_TURNED = 0.5
"""A page whose lines its direction classifier is sure of read in one quarter other than left
to right (within 45 degrees) over more than this share of their width is read again, turned by
that quarter: RapidOCR turns a line only when its classifier is sure of it, and on a photo
upside down 24 of its 70 lines were left upside down (among them 开票日期 and 纳税人识别号), and
too few of the form's labels were read to align it by. Upright pages' sure lines read otherwise
over 0-4% of their width (single characters, labels printed downwards)."""


class _Steps:
    """RapidOCR's OCR steps (its ``run_ocr_steps``: detection, direction, recognition) on one
    image, with two things added: with ``orient``, an image whose text reads turned
    (:data:`PAGE_TURNED`) is not recognised but raises :class:`_TurnedPage`; and each line's
    outline starts at its text's top left (:func:`_read_turns`: RapidOCR gives its corners
    clockwise from the image's top left, and the fallback takes a line's left edge for its
    text's start: a label's end, its row's direction in
    :func:`~extractor.fallback.beside_label`)."""

    def __init__(self, engine: Any, orient: bool):
        self._engine = engine
        self._orient = orient

    def __call__(self, img: np.ndarray, op_record: dict[str, Any]) -> tuple[Any, ...]:
        from rapidocr.ch_ppocr_cls import TextClsOutput
        from rapidocr.ch_ppocr_det import TextDetOutput
        from rapidocr.ch_ppocr_rec import TextRecOutput
        from rapidocr.main import RapidOCRError

        engine = self._engine
        try:
            crops, det = engine.detect_and_crop(img, op_record)
            upright, cls = engine.cls_and_rotate(crops)
            for k, direction in enumerate(cls.cls_res):
                turns = _read_turns(det.boxes[k], _upside_down(engine, direction))
                det.boxes[k] = np.roll(det.boxes[k], -turns, axis=0)
            if self._orient and (page := _page_turns(det.boxes, crops, cls.cls_res, engine)):
                raise _TurnedPage(page)
            rec = engine.recognize_txt(upright)
        except RapidOCRError:  # no line found or read: RapidOCR answers nothing
            return TextDetOutput(), TextClsOutput(), TextRecOutput(), []
        return det, cls, rec, crops


def _page_turns(
    quads: np.ndarray, crops: list[np.ndarray], directions: list[tuple[str, float]], engine: Any
) -> int:
    """The quarter turns counter-clockwise that set most of the width of an image's sure lines
    (:data:`PAGE_TURNED`) reading left to right, within 45 degrees (``quads``: their outlines
    from their text's top left); 0 where no quarter holds that much. A photo taken at 26
    degrees and turned on its side reads at 116: its lines are read as cut, but the detector
    found 55 of them there against 66 at 26 degrees."""
    width = [0, 0, 0, 0]
    for quad, crop, direction in zip(quads, crops, directions, strict=True):
        if _sure(engine, direction):
            dx, dy = quad[1] - quad[0]  # image px, y down: reading down is a quarter clockwise
            width[round(math.degrees(math.atan2(dy, dx)) / 90) % 4] += crop.shape[1]
    most = int(np.argmax(width))
    return most if width[most] > PAGE_TURNED * sum(width) else 0


def _sure(engine: Any, direction: tuple[str, float]) -> bool:
    """Whether RapidOCR's direction classifier is sure of a line it gave ``direction`` (its
    label and score): over its bar, as RapidOCR turns a line only then."""
    return direction[1] > engine.text_cls.cls_thresh


def _upside_down(engine: Any, direction: tuple[str, float]) -> bool:
    """Whether RapidOCR's direction classifier turned a line it gave ``direction`` half round
    to read it."""
    return "180" in direction[0] and _sure(engine, direction)


def _read_turns(box: np.ndarray, upside_down: bool) -> int:
    """Quarter turns of a detected outline's corners that start them at the top left of its
    text as read: RapidOCR turns a line's crop a quarter counter-clockwise when it is 1.5 times
    taller than wide (a line on a page turned 90 degrees), and half a turn more when its
    classifier finds it upside down (a page turned 180 degrees)."""
    width = max(np.linalg.norm(box[0] - box[1]), np.linalg.norm(box[2] - box[3]))
    height = max(np.linalg.norm(box[0] - box[3]), np.linalg.norm(box[1] - box[2]))
    tall = int(height) >= 1.5 * int(width)  # as RapidOCR's get_rotate_crop_image decides
    return int(tall) + 2 * int(upside_down)


def _keeping(
    engine: Any, keep: Callable[[np.ndarray], bool], shape: tuple[int, ...]
) -> Callable[..., Any]:
    """RapidOCR's detection and line crops, without the lines ``keep`` refuses (their outlines
    taken back to the image's px as RapidOCR will), so that only the rest are recognised."""
    from rapidocr.main import RapidOCRError
    from rapidocr.utils.process_img import map_boxes_to_original

    detect_and_crop = type(engine).detect_and_crop.__get__(engine)

    def only_kept(img: np.ndarray, op_record: dict[str, Any]) -> tuple[list[Any], Any]:
        crops, found = detect_and_crop(img, op_record)
        quads = map_boxes_to_original(np.array(found.boxes, np.float32), op_record, *shape[:2])
        kept = [i for i, quad in enumerate(quads) if keep(quad)]
        if not kept:
            raise RapidOCRError("no line to read")  # RapidOCR answers nothing, as for none found
        found.boxes = found.boxes[kept]
        found.scores = [found.scores[i] for i in kept]
        return [crops[i] for i in kept], found

    return only_kept


_CACHE: dict[tuple[str, int, bool], FullPageOCR] = {}


def get_fullpage_ocr(
    provider: Provider = "cpu", threads: int = 0, spin: bool = True
) -> FullPageOCR:
    """The process's full-page OCR (loaded on first use: the ROI path never pays for it)."""
    key = (provider, threads, spin)
    if key not in _CACHE:
        _CACHE[key] = FullPageOCR(provider, threads, spin=spin)
    return _CACHE[key]
