"""``roi eval``: score extraction against documents that carry ground truth.

A document ``X.jpg`` (or any kind a batch takes: .png, .pdf, .ofd, .tif, .heic, .webp...) is scored
when ``X.json`` lies beside it, holding
``{"template": ..., "level": ..., "pages": [{"page": 0, "template": ..., "fields": {...}}]}``.
A wrong value is *flagged* when the result marks it invalid, and *dangerous* when it passes as
valid: the number that matters most. A right value that is flagged costs a person's look: how
many there are is the review load.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from extractor.batch.inputs import documents_in
from extractor.errors import InputError, RoiError
from extractor.pipeline import Extractor
from extractor.progress import DocumentsProgress
from extractor.result import FieldResult


class Tally(BaseModel):
    fields: int = 0
    exact: int = 0
    right_flagged: int = 0
    wrong_flagged: int = 0
    wrong_valid: int = 0
    char_errors: int = 0
    chars: int = 0
    fallback: int = 0

    @property
    def accuracy(self) -> float:
        return self.exact / self.fields if self.fields else 0.0

    @property
    def cer(self) -> float:
        return self.char_errors / self.chars if self.chars else 0.0

    def add(self, expected: str, got: FieldResult | None) -> bool:
        value = got.value if got is not None else None
        self.fields += 1
        self.chars += len(expected)
        self.char_errors += edit_distance(expected, value or "")
        if got is not None and got.source == "fallback":
            self.fallback += 1
        if value == expected:
            self.exact += 1
            if got is not None and not got.valid:
                self.right_flagged += 1
            return True
        if got is not None and got.valid:
            self.wrong_valid += 1
        else:
            self.wrong_flagged += 1
        return False


class Miss(BaseModel):
    file: str
    page: int
    field: str
    expected: str
    got: str | None
    valid: bool


class EvalReport(BaseModel):
    documents: int = 0
    pages: int = 0
    seconds: float = 0.0
    overall: Tally = Field(default_factory=Tally)
    by_field: dict[str, Tally] = Field(default_factory=dict)
    by_level: dict[str, Tally] = Field(
        default_factory=dict, description="Keyed by 'template level', e.g. 'vat_invoice light'."
    )
    unmatched_pages: int = 0
    wrong_template_pages: int = 0
    """Pages given another template than their truth's (with ``--template auto``)."""
    non_invoice_pages: int = 0
    non_invoice_rejected: int = 0
    errors: list[str] = Field(default_factory=list)
    misses: list[Miss] = Field(default_factory=list)

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


