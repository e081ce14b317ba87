"""The extraction pipeline, in the order the data flows:

decode page -> register to the template -> crop and tighten each field -> recognise all crops in
one batched call -> normalise, validate and cross-check -> :class:`DocumentResult`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from extractor.crops import Crop, crop_fields
from extractor.engines import Recognition, Recognizer, get_engine
from extractor.fields import check_rules, check_value, resolve_allowlist
from extractor.loading import DEFAULT_DPI, Page, iter_pages, read_source
from extractor.qr import qr_values, read_qr
from extractor.registration import Alignment, register
from extractor.result import DocumentResult, FieldResult, PageResult, Timings
from extractor.templates import FieldSpec, Template, TemplateStore

MIN_CONFIDENCE = 0.6  # a field's mean character confidence below this is flagged
MIN_CHAR_CONFIDENCE = 0.5  # so is a field with any character below this


@contextmanager
def _timed(timings: Timings, stage: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        elapsed = (time.perf_counter() - start) * 1000
        setattr(timings, stage, round(getattr(timings, stage) + elapsed, 2))


@dataclass(slots=True)
class PreparedPage:
    """A registered page's field crops, waiting for recognition."""

    index: int
    template: Template
    alignment: Alignment
    crops: list[Crop]
    timings: Timings
    qr: str | None = None

    @property
    def images(self) -> list[np.ndarray]:
        return [c.image for c in self.crops]

    @property
    def allowlists(self) -> list[str | None]:
        return [resolve_allowlist(f.allowlist, f.kind) for f in self.template.fields]


class Extractor:
    """Extracts a template's fields from documents. Engines load once per process."""

    def __init__(
        self,
        engine: str | Recognizer = "ppocr",
        templates: TemplateStore | None = None,
        dpi: int = DEFAULT_DPI,
        min_confidence: float = MIN_CONFIDENCE,
        **engine_options: object,
    ) -> None:
        self.templates = templates or TemplateStore()
        self.engine = get_engine(engine, **engine_options) if isinstance(engine, str) else engine
        self.dpi = dpi
        self.min_confidence = min_confidence

    def extract(
        self,
        source: str | Path | bytes,
        template: str | Template,
        *,
        pages: Iterable[int] | None = None,
        name: str | None = None,
    ) -> DocumentResult:
        """Extract every page of ``source`` (a path or the document's bytes).

        ``pages`` selects 1-based page numbers. Raises :class:`~extractor.errors.InputError`
        for unreadable documents and :class:`~extractor.errors.TemplateNotFoundError` for an
        unknown template.
        """
        tpl = self.templates.get(template) if isinstance(template, str) else template
        data, label = read_source(source)
        wanted = None if pages is None else {p - 1 for p in pages}
        results = []
        stream = iter_pages(data, dpi=self.dpi, pages=wanted)
        while True:
            timings = Timings()
            with _timed(timings, "decode"):
                page = next(stream, None)
            if page is None:
                break
            results.append(self.extract_page(page, tpl, timings))
        return DocumentResult(
            file=name or label, template=tpl.name, engine=self.engine.name, pages=results
        )

    def extract_page(
        self, page: Page, template: Template, timings: Timings | None = None
    ) -> PageResult:
        """Every stage for one page. Callers that batch recognition across pages or requests
        use :meth:`prepare` and :meth:`finish` around their own ``engine.recognize`` call."""
        prepared = self.prepare(page, template, timings or Timings())
        if isinstance(prepared, PageResult):
            return prepared
        with _timed(prepared.timings, "recognize"):
            reads = self.engine.recognize(prepared.images, prepared.allowlists)
        return self.finish(prepared, reads)

    def prepare(
        self, page: Page, template: Template, timings: Timings
    ) -> PreparedPage | PageResult:
        """Register and crop: a page ready for recognition, or the result of an unmatched page."""
        with _timed(timings, "register"):
            alignment = register(page.image, template)
        if not alignment.matched or alignment.homography is None:
            return _unmatched(page, template, alignment, timings)
        with _timed(timings, "crop"):
            crops = crop_fields(page.image, alignment.homography, template)
            qr = read_qr(page.image, alignment.homography, template)
        return PreparedPage(page.index, template, alignment, crops, timings, qr)

    def finish(self, prepared: PreparedPage, reads: Sequence[Recognition]) -> PageResult:
        """Normalise, validate and cross-check the reads of a prepared page."""
        template = prepared.template
        with _timed(prepared.timings, "validate"):
            fields = {
                spec.name: self._field(spec, crop, read)
                for spec, crop, read in zip(template.fields, prepared.crops, reads, strict=True)
            }
            _apply_rules(template, fields)
            if prepared.qr:
                _cross_check_qr(template, prepared.qr, fields)
        status = "ok" if all(f.valid for f in fields.values()) else "needs_review"
        return PageResult(
            page=prepared.index + 1,
            template=template.name,
            status=status,
            matched=True,
            match_score=prepared.alignment.score,
            rotation_deg=prepared.alignment.rotation_deg,
            fields=fields,
            qr=prepared.qr,
            timings_ms=prepared.timings,
        )

    def _field(self, spec: FieldSpec, crop: Crop, read: Recognition) -> FieldResult:
        raw, confidence = read.text, read.confidence
        checked = check_value(spec, raw)
        errors = list(checked.errors)
        if raw and confidence < self.min_confidence:
            errors.append(f"low recognition confidence {confidence:.2f}")
        elif (
            len(read.char_confidences) == len(raw)
            and min(read.char_confidences, default=1) < MIN_CHAR_CONFIDENCE
        ):
            weakest = min(range(len(raw)), key=lambda i: read.char_confidences[i])
            errors.append(
                f"uncertain character {raw[weakest]!r} at {weakest + 1} "
                f"(confidence {read.char_confidences[weakest]:.2f})"
            )
        return FieldResult(
            value=checked.value,
            raw=raw,
            confidence=round(float(confidence), 4),
            valid=not errors and (checked.value is not None or not spec.required),
            errors=errors,
            box=_bounds(crop.quad) if crop.has_ink else None,
            source="roi",
        )


def _apply_rules(template: Template, fields: dict[str, FieldResult]) -> None:
    values = {name: f.value if not f.errors else None for name, f in fields.items()}
    for name, errors in check_rules(template, values).items():
        fields[name].errors.extend(errors)
        fields[name].valid = False


def _cross_check_qr(template: Template, payload: str, fields: dict[str, FieldResult]) -> None:
    for name, stated in qr_values(template, payload).items():
        field = fields[name]
        if field.value != stated:
            field.errors.append(f"the QR code says {stated}")
            field.valid = False


def _bounds(quad: np.ndarray) -> list[float]:
    x0, y0 = quad.min(axis=0)
    x1, y1 = quad.max(axis=0)
    return [
        round(float(x0), 1),
        round(float(y0), 1),
        round(float(x1 - x0), 1),
        round(float(y1 - y0), 1),
    ]


def _unmatched(
    page: Page, template: Template, alignment: Alignment, timings: Timings
) -> PageResult:
    return PageResult(
        page=page.index + 1,
        template=template.name,
        status="unmatched",
        matched=False,
        match_score=alignment.score,
        rotation_deg=alignment.rotation_deg,
        message=alignment.reason,
        timings_ms=timings,
    )
