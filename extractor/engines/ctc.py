"""What every PP-OCR-style recognition engine shares, whatever runs the network.

Crops are resized to the model's height keeping their aspect ratio, normalised to [-1, 1] and
padded to a width bucket, so a batch holds crops of one bucket and little padding. The output is
decoded CTC-greedy with the field's allowlist applied as a mask on the class scores before the
argmax; per-character confidences are the raw (unmasked) probabilities of the chosen classes,
so a forced read shows up as low confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import cv2
import numpy as np

from extractor.engines.base import Recognition
from extractor.errors import EngineError
from extractor.radicals import unify_radicals

WIDTH_STEP = 32  # crops are padded to a multiple of this: batches of one width bucket
MAX_WIDTH = 1920


def prepare_line(crop: np.ndarray, height: int) -> np.ndarray:
    """CHW float32 of a line crop at ``height``, its width rounded up to the bucket step (the
    padding is zeros, the model's mid-grey)."""
    if crop.ndim == 2:
        crop = cv2.cvtColor(crop, cv2.COLOR_GRAY2BGR)
    elif crop.shape[2] == 4:
        crop = cv2.cvtColor(crop, cv2.COLOR_BGRA2BGR)
    h, w = crop.shape[:2]
    if h == 0 or w == 0:
        crop = np.full((height, WIDTH_STEP, 3), 255, np.uint8)
        h, w = crop.shape[:2]
    new_w = line_width(crop, height)
    resized = cv2.resize(
        crop, (new_w, height), interpolation=cv2.INTER_AREA if h > height else cv2.INTER_LINEAR
    )
    bucket = min(MAX_WIDTH, math.ceil(new_w / WIDTH_STEP) * WIDTH_STEP)
    out = np.zeros((3, height, bucket), dtype=np.float32)
    out[:, :, :new_w] = resized.transpose(2, 0, 1).astype(np.float32) / 127.5 - 1.0
    return out


def line_width(crop: np.ndarray, height: int) -> int:
    """The width (columns) of a line crop resized to ``height``, keeping its aspect ratio."""
    h, w = crop.shape[:2]
    return max(8, min(MAX_WIDTH, math.ceil(height * w / h))) if h and w else WIDTH_STEP


def ctc_greedy(
    probs: np.ndarray, mask: np.ndarray | None, characters: Sequence[str], step: float = 0.0
) -> Recognition:
    """CTC greedy decoding of one (T, C) probability matrix under an optional class mask
    (``step``: as in :func:`ctc_collapse`)."""
    if mask is None:
        best = probs.argmax(axis=1)
    else:  # the argmax over the allowed classes only (a dozen columns of ~18,700 for digits)
        allowed = np.flatnonzero(mask)
        best = allowed[probs[:, allowed].argmax(axis=1)]
    return ctc_collapse(best, probs[np.arange(len(best)), best], characters, step)


def ctc_collapse(
    best: np.ndarray, best_p: np.ndarray, characters: Sequence[str], step: float = 0.0
) -> Recognition:
    """The text of a best-class path (T,) with its probabilities: repeats merged, blanks
    dropped, a character's confidence the best of its repeats. A compatibility ideograph in the
    model's list (PP-OCRv6 small holds 郎 and 凉 twice) is answered as the unified one.
    ``step``: the share of the crop's width a step of the path covers; where given, each
    character's position is the middle of its steps."""
    text: list[str] = []
    confs: list[float] = []
    runs: list[list[int]] = []  # each character's first and last step
    previous = 0
    for t, (cls, p) in enumerate(zip(best.tolist(), best_p.tolist(), strict=True)):
        if cls != 0:
            if cls != previous:
                text.append(characters[cls])
                confs.append(p)
                runs.append([t, t])
            else:
                confs[-1] = max(confs[-1], p)
                runs[-1][1] = t
        previous = cls
    confidence = float(np.mean(confs)) if confs else 0.0
    positions = tuple(round((a + b + 1) / 2 * step, 4) for a, b in runs) if step else ()
    rounded = tuple(round(c, 4) for c in confs)
    return Recognition(unify_radicals("".join(text)), confidence, rounded, positions)


def ctc_log_likelihood(probs: np.ndarray, labels: Sequence[int]) -> float:
    """log P(``labels`` | ``probs``) under CTC (class 0 the blank): every path of the (T, C)
    probability matrix that collapses to the labels, summed (the forward algorithm)."""
    logp = np.log(np.maximum(probs, 1e-30))
    if not len(labels):
        return float(logp[:, 0].sum())  # blanks all along
    path = np.zeros(2 * len(labels) + 1, dtype=np.int64)  # blank, label, blank, label, ... blank
    path[1::2] = labels
    # a step may skip the blank between two labels that differ
    skips = np.zeros(len(path), dtype=bool)
    skips[3::2] = path[3::2] != path[1:-2:2]
    alpha = np.full(len(path), -np.inf)
    alpha[: min(2, len(path))] = logp[0, path[:2]]
    for row in logp[1:]:
        stay, advance = alpha, np.concatenate(([-np.inf], alpha[:-1]))
        skip = np.where(skips, np.concatenate(([-np.inf, -np.inf], alpha[:-2])), -np.inf)
        alpha = np.logaddexp(np.logaddexp(stay, advance), skip) + row[path]
    return float(np.logaddexp.reduce(alpha[-2:]))


class CTCLineReader:
    """Width-bucketed batches through a CTC recognition network, decoded under allowlists.

    Subclasses set ``characters`` (class index -> character, 0 the blank), ``height`` and
    ``max_batch`` and implement :meth:`forward`.
    """

    characters: list[str]
    height: int
    max_batch: int
    decodes_on_device: bool = False
    """The network answers each step's best allowed class and its probability under the crops'
    class masks (:meth:`forward_best`) instead of every class's probability (:meth:`forward`)."""
    batch_sizes: tuple[int, ...] = ()
    """Sizes a batch is padded up to (rows of zeros), ascending; empty: batches as they come.
    A GPU runtime plans each input shape, slowly (docs/benchmarks.md, *GPU*): a few batch
    sizes keep the shapes it meets few."""
    widths: tuple[int, ...] = ()
    """Widths a batch is padded up to (columns of zeros), ascending; empty: each crop's own
    bucket. With :attr:`batch_sizes`, the input shapes a GPU meets are a fixed handful."""
    max_columns: int = 0
    """A batch's rows x width at most this (0: no bound): wide crops go in smaller batches. A
    GPU session keeps memory for the largest batch it has run, and 512 crops at the widest
    width asked 9 GB for one attention's softmax on an H200 (docs/benchmarks.md, *GPU*)."""

    def rows_for(self, width: int) -> int:
        """Most crops of ``width`` columns in one batch: ``max_batch``, fewer under
        :attr:`max_columns` (one of :attr:`batch_sizes` when those are fixed; at least one)."""
        rows = self.max_batch
        if self.max_columns:
            rows = max(1, min(rows, self.max_columns // width))
        if self.batch_sizes:
            rows = max((n for n in self.batch_sizes if n <= rows), default=self.batch_sizes[0])
        return rows

    def shapes(self) -> list[tuple[int, int]]:
        """The (rows, width) input shapes :meth:`recognize` can use, when both are fixed."""
        return [
            (rows, width)
            for rows in self.batch_sizes
            for width in self.widths
            if rows <= self.rows_for(width)
        ]

    def warm_up(self) -> None:
        """Runs each fixed input shape once (a GPU plans each), so that no request pays."""
        for rows, width in self.shapes():
            self.forward_unmasked(np.zeros((rows, 3, self.height, width), dtype=np.float32))

    def forward_unmasked(self, batch: np.ndarray) -> object:
        """The network alone on a batch, every class allowed (:meth:`forward_best` with open
        masks when the argmax is in the graph, else :meth:`forward`)."""
        if self.decodes_on_device:
            masks = np.ones((len(batch), len(self.characters)), dtype=bool)
            return self.forward_best(batch, masks)
        return self.forward(batch)

    def forward(self, batch: np.ndarray) -> np.ndarray:
        """(N, T, C) class probabilities of an (N, 3, height, W) batch."""
        raise NotImplementedError

    def forward_best(self, batch: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, T) best allowed classes and their probabilities, under (N, C) boolean masks."""
        raise NotImplementedError

    @cached_property
    def _class_index(self) -> dict[str, int]:
        return {ch: i for i, ch in enumerate(self.characters) if ch}

    @cached_property
    def _masks(self) -> dict[str, np.ndarray]:
        return {}

    def mask(self, allowlist: str | None) -> np.ndarray | None:
        """Boolean mask over classes allowed for ``allowlist`` (blank always allowed)."""
        if allowlist is None:
            return None
        cached = self._masks.get(allowlist)
        if cached is None:
            cached = np.zeros(len(self.characters), dtype=bool)
            cached[0] = True
            for ch in set(allowlist):
                if ch in self._class_index:
                    cached[self._class_index[ch]] = True
            self._masks[allowlist] = cached
        return cached

    def likelihoods(self, crop: np.ndarray, texts: Sequence[str]) -> list[float | None]:
        """How likely the network finds each of ``texts`` as ``crop``'s line: the natural log of
        its probability, every alignment of its characters summed (:func:`ctc_log_likelihood`).
        None for a text with a character the model does not know, and for every text where the
        network answers only its best class (:attr:`decodes_on_device`)."""
        if self.decodes_on_device:
            return [None] * len(texts)
        probs = np.asarray(self.forward(prepare_line(crop, self.height)[None]))[0]
        index = self._class_index
        return [
            ctc_log_likelihood(probs, [index[ch] for ch in text])
            if all(ch in index for ch in text)
            else None
            for text in texts
        ]

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        if len(crops) != len(allowlists):
            raise EngineError(f"{len(crops)} crops but {len(allowlists)} allowlists")
        results: list[Recognition] = [Recognition("", 0.0)] * len(crops)
        prepared = [prepare_line(c, self.height) for c in crops]
        buckets: dict[int, list[int]] = {}
        for i, image in enumerate(prepared):
            own = image.shape[2]
            buckets.setdefault(next((w for w in self.widths if w >= own), own), []).append(i)
        for width, indexes in sorted(buckets.items()):
            most = self.rows_for(width)
            for start in range(0, len(indexes), most):
                chunk = indexes[start : start + most]
                rows = next((n for n in self.batch_sizes if n >= len(chunk)), len(chunk))
                batch = np.zeros((rows, 3, self.height, width), dtype=np.float32)
                for row, i in enumerate(chunk):
                    batch[row, :, :, : prepared[i].shape[2]] = prepared[i]
                masks = [self.mask(allowlists[i]) for i in chunk]
                if self.decodes_on_device:
                    allowed = np.ones((rows, len(self.characters)), dtype=bool)
                    for row, mask in enumerate(masks):
                        if mask is not None:
                            allowed[row] = mask
                    best, best_p = self.forward_best(batch, allowed)
                    steps = width / best.shape[1]  # input columns a step of the path covers
                    for row, i in enumerate(chunk):
                        step = steps / line_width(crops[i], self.height)
                        results[i] = ctc_collapse(best[row], best_p[row], self.characters, step)
                else:
                    probs = self.forward(batch)
                    steps = width / probs.shape[1]
                    for row, i in enumerate(chunk):
                        step = steps / line_width(crops[i], self.height)
                        results[i] = ctc_greedy(probs[row], masks[row], self.characters, step)
        return results
