"""The extraction pipeline, in the order the data flows:

decode page -> (born-digital PDF at the template's size: its text layer, done) -> register to
the template (or pick one: ``auto``) -> crop and tighten each field -> recognise all crops in one
batched call -> normalise and validate -> fallback (full-page OCR) where a page did not register
or a required field failed -> cross-check (rules, QR code, party registry:
:mod:`extractor.cross_check`) -> :class:`DocumentResult`.

:meth:`Extractor.prepare` and :meth:`Extractor.finish` split a page around recognition so that a
caller (the service's workers) can batch crops from many pages into one recogniser call.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Literal, NamedTuple

import cv2
import numpy as np

from extractor.bend import Bend
from extractor.blank import (
    blank_fields,
    doubt_absence_amid_failures,
    doubt_print_read_as_nothing,
    no_tax_id_for_a_person,
)
from extractor.covered import covered_names
from extractor.crops import Crop, crop_fields, cut_out, separate_ink
from extractor.cross_check import (
    Judge,
    another_way,
    check_parties,
    close_to_registered,
    cross_check,
)
from extractor.cut_off import doubt_cut_off, fields_cut_off, maybe_cut_off, prints_cut_across
from extractor.doubts import (
    DECIMALS,
    EARLY_END,
    LATE_START,
    LOW_CONFIDENCE,
    READ_AGAIN,
    REFITTED,
    UNCERTAIN_CHARACTER,
    UNENDED,
    flag,
    only_doubt,
    passes,
)
from extractor.engines import Recognition, Recognizer, get_engine
from extractor.engines.base import recognize_confirming
from extractor.errors import EngineError, TemplateError
from extractor.fallback import (
    MIN_LABEL_SCORE,
    LabelAlignment,
    LabelStarts,
    ReferenceLabels,
    align_by_labels,
    beside_label,
    flattened,
    lines_in_box,
    near_fields,
    norm,
    printed_as,
    rows_to_read,
    unflattened,
    written_date,
)
from extractor.fields import (
    DECIMAL_POINTS,
    check_value,
    ends_as_a_name,
    holding_rules,
    ideograph,
    is_valid_uscc,
    resolve_allowlist,
    rule_fields,
    weakest,
)
from extractor.fullpage import FullPageReader, Provider, TextLine, get_fullpage_ocr, mapped
from extractor.label_cache import reference_lines
from extractor.line_starts import doubt_late_starts, keep_a_late_start
from extractor.loading import DEFAULT_DPI, Page, Word, iter_pages, read_source
from extractor.lost_characters import doubt_lost_characters, keep_a_lost_character
from extractor.parties import (
    TRACKED_IN_A_RUN,
    Parties,
    PartyLearner,
    load_parties,
    same_name,
)
from extractor.places import Likelihoods, confirm_places, doubt_misread_places
from extractor.print_offset import print_offset
from extractor.qr import qr_values, read_qr
from extractor.registration import (
    Alignment,
    form_outline,
    forms_beside,
    ink_on_form,
    register,
)
from extractor.result import DocumentResult, FieldResult, PageResult, Timings
from extractor.second_look import keep_a_second_look, look_again, looked_again_only
from extractor.second_prints import check_second_prints, printed_alike
from extractor.tax_id_repair import repair_tax_ids
from extractor.templates import (
    AGAIN,
    AUTO,
    FieldKind,
    FieldSpec,
    SameRule,
    SumRule,
    Template,
    TemplateStore,
)
from extractor.textlayer import (
    LINE_MM,
    MARGIN_MM,
    join_words,
    page_fits,
    words_in_box,
)

FallbackMode = Literal["auto", "never", "always"]
Registration = Literal["frame", "labels", "text_layer"]
SURE_FRAME_SCORE = 0.9
"""With ``auto``, a frame match under this does not pick the template alone where the forms'
printed labels can (the fallback on): one form's frame matches another's outline and rules in
part (the national form scores 0.55-0.62 against the 数电票's, over its 0.5 threshold; a 数电票
0.85-0.88 against the national form's), and a page whose own form matches poorly (cut off
below: 0.40-0.55) went to the other. Right flat matches scored 0.954-1.0 on every fixture and
on 80 fresh heavy, geometry and 数电票 pages but the 2 that failed and one blurred photo (0.775);
bent pages match at 0.85 or more (:data:`~extractor.registration.BENT_SCORE`)."""
LABELS_OVER_FRAME = 0.7
"""A frame match under this (only a template with a lower threshold has one: the 数电票's, 0.5)
gives way to the page's printed labels where they align it: a 数电票 cut off below its 价税合计
row matched its own frame at 0.53-0.62, misplaced (0-7 of its 10 fields read; 8-10 aligned by
its labels). Over it the frame stands: a bent page's labels align it worse than its frame and
bend (folded by 5%: 240 against 262 of 264 fields with this at 0.9)."""
REACH_MM = 20.0  # how far beyond its box a field's label may have moved (fallback)
MAX_PICTURED = 0.2
"""A born-digital page whose images cover more than this share of it is not told by its text
layer alone (:meth:`Extractor._layer_lines`); a logo, a QR code or a seal cover a few percent."""
MIN_CONFIDENCE = 0.6  # a field's mean character confidence below this is flagged
MIN_CHAR_CONFIDENCE = 0.5  # so is a field with any character below this
MIN_NAME_CHAR_CONFIDENCE = 0.8
"""A name's bar for every character: no check digit, format or rule can catch a misread
character in a name. Measured on 68 fresh synthetic pages (seeds outside the fixtures; 32 heavy,
24 medium, 12 light): of the ROI path's names that passed at 0.5, the 7 wrong ones had a
weakest character of 0.57-0.62, the 111 right ones 0.51-1.0 (median 0.998); at 0.8, 6 of the 7
wrong names and 7 of the 111 right ones are flagged (at 0.9: 7 and 11)."""
MIN_CODE_CHAR_CONFIDENCE = 0.8
"""A code's bar for every digit: invoice codes, numbers and check codes carry no check digit
(only the QR code, when it is read, checks some of them). At 0.6 first (104 fresh pages of an
earlier pipeline: the one wrong code passed had a weakest digit of 0.51, right ones 0.598, 0.643,
0.743, then 0.89 and up); raised to 0.8 when, on 400 fresh heavy and geometry pages (seeds
20297620-639, ten kinds of form), the ROI codes passed with a weakest digit from 0.6 to 0.8 were
7 wrong (a check code's 0 read 9, an invoice code's 0 read 6, a 数电票 number's 0 read 6) and 1
right, and none passed between 0.8 and 0.9 (280 right, no wrong one, at 0.9 and up). On those
pages and the 400 of seeds 20297600-619: wrong but valid 18 -> 13, passing 8,253 -> 8,249 of
9,360 (a code flagged that was right, or read right by the fallback and flagged there)."""
MIN_SECOND_PRINT_CHAR_CONFIDENCE = 0.9
"""A second print's bar for every character (:attr:`FieldSpec.printed_again`): it is printed
small, and blur takes it first; a reading under this neither confirms nor changes the field.
Fixture geometry/0053's blurred 50837780 read 50037780, its weakest digit at 0.62; the second
prints that recovered a code cut at the photo's edge (fresh geometry pages 20269508, 20269522)
read every digit at 0.97 or more."""
MIN_FOUND_CODE_CHAR_CONFIDENCE = 0.9
"""A code's bar for every digit in a line the fallback found (not in its box): what it reads
there is full-page OCR's reading of the line and the recogniser's own of it, the same kind of
network twice on the same print, whose misreads agree (6 read for 8 by both). On 59 fresh pages
whose codes the fallback read (photographed A4 sheets, blurred e-invoice photos), the six
wrong codes that passed had a weakest digit of 0.61-0.85; the right ones 0.63-1.0, 9 of 44
under 0.9."""
NAME_START_MM = 10.0
"""A name is printed from the left of its box: a line the fallback finds for it that starts
further in than this (print offsets reach 5 mm) holds only its end ('有限公司' of a name whose
start full-page OCR did not find, fresh heavy page 20269205, passed as valid)."""
LOST_START_AGREEMENT = 0.6  # share of a name's characters its box's reading has in place
LABEL_END = 3  # a label's last characters and its colon read in a name's box: 名称：


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
    """The crops to read: every field's but those taken from the QR code (:attr:`stated`), then
    the second prints of those the form prints twice (``<field>.again``:
    :meth:`FieldSpec.again`)."""
    timings: Timings
    qr: str | None = None
    image: np.ndarray | None = None
    """The page, kept for the fallback path (None when the fallback is off)."""
    fallback: FallbackMode = "never"
    template_scores: dict[str, float] | None = None
    """Every template's match score, when the template was picked per page (auto)."""
    lines: list[TextLine] | None = None
    """Full-page OCR of the page, when auto-pick already ran it."""
    stated: dict[str, str] = dataclasses.field(default_factory=dict)
    """The fields taken from the QR code, neither cut out nor read (:attr:`Extractor.check_print`
    off): the values it states that pass the fields' checks."""
    down: float = 0.0
    """How far below the form's cells the page's data is printed (reference px; 0 under 1.5 mm:
    :func:`extractor.print_offset.print_offset`)."""

    cut_off: dict[str, str] = dataclasses.field(default_factory=dict)
    """The fields the image may have cut off, or something lying on the page cover, and why
    (:func:`~extractor.cut_off.fields_cut_off`, :func:`~extractor.covered.covered_names`)."""

    @property
    def down_mm(self) -> float:
        """:attr:`down` in mm, as the fallback places lines (0 but on a page its frame
        registered)."""
        return self.down / self.template.px_per_mm

    refitted: bool = False
    """Whether the page was cut through the match refitting every outline found
    (:attr:`Alignment.refitted`) because nothing else aligned it: its values are flagged unless
    another reading confirms them (:meth:`Extractor._read_refitted`)."""

    form: int = 1
    """Which of the forms on the page this is (:func:`~extractor.registration.forms_beside`:
    invoices photographed or scanned together), 1 for the first found."""
    others: list[PreparedPage] = dataclasses.field(default_factory=list)
    """The page's other forms (``form`` 2, 3...), each prepared as a page of its own: callers
    recognise and finish them with this one (:meth:`Extractor.extract_page`)."""
    repeats: dict[str, str] = dataclasses.field(default_factory=dict)
    """Fields cut out but not read, each taking the value of the field it repeats (a same rule:
    the total in words, the total), which the page's other readings confirm
    (:meth:`Extractor.recognize`)."""
    read: PageResult | None = None
    """The form's result, read already from the page's text layer (a born-digital sheet of
    several forms: each is a prepared page with no crops): :meth:`Extractor.finish` gives it."""

    @property
    def images(self) -> list[np.ndarray]:
        return [c.image for c in self.crops]

    @property
    def allowlists(self) -> list[str | None]:
        return _allowlists(self.crops)


class _Page(NamedTuple):
    """A page as the fallback re-reads its lines: the image, its homography (reference px ->
    page px), template, and bend (None: it lies flat, or the labels aligned it)."""

    image: np.ndarray
    homography: np.ndarray
    template: Template
    bend: Bend | None


_PageCheck = Callable[["PreparedPage", Sequence[Recognition | None]], Iterable[int]]
"""Names crops of a page given its readings (None: a crop not read yet)."""


def _columns(image: np.ndarray) -> float:
    """A crop's width over its height: at the recogniser's fixed input height, in proportion to
    the input columns it costs."""
    return image.shape[1] / image.shape[0]


def _allowlists(crops: Sequence[Crop]) -> list[str | None]:
    return [resolve_allowlist(c.spec.allowlist, c.spec.kind) for c in crops]


class Extractor:
    """Extracts a template's fields from documents. Engines load once per process."""

    def __init__(
        self,
        engine: str | Recognizer = "ppocr",
        templates: TemplateStore | None = None,
        dpi: int = DEFAULT_DPI,
        min_confidence: float = MIN_CONFIDENCE,
        fallback: FallbackMode = "auto",
        text_layer: bool = True,
        parties: Parties | str | Path | None = None,
        check_print: bool = False,
        learn_parties: bool = False,
        fullpage: FullPageReader | None = None,
        **engine_options: object,
    ) -> None:
        """``parties``: a party registry (:mod:`extractor.parties`, or its CSV file) that the
        names and tax ids read are checked against. ``check_print``: read the print of the
        fields the page's QR code states too, and flag a field whose print says otherwise; by
        default they are taken from the code unread (source ``qr``): the code is what the tax
        bureau issued, and reading its fields again is ~40% of the recogniser's work on a
        page (docs/benchmarks.md). ``learn_parties``: register, beside ``parties``, the
        parties :meth:`extract` has read valid in :data:`~extractor.parties.MIN_SEEN`
        documents (:class:`~extractor.parties.PartyLearner`), for the documents after them:
        a batch of one company's invoices names the same parties again and again, and a name
        the cheap model reads as learned is not read again with the small one. ``fullpage``:
        the fallback's full-page OCR (default: the process's own, loaded on first use), e.g.
        one in a process a pool's workers share (:mod:`extractor.fullpage_server`)."""
        self.templates = templates or TemplateStore()
        self.parties = load_parties(parties) if isinstance(parties, str | Path) else parties
        self._given_parties = self.parties or Parties({})
        self._learner = (
            PartyLearner(self.templates, most=TRACKED_IN_A_RUN) if learn_parties else None
        )
        self.engine = get_engine(engine, **engine_options) if isinstance(engine, str) else engine
        self.dpi = dpi
        self.min_confidence = min_confidence
        self.fallback = fallback
        self.text_layer = text_layer
        self.check_print = check_print
        self._fullpage = fullpage
        self._fullpage_on = _fullpage_device(engine_options)
        self._reference_labels: dict[tuple[str, Path | None], ReferenceLabels] = {}

    def fullpage_ocr(self) -> FullPageReader:
        """The full-page OCR given, else the process's on this extractor's device (loaded on
        first use)."""
        return self._fullpage or get_fullpage_ocr(*self._fullpage_on)

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
        tpl: Template | None
        if template == AUTO:
            tpl = None
        else:
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
            results.extend(self.extract_page(page, tpl, timings))
        document = DocumentResult(
            file=name or label,
            template=tpl.name if tpl is not None else AUTO,
            engine=self.engine.name,
            pages=results,
        )
        if self._learner is not None:
            self.learn(document.model_dump(mode="json"))
        return document

    def learn(self, document: Mapping[str, Any]) -> None:
        """With ``learn_parties``: count the parties a document's result (``DocumentResult``
        JSON) read, for the documents after it (:meth:`extract` does; a caller that runs the
        stages itself, as the service's workers do, calls this with each result)."""
        if self._learner is not None and self._learner.add(document):
            self.parties = self._given_parties.with_learned(self._learner.names)

    def extract_page(
        self, page: Page, template: Template | None, timings: Timings | None = None
    ) -> list[PageResult]:
        """Every stage for one page: a result for each form on it (one, but where invoices were
        photographed or scanned together). Callers that batch recognition across pages or
        requests use :meth:`prepare` and :meth:`finish` around their own recognition, for a
        prepared page and its :attr:`PreparedPage.others`."""
        prepared = self.prepare(page, template, timings or Timings())
        if isinstance(prepared, PageResult):
            return [prepared]
        forms = [prepared, *prepared.others]
        with _timed(prepared.timings, "recognize"):
            reads = self.recognize(forms)
        return [
            self.finish(form, form_reads) for form, form_reads in zip(forms, reads, strict=True)
        ]

    def prepare(
        self,
        page: Page,
        template: Template | None,
        timings: Timings,
        fallback: FallbackMode | None = None,
    ) -> PreparedPage | PageResult:
        """Register and crop: a page ready for recognition, or the result of a page that does not
        match the template when the fallback is off. An unmatched page with the fallback on is
        prepared with no crops; :meth:`finish` then takes the fallback path.

        ``template=None`` picks, per page, the template that matches best (``auto``): by its frame,
        and, when no frame matches and the fallback is on, by the printed labels of each
        template's form found by full-page OCR. A page that matches none is ``unmatched``, with
        every template's score and no fields.
        """
        mode = fallback or self.fallback
        candidates = [template] if template is not None else self.templates.all()
        if self.text_layer:
            for candidate in candidates:
                if page_fits(page, candidate):
                    with _timed(timings, "crop"):
                        result = self._read_text_layer(page, candidate, timings)
                    if result is not None:
                        return result
        with _timed(timings, "decode"):  # a born-digital PDF page is rendered only now
            image = page.image
        with _timed(timings, "register"):
            alignments = {c.name: (c, register(image, c)) for c in candidates}
        scores = None if template is not None else {n: a.score for n, (_, a) in alignments.items()}
        chosen, alignment = max(alignments.values(), key=lambda pair: pair[1].score)
        lines = None
        if template is not None and alignment.score < SURE_FRAME_SCORE:
            chosen, alignment, lines, scores = self._asked_or_another(
                page, image, template, alignment, mode, timings
            )
            candidates, alignments = [chosen], {chosen.name: (chosen, alignment)}
        sure = SURE_FRAME_SCORE if template is None else LABELS_OVER_FRAME
        if mode != "never" and alignment.score < sure:
            with _timed(timings, "fallback"):
                lines = lines or self._layer_lines(page) or self._page_lines(image, candidates)
                best = self._template_by_labels(lines, candidates)
            if best is not None:
                chosen, alignment = alignments[best]
                if alignment.matched and alignment.score < LABELS_OVER_FRAME:
                    by_labels = (
                        f"frame match {alignment.score:.2f} under {LABELS_OVER_FRAME}: "
                        "aligned by its printed labels"
                    )  # after what the alignment says already (the page is another form)
                    reason = "; ".join(filter(None, (alignment.reason, by_labels)))
                    alignment = dataclasses.replace(alignment, matched=False, reason=reason)
            elif not alignment.matched and template is None:
                if (refitted := _surely_refitted(alignments)) is None:
                    return _unmatched(page, None, alignment, timings, scores)
                chosen, alignment = refitted
        elif not alignment.matched and template is None:
            if (refitted := _surely_refitted(alignments)) is None:
                return _unmatched(page, None, alignment, timings, scores)
            chosen, alignment = refitted
        with _timed(timings, "register"):
            forms = _reading_order(chosen, [alignment, *forms_beside(image, chosen, alignment)])
        if self.text_layer and page.words is not None and alignment.matched:
            # a born-digital page of another size than its form: its words, mapped onto each
            # form by the frame registration found, still need no OCR (a sheet of two or four
            # 数电票 merged for printing: each form's words are those mapped onto it)
            read = self._read_forms_text(page, chosen, forms, timings, scores)
            if read is not None:
                return read
        keep = image if mode != "never" else None
        if not alignment.matched or alignment.homography is None:
            if mode == "never" and alignment.refitted is not None:  # nothing else aligns it
                prepared = self._cut_refitted(
                    page.index, image, chosen, alignment.refitted, timings
                )
                prepared.template_scores = scores
                return prepared
            if mode == "never":
                return _unmatched(page, chosen, alignment, timings)
            prepared = PreparedPage(page.index, chosen, alignment, [], timings, None, keep, mode)
            prepared.template_scores = scores
            prepared.lines = lines if lines is not None else self._layer_lines(page)
            return prepared
        # the page's decoding and registration are timed on the first form's timings
        cut = [
            self._cut(
                page.index, image, chosen, form, timings if n == 1 else Timings(), keep, mode, n
            )
            for n, form in enumerate(forms, start=1)
        ]
        prepared = cut[0]
        prepared.template_scores, prepared.others = scores, cut[1:]
        return prepared

    def _asked_or_another(
        self,
        page: Page,
        image: np.ndarray,
        asked: Template,
        alignment: Alignment,
        mode: FallbackMode,
        timings: Timings,
    ) -> tuple[Template, Alignment, list[TextLine] | None, dict[str, float] | None]:
        """A page asked to be read as ``asked`` whose frame matches it unsurely (``alignment``,
        under :data:`SURE_FRAME_SCORE`): the template whose form it is, when that is another
        of the store's (a 数电票 sent as ``vat_invoice``: the national form's frame matches its
        outline and rules at 0.65-0.88, and its boxes read the wrong lines), with the
        alignment, the page's lines when they were read, and every template's score. Another
        template is the page's when its frame matches better and surely, or better and the
        page's printed labels tell it (:meth:`_template_by_labels`, the fallback on); else the
        page is ``asked``'s, as read so far."""
        rest = [t for t in self.templates.all() if t.name != asked.name]
        with _timed(timings, "register"):
            others = {t.name: (t, register(image, t)) for t in rest}
        better = {n: pair for n, pair in others.items() if _better(pair[1], alignment)}
        if not better:
            return asked, alignment, None, None
        other, found = max(better.values(), key=lambda pair: pair[1].score)
        lines = None
        if found.score < SURE_FRAME_SCORE:
            if mode == "never":
                return asked, alignment, None, None
            rivals = [asked, *(t for t, _ in better.values())]
            with _timed(timings, "fallback"):
                lines = self._layer_lines(page) or self._page_lines(image, rivals)
                by_labels = self._template_by_labels(lines, rivals)
            if by_labels is None or by_labels == asked.name:
                return asked, alignment, lines, None
            other, found = better[by_labels]
        scores = {asked.name: alignment.score} | {n: a.score for n, (_, a) in others.items()}
        why = (
            f"asked for {asked.name}, the page is a {other.name} form: its frame matches at "
            f"{found.score:.2f}, {asked.name}'s at {alignment.score:.2f}"
        )
        return other, dataclasses.replace(found, reason=why), lines, scores

    def _template_by_labels(
        self, lines: list[TextLine], candidates: Sequence[Template]
    ) -> str | None:
        """Of ``candidates``, the template whose form's labels the page's ``lines`` show in
        place (a page no frame matched surely: :data:`SURE_FRAME_SCORE`): the one showing the
        largest share of its distinct labels, if any shows enough to tell templates apart
        (:data:`~extractor.fallback.MIN_LABEL_SCORE`); else the one whose labels found nearly
        all fit one map, 8 or more (a form torn or cut off below its upper half shows too few
        of its labels for the share, but as many in place as a page asked for as its template
        is aligned by: ``known``), if only one does. None: the labels tell no template."""
        aligned = {
            c.name: align_by_labels(lines, self.reference_labels(c), known=True) for c in candidates
        }
        best = max(aligned, key=lambda name: aligned[name].score)
        if aligned[best].score >= MIN_LABEL_SCORE and aligned[best].homography is not None:
            return best  # what align_by_labels passes without ``known``
        fits = [name for name, found in aligned.items() if found.homography is not None]
        return fits[0] if len(fits) == 1 else None

    def _cut(
        self,
        index: int,
        image: np.ndarray,
        template: Template,
        alignment: Alignment,
        timings: Timings,
        keep: np.ndarray | None,
        mode: FallbackMode,
        form: int = 1,
    ) -> PreparedPage:
        """The crops of the form ``alignment`` found on the page (``form``: which, of the forms
        on it), its QR code read and its print offset found: a page ready for recognition."""
        assert alignment.homography is not None
        with _timed(timings, "crop"):
            qr = read_qr(image, alignment.homography, template)
            stated = _stated(template, qr) if qr is not None and not self.check_print else {}
            on_form = alignment.on_form
            down = print_offset(on_form, template) if on_form is not None else 0.0
            homography, bend = alignment.homography, alignment.bend
            crops = crop_fields(image, homography, template, stated, bend, down, printed_again=True)
        prepared = PreparedPage(index, template, alignment, crops, timings, qr, keep, mode)
        prepared.stated, prepared.down, prepared.form = stated, down, form
        size, score = image.shape[:2], alignment.score
        cut_off = fields_cut_off(size, template, homography, down, score)
        prepared.cut_off = prints_cut_across(cut_off, crops, size)
        if on_form is not None:
            prepared.cut_off = covered_names(template, on_form) | prepared.cut_off
        return prepared

    def recognize(self, pages: Sequence[PreparedPage]) -> list[list[Recognition | None]]:
        """Every crop of ``pages`` read, in two engine calls at most (the service batches many
        pages' crops): each page's readings, in crop order. An engine that reads its doubtful
        crops a second time with a better model (the cascade) is told which of its first
        readings the page's other readings confirm (:meth:`_confirmed`): those are not read
        again. A field that repeats another (:meth:`_read_later`: the total in words) is read
        after the others, and only where what it repeats is in doubt: elsewhere its reading is
        None, and :attr:`PreparedPage.repeats` names the field whose value it takes."""
        reads: list[list[Recognition | None]] = [[None] * len(page.crops) for page in pages]
        later = [self._read_later(page) for page in pages]
        now = [
            [i for i in range(len(page.crops)) if i not in page_later]
            for page, page_later in zip(pages, later, strict=True)
        ]
        self._read(pages, now, reads)
        for page, page_reads, page_later in zip(pages, reads, later, strict=True):
            page.repeats = self._repeats(page, page_reads, page_later)
        needed = [
            [i for i in sorted(page_later) if page.crops[i].spec.name not in page.repeats]
            for page, page_later in zip(pages, later, strict=True)
        ]
        self._read(pages, needed, reads)
        return reads

    def _read(
        self,
        pages: Sequence[PreparedPage],
        which: Sequence[Sequence[int]],
        reads: list[list[Recognition | None]],
    ) -> None:
        """The crops ``which`` (per page, their indexes) read in one engine call, into ``reads``
        (per page, in crop order; what earlier calls read there is what the page's checks see
        beside this call's first readings)."""
        order = [(p, i) for p, indexes in enumerate(which) for i in indexes]
        if not order:
            return

        def asking(check: _PageCheck) -> Callable[[Sequence[Recognition | None]], list[int]]:
            """``check``, which names crops of one page given its readings, for the engine's
            first readings of this call's crops: the positions in this call it names."""

            def asked(first: Sequence[Recognition | None]) -> list[int]:
                seen = [list(page_reads) for page_reads in reads]
                for (p, i), read in zip(order, first, strict=True):
                    seen[p][i] = read
                named = {(p, i) for p, page in enumerate(pages) for i in check(page, seen[p])}
                return [k for k, crop in enumerate(order) if crop in named]

            return asked

        crops = [pages[p].crops[i] for p, i in order]
        got = recognize_confirming(
            self.engine,
            [crop.image for crop in crops],
            _allowlists(crops),
            asking(self._confirmed),
            asking(self._known) if self.parties else None,
        )
        for (p, i), read in zip(order, got, strict=True):
            reads[p][i] = read

    def _read_later(self, prepared: PreparedPage) -> set[int]:
        """The crops of fields that repeat another (a same rule's), read after the others: on a
        page whose QR code was decoded (its values vouch for the sums) and unless the print is
        checked, all of a rule's fields but the one of fewest input columns (the total rather
        than the total in words), or all of them where the code states one."""
        if self.check_print or not prepared.stated:
            return set()
        index = {crop.spec.name: i for i, crop in enumerate(prepared.crops)}
        later: set[int] = set()
        for rule in prepared.template.rules:
            if not isinstance(rule, SameRule):
                continue
            present = [index[name] for name in rule.fields if name in index]
            if any(name in prepared.stated for name in rule.fields):
                later.update(present)
            elif len(present) > 1:
                first = min(present, key=lambda i: _columns(prepared.crops[i].image))
                later.update(i for i in present if i != first)
        return later

    def _repeats(
        self, prepared: PreparedPage, reads: Sequence[Recognition | None], later: set[int]
    ) -> dict[str, str]:
        """Of the crops read later (``later``), the fields whose same rule's other field the QR
        code states or the page's readings so far (``reads``) confirm (:meth:`_confirmed`: a sum
        that holds with the code's amount): each with the field it takes its value from."""
        if not later:
            return {}
        sure = set(prepared.stated) | {
            prepared.crops[i].spec.name for i in self._confirmed(prepared, reads)
        }
        repeats = {}
        for rule in prepared.template.rules:
            if not isinstance(rule, SameRule):
                continue
            source = next((name for name in rule.fields if name in sure), None)
            if source is None:
                continue
            for i in later:
                name = prepared.crops[i].spec.name
                if name in rule.fields and name != source:
                    repeats[name] = source
        return repeats

    def _known(self, prepared: PreparedPage, reads: Sequence[Recognition | None]) -> list[int]:
        """The crops of the names whose party's tax id, as first read (``reads``), passes its
        checks and is registered: :meth:`_confirmed` may confirm a cheap reading of those. A
        party the registry does not hold is read by the small model only."""
        index = {crop.spec.name: i for i, crop in enumerate(prepared.crops)}
        found = []
        for party in prepared.template.parties if self.parties is not None else ():
            name, tax_id = index.get(party.name), index.get(party.tax_id)
            read = reads[tax_id] if tax_id is not None else None
            if name is None or tax_id is None or read is None:
                continue
            field = self._field(prepared.crops[tax_id].spec, read, None)
            if passes(field) and self.parties.name_for(field.value) is not None:
                found.append(name)
        return found

    def _confirmed(self, prepared: PreparedPage, reads: Sequence[Recognition | None]) -> set[int]:
        """The crops whose reading (``reads``: None for a crop not read yet) another reading
        of the page confirms as it is: the QR code states its value, or a rule holds with it
        (amount + tax = total to the cent, and no other way; the total in words stating the
        total), every field the rule names read valid (a value that passes its checks, each
        character at the field's bar), or the party registry gives the tax id read the name
        read (both passing their checks, in doubt or not: a name read exactly as registered for
        a registered tax id is not read so by chance), or one close to it
        (:func:`~extractor.cross_check.close_to_registered`) when the tax id is valid:
        :func:`~extractor.cross_check.check_parties` gives such a name the registered one, as it
        would give it a second reading close to it; or the form prints it twice and both
        prints read valid alike (:func:`~extractor.second_prints.printed_alike`); or it carries
        its own check: a tax id of 18 characters read valid, its check character (GB 32100)
        holding, which any one character read wrong, any two swapped or one lost or added would
        break. Two readings do not agree by chance: a second one could only undo them. (A reading
        in doubt is read again: it would send the page to the fallback.)"""
        template = prepared.template
        fields = _from_qr(prepared)
        fields.update(
            (crop.spec.name, self._field(crop.spec, read, None))
            for crop, read in zip(prepared.crops, reads, strict=True)
            if read is not None
        )
        values = {name: f.value if f.valid else None for name, f in fields.items()}
        stated = qr_values(template, prepared.qr) if prepared.qr else {}
        agreed = {name for name, value in values.items() if value and stated.get(name) == value}
        tax_ids = (c.spec.name for c in prepared.crops if c.spec.kind is FieldKind.tax_id)
        agreed.update(name for name in tax_ids if is_valid_uscc(values.get(name) or ""))
        agreed.update(printed_alike(template, values))
        passing = {name: f.value for name, f in fields.items() if passes(f)}
        for party in template.parties if self.parties is not None else ():
            name, tax_id = passing.get(party.name), passing.get(party.tax_id)
            registered = self.parties.name_for(tax_id)
            if name is None or registered is None:
                continue
            valid_tax_id = values.get(party.tax_id) is not None
            if (close_to_registered if valid_tax_id else same_name)(name, registered):
                agreed.update((party.name, party.tax_id))
        for rule in holding_rules(template, values):
            if isinstance(rule, SumRule) and another_way(rule, template, fields) is not None:
                continue
            agreed.update(rule_fields(rule))
        return {i for i, crop in enumerate(prepared.crops) if crop.spec.name in agreed}

    def finish(self, prepared: PreparedPage, reads: Sequence[Recognition | None]) -> PageResult:
        """Normalise and validate the reads of a prepared page, take the fallback path where it
        is called for, and cross-check the fields (rules, QR code)."""
        if prepared.read is not None:
            return prepared.read
        with _timed(prepared.timings, "validate"):
            found = _from_qr(prepared) | {
                crop.spec.name: self._field(crop.spec, read, crop.quad if crop.has_ink else None)
                for crop, read in zip(prepared.crops, reads, strict=True)
                if read is not None
            }
            found.update(_repeated(prepared, found))
        with _timed(prepared.timings, "recognize"):  # mostly: a crop is cut, then read
            crops, reads = self._read_wider(prepared.crops, reads, found)
        with _timed(prepared.timings, "validate"):
            order = [spec.name for spec in prepared.template.fields]
            fields = {name: found[name] for name in order if name in found}
            doubt_cut_off(prepared.template, prepared.cut_off, fields)
            check_second_prints(prepared.template, found, fields)  # which may settle a cut print
            blank = blank_fields(crops, prepared.template)
            no_tax_id_for_a_person(prepared.template, fields, blank)
            doubt_print_read_as_nothing(crops, reads, blank, fields)
            doubt_late_starts(prepared.template, crops, fields)
            doubt_lost_characters(crops, reads, fields)
        with _timed(prepared.timings, "recognize"):
            look_again(self.engine, crops, reads, fields)
            scores = getattr(self.engine, "likelihoods", None)
            judge = _crop_judge(scores, crops)
            repair_tax_ids(judge, prepared.template, fields)
        with _timed(prepared.timings, "validate"):
            by_name = {c.spec.name: r for c, r in zip(crops, reads, strict=True) if r is not None}
            confirm_places(prepared.template, by_name, MIN_NAME_CHAR_CONFIDENCE, fields)
        if self.parties is not None:  # before the fallback: it reads the rows of invalid fields
            check_parties(prepared.template, self.parties, fields)
        registration: Registration | None = "frame" if prepared.alignment.matched else None
        if registration is None and (refitted := self._read_refitted(prepared)) is not None:
            return refitted
        missed = None  # why the fallback could not run, on a page the template's boxes read
        if self._wants_fallback(prepared, fields, judge):
            try:
                with _timed(prepared.timings, "fallback"):
                    fields, labels = self._fallback(prepared, fields)
            except EngineError as exc:
                if registration is None:  # nothing read without it
                    raise
                missed, labels = f"the fallback could not run ({exc}); fields left flagged", None
            if registration is None and labels is not None:
                registration = "labels"
        with _timed(prepared.timings, "recognize"):  # whoever read them: the same print
            doubt_misread_places(scores, prepared.template, crops, fields)
        if prepared.refitted:
            for field in fields.values():
                if field.valid and field.source != "qr":
                    flag(field, REFITTED)
        result = _conclude(prepared, fields, registration, self.parties, judge)
        if missed:
            result.message = f"{result.message}; {missed}" if result.message else missed
        return result

    def _read_refitted(self, prepared: PreparedPage) -> PageResult | None:
        """A page no frame matched and its printed labels do not align, read through the match
        refitting every outline on it found (:attr:`Alignment.refitted`), if any: cut, read and
        finished as a page its frame matched, the full-page OCR already run kept for its
        fallback. Each value no other reading confirms (a rule, the QR code, the registry) is in
        doubt (:data:`~extractor.doubts.REFITTED`). None: no such match, or the labels align
        the page (its label path reads names such matches misread on blurred photos)."""
        refitted, image = prepared.alignment.refitted, prepared.image
        if refitted is None or image is None:
            return None
        with _timed(prepared.timings, "fallback"):  # full-page OCR, which the labels need
            if prepared.lines is None:
                prepared.lines = self._page_lines(image, [prepared.template])
            reference = self.reference_labels(prepared.template)
            if align_by_labels(prepared.lines, reference, known=True).homography is not None:
                return None
        again = self._cut_refitted(
            prepared.index, image, prepared.template, refitted, prepared.timings, prepared.fallback
        )
        # lines a glance found none in (no label at a glance) are read again row by row
        again.lines, again.template_scores = prepared.lines or None, prepared.template_scores
        with _timed(again.timings, "recognize"):
            (reads,) = self.recognize([again])
        return self.finish(again, reads)

    def _cut_refitted(
        self,
        index: int,
        image: np.ndarray,
        template: Template,
        refitted: Alignment,
        timings: Timings,
        mode: FallbackMode = "never",
    ) -> PreparedPage:
        """A page cut through the match refitting every outline found
        (:attr:`Alignment.refitted`), its values to be flagged unless confirmed
        (:attr:`PreparedPage.refitted`)."""
        reason = f"{REFITTED}: nothing else aligned it"
        keep = image if mode != "never" else None
        cut = self._cut(
            index,
            image,
            template,
            dataclasses.replace(refitted, reason=reason),
            timings,
            keep,
            mode,
        )
        cut.refitted = True
        return cut

    def _read_wider(
        self,
        crops: Sequence[Crop],
        reads: Sequence[Recognition | None],
        fields: dict[str, FieldResult],
    ) -> tuple[list[Crop], list[Recognition | None]]:
        """Fields (and second prints) whose print runs out of their crop, read again from their
        wider crop (:attr:`Crop.wider`); a wider reading that passes replaces them where it is
        another value, or the same one read in doubt (the cut character). Also where the first
        reading passed: a character cut in half reads as another one (3 as 1) that only a check
        character would catch, and a check code or a number has none. The crops and reads with
        the wider ones in their place, for the checks after."""
        crops, reads = list(crops), list(reads)
        cut = [(k, c.wider()) for k, c in enumerate(crops) if c.wider is not None]
        again = [(k, crop) for k, crop in cut if crop is not None]
        if not again:
            return crops, reads
        wider = self.engine.recognize(
            [c.image for _, c in again], _allowlists([c for _, c in again])
        )
        for (k, crop), read in zip(again, wider, strict=True):
            field, first = self._field(crop.spec, read, crop.quad), fields[crop.spec.name]
            if field.valid and (field.value != first.value or not first.valid):
                field.note = "read from a wider crop: the print runs out of the field's box"
                if first.valid:
                    field.note += f" (its crop read {first.value}, a character cut)"
                fields[crop.spec.name] = field
                crops[k], reads[k] = crop, read
        return crops, reads

    # -- born-digital PDFs ----------------------------------------------------------------------

    def _layer_lines(self, page: Page) -> list[TextLine] | None:
        """The lines of a born-digital page's text layer in its image's px, each as printed: what
        full-page OCR finds on it (its fonts' text, exactly), in ~1 ms instead of seconds. A
        page that does not register looks for the form's labels in them, so that a letter or a
        contract in a PDF beside its invoices is found to be no invoice without OCR. None for a
        page without a text layer (or with the text layer off), and for one whose images cover
        more than :data:`MAX_PICTURED` of it: a form may be printed in them (a photo of an
        invoice with a typed caption), which full-page OCR reads."""
        if not self.text_layer or page.words is None or page.pictured > MAX_PICTURED:
            return None
        scale = (page.dpi or self.dpi) / 25.4  # mm -> px of the page's rendering
        return [TextLine(line.quad * scale, line.text, 1.0) for line, _ in _text_lines(page.words)]

    def _read_forms_text(
        self,
        page: Page,
        template: Template,
        forms: Sequence[Alignment],
        timings: Timings,
        scores: dict[str, float] | None,
    ) -> PageResult | PreparedPage | None:
        """The page's forms read from its text layer through their registrations: the one
        form's result, or, for several, the first's prepared page holding the others, each with
        its result read (:attr:`PreparedPage.read`); None when a form's required field is not
        in the text layer (the page then takes the image path)."""
        results = []
        for n, form in enumerate(forms, start=1):
            form_timings = timings if n == 1 else Timings()
            with _timed(form_timings, "crop"):
                result = self._read_text_layer(page, template, form_timings, form, n)
            if result is None:
                return None
            result.template_scores = scores
            results.append(result)
        if len(results) == 1:
            return results[0]
        prepared = [
            PreparedPage(page.index, template, form, [], result.timings_ms, form=n, read=result)
            for n, (form, result) in enumerate(zip(forms, results, strict=True), start=1)
        ]
        prepared[0].others = prepared[1:]
        return prepared[0]

    def _read_text_layer(
        self,
        page: Page,
        template: Template,
        timings: Timings,
        alignment: Alignment | None = None,
        form: int = 1,
    ) -> PageResult | None:
        """The page's fields from its PDF text layer, or None when a required one is not there
        (the page then takes the image path). Without ``alignment`` the page is the form at its
        printed size, so its millimetres are the template's; with one (a page of another size,
        registered by its frame), the words are first mapped onto the template through it, and
        those that land off its page (another ``form`` on the sheet) left out."""
        assert page.words is not None
        dpi = page.dpi or self.dpi
        # template mm -> page px
        if alignment is None or alignment.homography is None:
            words, to_page = page.words, np.diag([dpi / 25.4, dpi / 25.4, 1.0])
        else:
            ppm = template.px_per_mm
            to_page = alignment.homography @ np.diag([ppm, ppm, 1.0])
            words = _words_on_template(page.words, dpi, to_page)
            words = [w for w in words if _on_the_page(w, template)]
        fields: dict[str, FieldResult] = {}
        labels = {norm(f.label) for f in template.fields if f.label}
        used: set[int] = set()  # the words a valid field was read from
        for spec in template.fields:
            inside = words_in_box(words, spec, MARGIN_MM, labels)
            text = join_words(inside, spec.label)
            read = Recognition(text, 1.0 if text else 0.0)
            field = self._field(spec, read, None, in_text_layer=True)
            field.box = _bounds(mapped(_words_quad(inside), to_page)) if inside else None
            field.source = "text_layer"
            fields[spec.name] = field
            if field.valid:
                used.update(id(w) for w in inside)
        self._text_beside_labels(words, to_page, template, fields, used, labels)
        no_tax_id_for_a_person(template, fields, {n for n, f in fields.items() if not f.raw})
        if not all(fields[f.name].valid for f in template.fields if f.required):
            return None
        if alignment is None:
            alignment = Alignment(True, 1.0, None)
        prepared = PreparedPage(page.index, template, alignment, [], timings, form=form)
        return _conclude(prepared, fields, "text_layer", self.parties)

    def _text_beside_labels(
        self,
        words: list[Word],
        to_page: np.ndarray,
        template: Template,
        fields: dict[str, FieldResult],
        used: set[int],
        labels: set[str],
    ) -> None:
        """Fields whose box holds no valid text, from the text layer (``words`` in the
        template's mm) beside their printed label (another revision of the layout, whose cells
        moved), in place; each word serves one field only (amount and tax share the label 合计).
        ``labels``: the form's printed labels, normalised, which are never a value."""
        to_mm = np.diag([1 / template.px_per_mm, 1 / template.px_per_mm, 1.0])
        grouped = _text_lines([w for w in words if id(w) not in used])
        for spec in template.fields:
            if fields[spec.name].valid:
                continue
            lines = [line for line, _ in grouped]
            near = _reach(spec, template, to_mm)
            found = beside_label(lines, spec, near, labels, row=True, alone=_alone(spec, template))
            if found is None:
                continue
            text, _, quad = found
            field = self._field(spec, Recognition(text, 1.0), mapped(quad, to_page), True)
            if field.valid:
                field.source = "text_layer"
                field.note = "read beside its label: the text is not in the template's box"
                fields[spec.name] = field
                used.update(id(w) for line, held in grouped if line.quad is quad for w in held)
                grouped = _text_lines([w for w in words if id(w) not in used])

    # -- fallback -----------------------------------------------------------------------------

    def _wants_fallback(
        self, prepared: PreparedPage, fields: dict[str, FieldResult], judge: Judge | None = None
    ) -> bool:
        if prepared.image is None or prepared.fallback == "never":
            return False
        if prepared.fallback == "always" or not prepared.alignment.matched:
            return True
        doubted = _doubted(prepared, fields, judge)
        return any(prepared.template.field(name).required for name in doubted)

    def _fallback(
        self, prepared: PreparedPage, fields: dict[str, FieldResult]
    ) -> tuple[dict[str, FieldResult], LabelAlignment | None]:
        """Full-page OCR; for every field not yet valid, the first valid reading of: the field
        box re-read with the constrained recogniser on a label-aligned page (unmatched pages),
        the page's lines inside the box, the line beside the field's label."""
        template = prepared.template
        image = prepared.image
        assert image is not None
        lines = (
            prepared.lines if prepared.lines is not None else self._fallback_lines(prepared, fields)
        )
        reference = self.reference_labels(template)
        labels = align_by_labels(lines, reference, known=True)
        homography = (
            prepared.alignment.homography if prepared.alignment.matched else labels.homography
        )
        bend = prepared.alignment.bend if prepared.alignment.matched else None
        if bend is not None:
            lines = flattened(lines, prepared.alignment.homography, bend)
        second: dict[str, FieldResult] = {}
        if not prepared.alignment.matched and labels.homography is not None:
            crops = crop_fields(image, labels.homography, template)
            reads = self.engine.recognize([c.image for c in crops], _allowlists(crops))
            second = {
                c.spec.name: self._field(c.spec, read, c.quad if c.has_ink else None)
                for c, read in zip(crops, reads, strict=True)
            }
            no_tax_id_for_a_person(template, second, blank_fields(crops, template))
            doubt_late_starts(template, crops, second)
            doubt_lost_characters(crops, reads, second)
            look_again(self.engine, crops, reads, second)
        page = _Page(image, homography, template, bend) if homography is not None else None

        def readings(spec: FieldSpec) -> Iterator[FieldResult | None]:
            """The field's readings, first choice first: as read, re-read on the label-aligned
            page, the page's lines in its box, the line beside its label, a date's line written
            out in reach (:func:`written_date`), the one line printed as only its value is
            (:func:`printed_as`). Each is made when asked for: a line's reading
            can cost a second recognition of it."""
            yield fields.get(spec.name)
            yield second.get(spec.name)
            if homography is not None:
                found = lines_in_box(lines, spec, template, homography, prepared.down_mm)
                yield self._from_text(spec, found, page)
            near = _reach(spec, template, homography) if homography is not None else None
            alone = _alone(spec, template)
            found = beside_label(lines, spec, near, reference.texts, alone=alone)
            yield self._from_text(spec, found, page)
            yield self._from_text(spec, written_date(lines, spec, near), page)
            yield self._from_text(spec, printed_as(lines, spec), page)

        merged: dict[str, FieldResult] = {}
        for spec in template.fields:
            present = []
            for reading in readings(spec):  # up to the first valid one: the later would not win
                if reading is not None:
                    present.append(reading)
                    if reading.valid:
                        break
            if not present and homography is None:
                continue  # nothing aligns the page to the form: report only what was found
            # the first valid reading; else the surest of those only in doubt (their values
            # pass their checks), but not a line found late in its box whose start another
            # holds; else the first with a value
            doubtful = [c for c in present if c.value and only_doubt(c)]
            doubtful = [c for c in doubtful if not _end_of_another(c, doubtful)]
            own = fields.get(spec.name)
            cut = own if own is not None and maybe_cut_off(own) else None
            merged[spec.name] = chosen = (
                next((c for c in present if c.valid), None)
                or max(doubtful, key=lambda c: c.confidence, default=None)
                or next((c for c in present if c.value), None)
                or cut  # read empty: the image may have cut it off, not the form left it out
                or _empty(spec)
            )
            if spec.kind is FieldKind.name and own is not None and chosen is not own:
                _doubt_a_lost_start(chosen, own.raw, spec.label)
                _doubt_a_lost_end(chosen, own.raw)
            for earlier in (own, second.get(spec.name)):  # read in its box: by frame, by labels
                if earlier is not None:  # its doubts, if it has them, where they still hold
                    keep_a_late_start(chosen, earlier)
                    keep_a_lost_character(chosen, earlier)
                    keep_a_second_look(chosen, earlier)
        if homography is not None:  # whichever reading won, from a box cut off the image or not
            cut_off = prepared.cut_off
            if not prepared.alignment.matched:  # aligned by its labels
                cut_off = fields_cut_off(image.shape[:2], template, homography)
                on_form = ink_on_form(image, template, homography)
                cut_off = covered_names(template, on_form) | cut_off
            kept = {name for name, field in merged.items() if field is fields.get(name)}
            doubt_cut_off(template, cut_off, merged, kept)
        return merged, labels if labels.homography is not None else None

    def _fallback_lines(
        self, prepared: PreparedPage, fields: dict[str, FieldResult]
    ) -> list[TextLine]:
        """Full-page OCR of the page; on a page its frame registered (unless the fallback is
        ``always``), of the rows that hold the fields not yet valid only (:func:`rows_to_read`),
        and of their lines only those near those fields are recognised (:func:`near_fields`).
        The rows of fields the cross-checks would settle are read too: reading only those of
        the fields still in doubt (:func:`_doubted`) read other lines differently (116 fresh
        pages, 1,326 fields right against 1,328 of 1,392)."""
        image, alignment = prepared.image, prepared.alignment
        assert image is not None
        views = keep = None
        if alignment.matched and alignment.homography is not None and prepared.fallback != "always":
            template = prepared.template
            doubtful = [spec for spec in template.fields if not fields[spec.name].valid]
            settled = [spec for spec in template.fields if fields[spec.name].valid]
            views = rows_to_read(doubtful, template, alignment.homography)
            form = self.reference_labels(template).lines
            down = prepared.down_mm
            keep = near_fields(
                doubtful, template, alignment.homography, settled, form, down, alignment.bend
            )
        elif not alignment.matched:
            return self._page_lines(image, [prepared.template])
        return self.fullpage_ocr()(image, views, keep)

    def _page_lines(self, image: np.ndarray, templates: Sequence[Template]) -> list[TextLine]:
        """Full-page OCR of a page no frame registered on, if a glance at its lines' starts finds
        enough of the labels of one of ``templates``' forms to find a field by
        (:class:`~extractor.fallback.LabelStarts`, :meth:`FullPageReader.shows`); no lines if
        it does not: the page is none of those forms (a cover letter, a delivery note), and no
        label would align it or name a field on it."""
        ocr = self.fullpage_ocr()
        starts = LabelStarts((t, self.reference_labels(t)) for t in templates)
        return ocr(image) if ocr.shows(image, starts) else []

    def reference_labels(self, template: Template) -> ReferenceLabels:
        """The printed labels of the template's reference form (read once per process, and
        kept on disk for the next: :mod:`extractor.label_cache`)."""
        key = (template.name, template.reference_image_path)
        if key not in self._reference_labels:
            path, ocr = template.reference_image_path, self.fullpage_ocr()
            lines = reference_lines(path, ocr.setting, ocr) if path and path.is_file() else None
            if lines is None:
                raise TemplateError(f"template {template.name!r}: cannot read its reference image")
            self._reference_labels[key] = ReferenceLabels(lines, template.px_per_mm)
        return self._reference_labels[key]

    def _from_text(
        self,
        spec: FieldSpec,
        found: tuple[str, float, np.ndarray] | None,
        page: _Page | None = None,
    ) -> FieldResult | None:
        """A field from a line the full-page OCR found. Names and codes have no check digit,
        and full-page OCR gives one score per line, so their line is read again by the
        constrained recogniser (``page``: the image, its homography and bend, the template):
        its per-character confidences then count as on the ROI path, and a second reading that
        does not hold the first flags the field. A name's line that starts well into its box
        holds only the name's end."""
        if found is None:
            return None
        text, score, quad = found
        read, doubts = Recognition(text, score), []
        bar = MIN_FOUND_CODE_CHAR_CONFIDENCE if spec.kind is FieldKind.code else None
        on_page = quad  # the lines of a bent page were flattened (:func:`flattened`)
        if page is not None and page.bend is not None:
            on_page = unflattened(quad, page.homography, page.bend)
        if spec.kind in (FieldKind.name, FieldKind.code) and page is not None:
            outline = mapped(quad, np.linalg.inv(page.homography))  # reference px
            again = self._read_line_again(page, outline)
            read, disagreement = _within(text, score, again)
            doubts = [disagreement] if disagreement is not None else []
            if disagreement is not None and spec.kind is FieldKind.code:
                second = self._field(spec, again, on_page, bar=bar)
                # the constrained reading of the line, sure of every digit (reading nothing
                # passes as an optional field left blank, which a line found is not)
                if second.valid and second.value is not None:
                    second.source = "fallback"
                    return second
            late = outline[:, 0].min() / page.template.px_per_mm - spec.box.x  # mm into its box
            if spec.kind is FieldKind.name and late > NAME_START_MM:
                doubts.append(f"{LATE_START} {late:.0f} mm into its box: its start may be missing")
        result = self._field(spec, read, on_page, bar=bar)
        if doubts:
            result.errors.extend(doubts)
            result.valid = False
        result.source = "fallback"
        return result

    def _read_line_again(self, page: _Page, outline: np.ndarray) -> Recognition:
        """The page's line whose corners on the form are ``outline`` (reference px), cut out
        upright on the form's axes (so an upside-down page reads the right way up) and through
        its bend, form ink dropped, read by the engine."""
        (x0, y0), (x1, y1) = outline.min(axis=0), outline.max(axis=0)
        pad = max(3.0, 0.25 * (y1 - y0))
        size = (max(1, round(x1 - x0 + 2 * pad)), max(1, round(y1 - y0 + 2 * pad)))
        crop, _ = cut_out(page.image, page.homography, (x0 - pad, y0 - pad), size, page.bend)
        clean, _ = separate_ink(crop, page.template.px_per_mm)
        return self.engine.recognize([clean], [None])[0]

    def _field(
        self,
        spec: FieldSpec,
        read: Recognition,
        quad: np.ndarray | None,
        in_text_layer: bool = False,
        bar: float | None = None,
    ) -> FieldResult:
        """The field ``spec`` as ``read`` (in a PDF's text layer: as written, ``in_text_layer``;
        else recognised, in doubt where the reading is unsure, a character under ``bar``, by
        default its kind's, or a name ends mid-word)."""
        raw, confidence = read.text, read.confidence
        checked = check_value(spec, raw)
        errors = list(checked.errors)
        at = weakest(spec.kind, raw, read.char_confidences, checked)  # of those that count
        if raw and confidence < self.min_confidence:
            errors.append(f"{LOW_CONFIDENCE} {confidence:.2f}")
        elif at is not None and read.char_confidences[at] < (bar or _char_bar(spec)):
            errors.append(
                f"{UNCERTAIN_CHARACTER} {raw[at]!r} at {at + 1} "
                f"(confidence {read.char_confidences[at]:.2f})"
            )
        unended = spec.kind is FieldKind.name and not ends_as_a_name(checked.value or "")
        if unended and not in_text_layer:
            errors.append(f"{UNENDED} (…公司, …学校, …店): read short of its end?")
        shows_digits = spec.decimals is not None and any(ch.isdigit() for ch in raw)  # not ***
        if shows_digits and checked.value is not None and not checked.errors:
            shown = _decimals_read(raw)
            if shown != spec.decimals:
                unit = "decimal" if shown == 1 else "decimals"
                errors.append(f"{DECIMALS} {shown} {unit} where {spec.decimals} are printed")
        return FieldResult(
            value=checked.value,
            raw=raw,
            confidence=round(float(confidence), 4),
            valid=not errors and (checked.value is not None or not spec.required),
            errors=errors,
            box=_bounds(quad) if quad is not None else None,
            source="roi",
            note=checked.note,
        )


def _end_of_another(field: FieldResult, others: list[FieldResult]) -> bool:
    """Whether ``field`` is a name's line found late in its box (its start may be missing) whose
    value ends another reading's: that one holds the start too (the box's own reading, flagged
    for one uncertain character, against the fallback's surer '滨分公司' of a name ending so)."""
    value = str(field.value)
    return any(e.startswith(LATE_START) for e in field.errors) and any(
        str(other.value).endswith(value) and other.value != field.value for other in others
    )


def _doubt_a_lost_start(field: FieldResult, own: str, label: str | None = None) -> None:
    """A name the fallback found that the box's own reading (``own``, flagged) holds with one
    to three characters more in front: the full-page line began after the name's first
    characters (a rule across 广 hid it from the detector, and the line re-read from where it
    began lacks it too). The box's first characters are put back in front, and the name is
    flagged: two partial readings joined. Characters that end the field's printed ``label``
    (称 of 名称, its colon) are the form's, read in the box beside the name: no doubt; nor are
    those up to a colon among the box's first characters, however read (本： for 称：)."""
    value = field.value or ""
    own = _after_a_label(own)
    extra = len(own) - len(value)
    if not value or not 1 <= extra <= 3:
        return
    front = norm(own[:extra])
    if label and (not front or norm(label).endswith(front)):
        return
    if value.startswith(own[:extra]):  # the line starts as the box does: the extra is inside
        return
    same = sum(a == b for a, b in zip(own[extra:], value, strict=True))
    if same >= LOST_START_AGREEMENT * len(value):
        field.value = own[:extra] + value
        field.errors.append(f"{LATE_START} after {own[:extra]!r}, read in its box")
        field.valid = False


def _after_a_label(text: str) -> str:
    """``text`` after a colon among its first :data:`LABEL_END` characters: the end of a
    field's printed label read in its box (a name never holds a colon)."""
    at = max(text.find(":", 0, LABEL_END), text.find("：", 0, LABEL_END))
    return text[at + 1 :] if at >= 0 else text


def _doubt_a_lost_end(field: FieldResult, own: str) -> None:
    """A name the fallback found, passing, whose end the box's own reading (``own``, flagged)
    holds and goes on from with two ideographs or more: the full-page line ended before the
    name did (a seal's ring across it cut the detector's line short: 深圳中美卓东物业管理 of
    …物业管理股份有限公司 passed). Flagged, naming what the box read after it; the value is
    left as found, as that reading is in doubt (and may be a seal's text)."""
    value = field.value or ""
    if not value or not field.valid:
        return
    matcher = SequenceMatcher(None, own, value, autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size]
    if not blocks or sum(block.size for block in blocks) < LOST_START_AGREEMENT * len(value):
        return
    last = blocks[-1]
    if last.b + last.size < len(value) - 1:  # the name's end is not in the box's reading
        return
    rest = own[last.a + last.size :]
    if sum(ideograph(ch) for ch in rest) >= 2:
        field.errors.append(f"{EARLY_END} before {rest!r}, read after it in its box")
        field.valid = False


def _words_on_template(words: list[Word], dpi: float, to_page: np.ndarray) -> list[Word]:
    """The page's words (mm on the page) in the template's mm: each word's corners mapped
    back through ``to_page`` (template mm -> page px), then its upright bounds."""
    ppm = dpi / 25.4
    corners = np.array(
        [[(w.x0, w.y0), (w.x1, w.y0), (w.x1, w.y1), (w.x0, w.y1)] for w in words], np.float64
    )
    back = cv2.perspectiveTransform(corners.reshape(-1, 1, 2) * ppm, np.linalg.inv(to_page))
    back = back.reshape(-1, 4, 2)
    lo, hi = back.min(axis=1), back.max(axis=1)
    return [
        Word(float(a[0]), float(a[1]), float(b[0]), float(b[1]), w.text)
        for w, a, b in zip(words, lo, hi, strict=True)
    ]


def _on_the_page(word: Word, template: Template) -> bool:
    """Whether ``word`` (in the template's mm) lies on the template's page."""
    x, y = (word.x0 + word.x1) / 2, (word.y0 + word.y1) / 2
    return 0 <= x <= template.page.width_mm and 0 <= y <= template.page.height_mm


def _words_quad(words: list[Word]) -> np.ndarray:
    x0, y0 = min(w.x0 for w in words), min(w.y0 for w in words)
    x1, y1 = max(w.x1 for w in words), max(w.y1 for w in words)
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32)


def _within(text: str, score: float, again: Recognition) -> tuple[Recognition, str | None]:
    """``text`` with the per-character confidences of the same characters in ``again`` (a
    second reading of its line, which may also hold the field's label), or, when ``again``
    does not hold it (spaces and colons aside), ``text`` as it was and why it is in doubt."""
    kept = [
        (char, conf)
        for char, conf in zip(again.text, again.char_confidences, strict=False)
        if norm(char)
    ]
    at = "".join(char for char, _ in kept).find(norm(text))
    if not norm(text) or at < 0 or len(again.char_confidences) != len(again.text):
        return Recognition(text, score), f"{READ_AGAIN} {again.text!r}"
    confs = iter(conf for _, conf in kept[at : at + len(norm(text))])
    per_char = tuple(next(confs) if norm(char) else 1.0 for char in text)
    return Recognition(text, float(np.mean(per_char)), per_char), None


def _decimals_read(raw: str) -> int:
    """Digits read after an amount's decimal point (0 when no point was read)."""
    point = max(raw.rfind(p) for p in DECIMAL_POINTS)
    return sum(ch.isdigit() for ch in raw[point + 1 :]) if point >= 0 else 0


def _text_lines(words: list[Word]) -> list[tuple[TextLine, list[Word]]]:
    """Text-layer words joined into lines as a text detector would see them (words on one
    baseline less than two characters' height apart: a spaced-out label such as 合　计 is one
    line), each with its outline in mm and the words it holds."""
    lines: list[list[Word]] = []
    for word in sorted(words, key=lambda w: (round((w.y0 + w.y1) / 2 / LINE_MM), w.x0)):
        last = lines[-1][-1] if lines else None
        height = word.y1 - word.y0
        if (
            last is not None
            and abs((last.y0 + last.y1) / 2 - (word.y0 + word.y1) / 2) < height / 2
            and 0 <= word.x0 - last.x1 < 2 * height
        ):
            lines[-1].append(word)
        else:
            lines.append([word])
    return [(TextLine(_words_quad(group), join_words(group), 1.0), group) for group in lines]


def _char_bar(spec: FieldSpec) -> float:
    if spec.name.endswith(AGAIN):
        return MIN_SECOND_PRINT_CHAR_CONFIDENCE
    if spec.kind is FieldKind.name:
        return MIN_NAME_CHAR_CONFIDENCE
    return MIN_CODE_CHAR_CONFIDENCE if spec.kind is FieldKind.code else MIN_CHAR_CONFIDENCE


def _fullpage_device(engine_options: dict[str, object]) -> tuple[Provider, int]:
    """(provider, threads) of the fallback's full-page OCR: on the recogniser's threads, and on
    its GPU only through TensorRT. ONNX Runtime's CUDA EP rebuilds a Conv's cuDNN plans whenever
    its input shape changes (~2 s for the rec model, measured on an H200; docs/benchmarks.md,
    *GPU*), and RapidOCR's detector sees each page's own size and its recogniser batches of
    varying widths: on an H200 it took 9.0 s a page (2026-12-04), against ~4.3 s of one CPU
    core. A CUDA worker's fallback runs on its CPU instead."""
    provider = engine_options.get("provider", "cpu")
    threads = engine_options.get("threads", 0)
    return (
        "tensorrt" if provider == "tensorrt" else "cpu",
        threads if isinstance(threads, int) else 0,
    )


def _stated(template: Template, qr: str) -> dict[str, str]:
    """The values the QR code (``qr``, its payload) states that pass their fields' checks."""
    stated = qr_values(template, qr)
    return {n: v for n, v in stated.items() if not check_value(template.field(n), v).errors}


def _from_qr(prepared: PreparedPage) -> dict[str, FieldResult]:
    """The fields of ``prepared`` taken from its QR code unread (:attr:`PreparedPage.stated`),
    each with its template box on the page."""
    if not prepared.stated or prepared.alignment.homography is None:  # an unregistered page too
        return {}
    return {
        name: FieldResult(
            value=value,
            raw=value,
            confidence=1.0,
            valid=True,
            box=_template_box(prepared, name),
            source="qr",
            note="from the QR code (the print was not read)",
        )
        for name, value in prepared.stated.items()
    }


def _repeated(prepared: PreparedPage, found: Mapping[str, FieldResult]) -> dict[str, FieldResult]:
    """The fields of ``prepared`` not read, each taking the value of the field it repeats
    (:attr:`PreparedPage.repeats`), with its template box on the page."""
    repeated = {}
    for name, source in prepared.repeats.items():
        sure = found[source]
        repeated[name] = FieldResult(
            value=sure.value,
            raw="",
            confidence=sure.confidence,
            valid=True,
            box=_template_box(prepared, name),
            source=sure.source,
            note=f"taken from {source}, which it repeats and the page's other readings "
            "confirm (its print was not read)",
        )
    return repeated


def _template_box(prepared: PreparedPage, name: str) -> list[float]:
    """The template box of field ``name`` on the page (a registered one)."""
    template, homography = prepared.template, prepared.alignment.homography
    assert homography is not None
    to_page = homography @ np.diag([template.px_per_mm, template.px_per_mm, 1.0])  # mm -> px
    x, y, w, h = template.field(name).box.as_list()
    return _bounds(mapped(np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]]), to_page))


