"""Templates: one YAML file per document type, naming each field's box on a reference page.

Boxes are in millimetres on the reference page, origin at its top-left corner, as
``[x, y, width, height]``. A template is loaded with ``yaml.safe_load`` and checked against the
pydantic schema below; any problem raises :class:`TemplateError` naming the file, the field and
what is wrong.
"""

from __future__ import annotations

import os
import re
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from extractor.errors import TemplateError, TemplateNotFoundError

MM_PER_INCH = 25.4
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
AGAIN = ".again"
"""A field's second print is named as the field with this after it (:meth:`FieldSpec.again`):
no field of a template can be named so."""


class FieldKind(StrEnum):
    """What a field holds; picks the default normaliser, validator and allowlist."""

    text = "text"
    name = "name"  # a company's or a person's name: free text, but never a bare identifier
    code = "code"  # digits of a fixed length (invoice code, number, check code)
    amount = "amount"  # money in figures: ¥1,234.56 -> "1234.56"
    amount_words = "amount_words"  # money in Chinese capitals -> "1234.56"
    date = "date"  # 2024年05月12日 -> "2024-05-12"
    tax_id = "tax_id"  # USCC (18, check digit verified) or older 15/20-char taxpayer id


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Box(_Strict):
    """A rectangle on the reference page, in millimetres."""

    x: float
    y: float
    w: Annotated[float, Field(gt=0)]
    h: Annotated[float, Field(gt=0)]

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: object) -> object:
        if isinstance(value, list | tuple):
            if len(value) != 4:
                raise ValueError("a box is [x, y, width, height] in mm")
            return dict(zip("xywh", value, strict=True))
        return value

    def as_list(self) -> list[float]:
        return [self.x, self.y, self.w, self.h]