class TruthPage(BaseModel):
    """One page's truth: the template it is a form of (``null``: not an invoice, which the
    extractor should leave unmatched; left out: the document's) and its fields' values, each
    as the result gives it (amounts as strings, ``"106.00"``)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    page: int = Field(default=0, ge=0, description="0-based")
    template: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)


class Truth(BaseModel):
    """``X.json`` beside the document ``X``."""

    model_config = ConfigDict(extra="ignore", strict=True)

    template: str | None = None
    level: str | None = None
    pages: list[TruthPage] = Field(min_length=1)


def read_truth(path: Path, template: str | None = None) -> Truth:
    """``path``'s truth, each page's template filled from the document's (or ``template``,
    ``--template``) where it leaves it out; :class:`~extractor.errors.InputError` naming the
    file and what is wrong with it otherwise."""
    try:
        truth = Truth.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        raise InputError(f"{path.name}: not a truth file: {where}: {first['msg']}") from None
    document_template = truth.template or template
    pages = []
    for page in truth.pages:
        if "template" not in page.model_fields_set:
            if document_template is None:
                raise InputError(
                    f"{path.name}: page {page.page} names no template and neither does the file "
                    "(give one, or --template)"
                )
            page = page.model_copy(update={"template": document_template})
        pages.append(page)
    return truth.model_copy(update={"template": document_template, "pages": pages})


def find_documents(root: Path) -> list[tuple[Path, Path]]:
    """(document, truth) pairs under ``root``, sorted by path, its documents found as a batch
    finds them (:func:`~extractor.batch.inputs.documents_in`); :class:`InputError` where
    ``root`` is no folder or holds none."""
    if not root.is_dir():
        raise InputError(f"{root}: {'not a folder' if root.exists() else 'no such folder'}")
    pairs = [(p, p.with_suffix(".json")) for p in documents_in(root)]
    pairs = [(document, truth) for document, truth in pairs if truth.is_file()]
    if not pairs:
        raise InputError(
            f"{root}: no document with its truth beside it (a document X.jpg is scored when "
            "X.json lies beside it: see `roi eval --help`)"
        )
    return pairs


def evaluate(
    root: Path,
    template: str | None = None,
    engine: str = "ppocr",
    extractor: Extractor | None = None,
    quiet: bool = True,
) -> EvalReport:
    """Extract every document under ``root`` that has its truth beside it and score the
    fields against it (``quiet=False``: a progress bar on stderr)."""
    documents = find_documents(root)
    extractor = extractor or Extractor(engine=engine)
    report = EvalReport()
    by_field: dict[str, Tally] = defaultdict(Tally)
    by_level: dict[str, Tally] = defaultdict(Tally)
    start = time.perf_counter()
    with DocumentsProgress(len(documents), "scoring", quiet=quiet) as progress:
        for doc, truth_path in documents:
            pages = _score(extractor, root, doc, truth_path, template, report, by_field, by_level)
            progress.advance(pages)
    report.seconds = round(time.perf_counter() - start, 2)
    report.by_field = dict(sorted(by_field.items()))
    report.by_level = dict(sorted(by_level.items(), key=_level_order))
    return report


def _score(
    extractor: Extractor,
    root: Path,
    doc: Path,
    truth_path: Path,
    template: str | None,
    report: EvalReport,
    by_field: dict[str, Tally],
    by_level: dict[str, Tally],
) -> int:
    """One document scored into ``report``: the number of its pages."""
    name = str(doc.relative_to(root))
    report.documents += 1
    try:
        truth = read_truth(truth_path, template)
        result = extractor.extract(doc, template or truth.template or "auto")  # no page a form
    except RoiError as exc:
        report.errors.append(f"{name}: {exc}")
        return 0
    level = f"{truth.template or 'auto'} {truth.level or doc.parent.name}"
    pages = {p.page - 1: p for p in result.pages if p.form == 1}  # the truth's one form
    for expected_page in truth.pages:
        report.pages += 1
        got_page = pages.get(expected_page.page)
        if expected_page.template is None:
            report.non_invoice_pages += 1
            if got_page is not None and got_page.status == "unmatched":
                report.non_invoice_rejected += 1
            continue
        if got_page is None or got_page.status == "unmatched":
            report.unmatched_pages += 1
        elif got_page.template != expected_page.template:
            report.wrong_template_pages += 1
        for field, expected in expected_page.fields.items():
            got = got_page.fields.get(field) if got_page is not None else None
            ok = report.overall.add(expected, got)
            by_field[field].add(expected, got)
            by_level[level].add(expected, got)
            if not ok:
                report.misses.append(
                    Miss(
                        file=name,
                        page=expected_page.page + 1,
                        field=field,
                        expected=expected,
                        got=got.value if got is not None else None,
                        valid=bool(got is not None and got.valid),
                    )
                )
    return len(truth.pages)


_LEVEL_ORDER = {"clean": 0, "light": 1, "medium": 2, "heavy": 3, "geometry": 4, "multipage": 5}


def _level_order(item: tuple[str, Tally]) -> tuple[str, int, str]:
    template, _, level = item[0].partition(" ")
    return template, _LEVEL_ORDER.get(level, 99), level


def print_report(report: EvalReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 140)

    def tally_table(title: str, rows: dict[str, Tally]) -> Table:
        table = Table(title=title, title_justify="left")
        for col in (
            "",
            "fields",
            "exact",
            "accuracy",
            "CER",
            "right+flagged",
            "wrong+flagged",
            "wrong+VALID",
            "fallback",
        ):
            table.add_column(col, justify="left" if not col else "right")
        for name, t in rows.items():
            table.add_row(
                name,
                str(t.fields),
                str(t.exact),
                f"{100 * t.accuracy:.1f}%",
                f"{100 * t.cer:.2f}%",
                str(t.right_flagged),
                str(t.wrong_flagged),
                f"[bold red]{t.wrong_valid}[/]" if t.wrong_valid else "0",
                f"{100 * t.fallback / t.fields:.0f}%" if t.fields else "-",
            )
        return table

    console.print(tally_table("Per field", {**report.by_field, "ALL": report.overall}))
    console.print(tally_table("Per template and degradation level", report.by_level))
    console.print(
        f"{report.documents} documents, {report.pages} pages in {report.seconds:.1f} s "
        f"({report.pages_per_second:.2f} pages/s); "
        f"unmatched invoice pages: {report.unmatched_pages}; "
        f"pages given the wrong template: {report.wrong_template_pages}; "
        f"non-invoice pages rejected: {report.non_invoice_rejected}/{report.non_invoice_pages}"
    )
    for err in report.errors:
        console.print(f"[red]error[/] {err}")
    if report.misses:
        table = Table(title="Wrong values", title_justify="left")
        for col in ("file", "page", "field", "expected", "got", "valid"):
            table.add_column(col)
        for m in report.misses:
            table.add_row(
                m.file,
                str(m.page),
                m.field,
                m.expected,
                m.got or "",
                "VALID" if m.valid else "flagged",
            )
        console.print(table)