def _doubted(
    prepared: PreparedPage, fields: dict[str, FieldResult], judge: Judge | None = None
) -> list[str]:
    """The fields not valid as read that the page's cross-checks (:func:`cross_check`) leave
    invalid too: what the fallback is for. A doubtful total in words that states the total is
    not (full-page OCR would cost seconds to read it again); neither is a field that read valid
    and disagrees with another, nor one whose print read otherwise at another size
    (:func:`~extractor.second_look.looked_again_only`: full-page OCR reads it with the same
    model): a person looks at those."""
    if all(field.valid for field in fields.values()):
        return []
    checked = {name: field.model_copy(deep=True) for name, field in fields.items()}
    cross_check(prepared.template, prepared.qr, checked, judge=judge)  # the registry's ran before
    return [
        name
        for name, field in fields.items()
        if not field.valid and not checked[name].valid and not looked_again_only(field)
    ]


def _surely_refitted(
    alignments: Mapping[str, tuple[Template, Alignment]],
) -> tuple[Template, Alignment] | None:
    """With ``auto``, the one template whose frame the refitted outlines match surely
    (:data:`SURE_FRAME_SCORE`, as a frame picks a template), with the page's alignment to it
    (its :attr:`~Alignment.refitted` set); None where none does, or more than one."""
    sure = [
        (template, alignment)
        for template, alignment in alignments.values()
        if alignment.refitted is not None and alignment.refitted.score >= SURE_FRAME_SCORE
    ]
    return sure[0] if len(sure) == 1 else None