def _compiles(pattern: str, what: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{what} does not compile: {exc}") from exc


class FieldSpec(_Strict):
    name: Annotated[str, Field(pattern=_NAME_RE.pattern)]
    box: Box
    kind: FieldKind = FieldKind.text
    allowlist: str | None = Field(
        default=None,
        description="A named charset (digits, amount, date, tax_id, amount_words, ...) or the "
        "characters themselves; omitted means the kind's default.",
    )
    regex: str | None = None
    normalizer: str | None = Field(default=None, description="Overrides the kind's normaliser.")
    required: bool = True
    label: str | None = Field(default=None, description="The printed label next to the value.")
    lines: Annotated[int, Field(ge=1, le=4)] = 1
    decimals: Annotated[int, Field(ge=0, le=8)] | None = Field(
        default=None,
        description="How many decimals an amount is printed with: a reading with another count "
        "(a digit or the point lost to blur) is in doubt.",
    )
    printed_again: Box | None = Field(
        default=None,
        description="Where the form prints the same value a second time (the national form's "
        "code and number, small at its top-right corner): read too where the QR code does not "
        "state the field, and the two readings checked against each other.",
    )
    check: Literal["invoice_code", "invoice_number", "issue_date"] | None = Field(
        default=None,
        description="A check of the value's structure after its kind's "
        "(:mod:`extractor.fields.codes`): ``invoice_code``, the region a VAT invoice's code "
        "starts with names a province or a separately listed city, and a 12-digit code ends in "
        "a kind of VAT invoice; the year its forms were printed is checked against the issue "
        "date too. ``invoice_number``, a 数电票's 20-digit number names a province in its digits "
        "3-4, and the year in its first two is the issue date's (an 8-digit one is not checked). "
        "``issue_date``, the date is not after today: no invoice is issued ahead of its day.",
    )
    absent_when: dict[str, str] | None = Field(
        default=None,
        description="Other fields and a regex each: where one's value (passing its checks) "
        "matches, the form does not print this field (a 专票, whose code's 8th digit is 1 or 5, "
        "carries no check code), and a reading of its box that fails its checks (the 专票's "
        "machine number, printed on that line) is left out: the field is absent, with a note. "
        "Only for a field not required.",
    )
    printed_as: str | None = Field(
        default=None,
        description="A regex a page's line (its text as read, spaces kept; or what follows a "
        "colon in it: a misread label) matches only where it holds this field's value, "
        "whatever label it follows or wherever it lies: the check code's four groups of five "
        "digits. The fallback takes the one such line among those it reads whose value passes "
        "the field's checks, and reads the field's whole row for it: another layout of the "
        "form prints the value elsewhere (the 增值税电子普通发票 stacks code, number, date and "
        "check code at the top right), and its label may be too faint to be found.",
    )
    starts_with: str | None = Field(
        default=None,
        description="Another field whose print starts as far into its box as this one's does "
        "(the national form prints a party's name and tax id from one column; a 数电票 lays the "
        "buyer's and the seller's blocks out alike): a reading whose line starts further in "
        "has lost its first characters (faded under a flash, folded over) and is in doubt.",
    )

    @field_validator("regex", "printed_as")
    @classmethod
    def _regex_compiles(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _compiles(value, str(info.field_name))
        return value

    @field_validator("absent_when")
    @classmethod
    def _absent_when_compiles(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for pattern in (value or {}).values():
            _compiles(pattern, "absent_when's regex")
        return value

    @model_validator(mode="after")
    def _decimals_for_amounts(self) -> FieldSpec:
        if self.decimals is not None and self.kind is not FieldKind.amount:
            raise ValueError(f"decimals applies to amounts, not to a field of kind {self.kind}")
        if self.starts_with is not None and self.kind is not FieldKind.name:
            raise ValueError(f"starts_with applies to names, not to a field of kind {self.kind}")
        if self.absent_when and self.required:
            raise ValueError("absent_when applies to a field not required (required: false)")
        return self

    def again(self) -> FieldSpec | None:
        """The field's second print (:attr:`printed_again`) as a field of its own, named
        ``<name>.again`` (:data:`AGAIN`), or None when the form prints it once."""
        if self.printed_again is None:
            return None
        return self.model_copy(
            update={"name": self.name + AGAIN, "box": self.printed_again, "printed_again": None}
        )


class SumRule(_Strict):
    """``sum(terms) == equals``, to the cent."""

    rule: Literal["sum"]
    terms: list[str]
    equals: str


class SameRule(_Strict):
    """All named fields hold the same normalised value (e.g. total in words == total)."""

    rule: Literal["same"]
    fields: Annotated[list[str], Field(min_length=2)]


Rule = Annotated[SumRule | SameRule, Field(discriminator="rule")]


class PartyFields(_Strict):
    """A party printed on the form (buyer, seller): the fields holding its name and tax id, which
    a party registry (:mod:`extractor.parties`) checks against each other."""

    name: str
    tax_id: str
    may_be_a_person: bool = False
    """The party may be a person (a 普通发票's buyer), who has no tax id: where its name is a
    person's (:func:`extractor.fields.persons.person_name`) and the tax id's box is blank, the
    tax id is absent, not missing."""


class QRCode(_Strict):
    """Where a QR code is printed and which comma-separated payload position holds which field."""

    box: Box
    fields: dict[str, Annotated[int, Field(ge=0)]] = {}


class PageSize(_Strict):
    width_mm: Annotated[float, Field(gt=0)]
    height_mm: Annotated[float, Field(gt=0)]


class Registration(_Strict):
    method: Literal["frame"] = "frame"
    match_threshold: Annotated[float, Field(ge=0, le=1)] = 0.5
    dpi: Annotated[int, Field(ge=72, le=600)] = 200
    """Resolution at which crops are taken (reference pixels per inch)."""
    work_width: Annotated[int, Field(ge=300, le=3000)] = 1000
    """Width in pixels of the downscaled page that registration runs on."""


class Template(_Strict):
    name: Annotated[str, Field(pattern=_NAME_RE.pattern)]
    version: int = 1
    title: str = ""
    page: PageSize
    reference_image: str | None = None
    registration: Registration = Registration()
    crop_margin_mm: Annotated[float, Field(ge=0, le=20)] = 2.5
    fields: Annotated[list[FieldSpec], Field(min_length=1)]
    rules: list[Rule] = []
    qr: QRCode | None = None
    parties: list[PartyFields] = []

    # Set by the loader, not by the YAML.
    source_path: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _check_fields(self) -> Template:
        names = [f.name for f in self.fields]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate field names: {', '.join(dupes)}")
        for f in self.fields:
            for what, b in (("box", f.box), ("printed_again", f.printed_again)):
                if b is not None and (
                    b.x < 0
                    or b.y < 0
                    or b.x + b.w > self.page.width_mm
                    or b.y + b.h > self.page.height_mm
                ):
                    raise ValueError(
                        f"field {f.name!r}: {what} {b.as_list()} lies outside the "
                        f"{self.page.width_mm} x {self.page.height_mm} mm page"
                    )
        known = set(names)
        for rule in self.rules:
            used = [*rule.terms, rule.equals] if isinstance(rule, SumRule) else rule.fields
            missing = [n for n in used if n not in known]
            if missing:
                raise ValueError(f"rule {rule.rule!r} names unknown fields: {', '.join(missing)}")
        if self.qr is not None:
            unknown = [n for n in self.qr.fields if n not in known]
            if unknown:
                raise ValueError(f"qr names unknown fields: {', '.join(unknown)}")
        for f in self.fields:
            if f.starts_with is not None and f.starts_with not in known - {f.name}:
                raise ValueError(f"field {f.name!r}: starts_with names no other field")
            if any(name not in known - {f.name} for name in f.absent_when or {}):
                raise ValueError(f"field {f.name!r}: absent_when names no other field")
        kinds = {f.name: f.kind for f in self.fields}
        for party in self.parties:
            for name, kind in ((party.name, FieldKind.name), (party.tax_id, FieldKind.tax_id)):
                if kinds.get(name) is not kind:
                    raise ValueError(f"parties: {name!r} is not a field of kind {kind.value}")
        return self

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def px_per_mm(self) -> float:
        return self.registration.dpi / MM_PER_INCH

    @property
    def reference_size_px(self) -> tuple[int, int]:
        """(width, height) of the reference page at the registration dpi."""
        return (
            round(self.page.width_mm * self.px_per_mm),
            round(self.page.height_mm * self.px_per_mm),
        )

    @property
    def reference_image_path(self) -> Path | None:
        if self.reference_image is None or self.source_path is None:
            return None
        return self.source_path.parent / self.reference_image


def default_templates_dir() -> Path:
    """``$ROI_TEMPLATES_DIR`` or the ``templates/`` folder of this checkout."""
    env = os.environ.get("ROI_TEMPLATES_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "templates"


def _describe(exc: ValidationError, data: object) -> str:
    lines = []
    for err in exc.errors():
        loc = list(err["loc"])
        where = ".".join(str(p) for p in loc) or "(top level)"
        if (
            len(loc) >= 2
            and loc[0] == "fields"
            and isinstance(loc[1], int)
            and isinstance(data, dict)
        ):
            fields = data.get("fields") or []
            if loc[1] < len(fields) and isinstance(fields[loc[1]], dict):
                fname = fields[loc[1]].get("name", f"#{loc[1]}")
                rest = ".".join(str(p) for p in loc[2:])
                where = f"field {fname!r}" + (f" ({rest})" if rest else "")
        lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def load_template_file(path: str | Path) -> Template:
    """Read and validate one template file."""
    path = Path(path)
    return parse_template(_read(path), path)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read template: {exc.strerror or exc}") from exc


def parse_template(text: str, path: Path) -> Template:
    """Validate a template's YAML text; ``path`` names it in errors and anchors its reference."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: a template is a YAML mapping, got {type(data).__name__}")
    try:
        template = Template.model_validate(data)
    except ValidationError as exc:
        raise TemplateError(f"{path}: {_describe(exc, data)}") from exc
    return template.model_copy(update={"source_path": path.resolve()})


AUTO = "auto"
"""The template name that picks a template page by page (CLI, API, batch, eval)."""


class TemplateStore:
    """Templates of one folder, looked up by name only (never by path)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else default_templates_dir()

    def names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(p.stem for p in self.directory.glob("*.yaml") if _NAME_RE.match(p.stem))

    def get(self, name: str) -> Template:
        if not _NAME_RE.match(name or "") or name not in self.names():
            known = ", ".join(self.names()) or "none"
            raise TemplateNotFoundError(f"unknown template {name!r} (known: {known})")
        path = self.directory / f"{name}.yaml"
        return _parse_cached(path, _read(path))

    def all(self) -> list[Template]:
        return [self.get(n) for n in self.names()]


@lru_cache(maxsize=256)
def _parse_cached(path: Path, text: str) -> Template:
    """Keyed on the file's content, so an edit is picked up however coarse the file system's
    timestamps, and a file caught half-written is parsed (and refused) on its own."""
    template = parse_template(text, path)
    if template.name != path.stem:
        raise TemplateError(f"{path}: template name {template.name!r} differs from the file name")
    return template