def _reading_order(template: Template, forms: list[Alignment]) -> list[Alignment]:
    """The forms found on a page (their alignments) top to bottom, and left to right where they
    lie side by side (centres less than half a form's height apart)."""
    if len(forms) == 1:
        return forms
    outlines = [form_outline(template, f.homography) for f in forms if f.homography is not None]
    height = float(np.ptp(outlines[0][:, 1]))
    centres = [outline.mean(axis=0) for outline in outlines]
    rows: list[list[int]] = []
    for i in sorted(range(len(forms)), key=lambda i: centres[i][1]):
        if rows and centres[i][1] - centres[rows[-1][0]][1] < height / 2:
            rows[-1].append(i)
        else:
            rows.append([i])
    return [forms[i] for row in rows for i in sorted(row, key=lambda i: centres[i][0])]


def _bounds(quad: np.ndarray) -> list[float]:
    x0, y0 = quad.min(axis=0)
    x1, y1 = quad.max(axis=0)
    return [
        round(float(x0), 1),
        round(float(y0), 1),
        round(float(x1 - x0), 1),
        round(float(y1 - y0), 1),
    ]


def _better(found: Alignment, asked: Alignment) -> bool:
    """Whether another template's frame match ``found`` beats the asked template's: it matched,
    and scores higher."""
    return found.matched and found.homography is not None and found.score > asked.score


def _crop_judge(likelihoods: Likelihoods | None, crops: Sequence[Crop]) -> Judge | None:
    """The cross-checks' :data:`~extractor.cross_check.Judge`: ``likelihoods`` on each field's
    crop, each question asked once (the fallback's trial cross-check asks what the last asks)."""
    if likelihoods is None:
        return None
    images = {crop.spec.name: crop.image for crop in crops}
    answers: dict[tuple[str, tuple[str, ...]], list[float | None]] = {}

    def judge(name: str, texts: Sequence[str]) -> list[float | None]:
        if name not in images:
            return [None] * len(texts)
        key = (name, tuple(texts))
        if key not in answers:
            answers[key] = likelihoods(images[name], texts)
        return answers[key]

    return judge


def _conclude(
    prepared: PreparedPage,
    fields: dict[str, FieldResult],
    registration: Registration | None,
    parties: Parties | None = None,
    judge: Judge | None = None,
) -> PageResult:
    """Cross-check the fields (rules, QR code) and give the page its status."""
    template = prepared.template
    with _timed(prepared.timings, "validate"):
        cross_check(template, prepared.qr, fields, parties, judge)
        doubt_absence_amid_failures(template, fields)
    alignment = prepared.alignment
    if registration is None:
        status = "unmatched"
    else:
        status = "ok" if all(f.valid for f in fields.values()) else "needs_review"
    return PageResult(
        page=prepared.index + 1,
        form=prepared.form,
        template=template.name,
        status=status,
        matched=alignment.matched,
        registration=registration,
        match_score=alignment.score,
        rotation_deg=alignment.rotation_deg,
        message=alignment.reason,
        fields=fields,
        qr=prepared.qr,
        template_scores=prepared.template_scores,
        timings_ms=prepared.timings,
    )


def _alone(spec: FieldSpec, template: Template) -> bool:
    """Whether no other field of the template has the field's label (发票代码, not 名称)."""
    return sum(other.label == spec.label for other in template.fields) == 1


def _reach(spec: FieldSpec, template: Template, homography: np.ndarray) -> tuple[np.ndarray, float]:
    """Where a field's box lies on the page, and how far (page px) its label may be from it:
    half the box's width plus 20 mm, for a layout whose boxes moved a little."""
    ppm = template.px_per_mm
    cx, cy = (spec.box.x + spec.box.w / 2) * ppm, (spec.box.y + spec.box.h / 2) * ppm
    reach = (spec.box.w / 2 + REACH_MM) * ppm
    points = np.array([[[cx, cy], [cx + reach, cy]]], np.float64)
    centre, edge = cv2.perspectiveTransform(points, homography)[0]
    return centre, float(np.linalg.norm(edge - centre))


def _empty(spec: FieldSpec) -> FieldResult:
    errors = ["not found"] if spec.required else []
    return FieldResult(
        value=None, raw="", confidence=0.0, valid=not errors, errors=errors, source="fallback"
    )


def _unmatched(
    page: Page,
    template: Template | None,
    alignment: Alignment,
    timings: Timings,
    scores: dict[str, float] | None = None,
) -> PageResult:
    return PageResult(
        page=page.index + 1,
        template=template.name if template is not None else None,
        status="unmatched",
        matched=False,
        match_score=alignment.score,
        rotation_deg=alignment.rotation_deg,
        message=alignment.reason if template is not None else "no template matches this page",
        template_scores=scores,
        timings_ms=timings,
    )
