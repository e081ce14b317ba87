"""A party registry: the tax ids and names of the companies a team trades with.

Finance teams keep one (the vendor master of their ERP, their own company as the buyer of
nearly every invoice) and can export it as CSV. Given one (``roi extract --parties FILE``,
``ROI_PARTIES`` for the service), every page's name and tax id of each party the template
pairs (``parties:`` in its YAML) are checked against it:

- a name read exactly as the registry names the tax id read (a USCC that passes its check
  character) confirms both, a name or tax id in doubt included;
- a name read a character or two off the registered one (or with the next printed line glued
  on) takes the registered name, with a note saying how it was read; one further off is
  flagged. Either way the cascade keeps the cheap model's reading of a name that is, or is
  close to, the registered one instead of reading it again with the small one
  (:meth:`extractor.pipeline.Extractor.recognize`): the registry decides its value;
- a tax id read otherwise than the registry gives the name read is mended the same way when one
  character is off, flagged otherwise.

CSV: a header row naming a ``tax_id`` (or ``纳税人识别号``) and a ``name`` (or ``名称``) column,
other columns ignored; UTF-8 (with or without BOM) or GB18030, as Excel writes it in China.
Without a vendor master, ``roi parties learn`` makes one from past results
(:func:`learn_parties`), and ``roi batch`` learns one as it goes (:class:`PartyLearner`,
``Extractor(learn_parties=True)``): a party read valid alike in two documents is registered
for the documents after them, beside the registry given.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from extractor.errors import RoiError
from extractor.fields import FieldValueError, normalize_name, normalize_tax_id, tax_id_errors
from extractor.templates import TemplateStore

TAX_ID_COLUMNS = ("tax_id", "纳税人识别号", "税号")
NAME_COLUMNS = ("name", "名称", "单位名称")
REGISTRY = "the party registry"
LEARNED = "the learned party registry"
"""What a note calls a registered party's source: a registry given, or parties a run learned
from its own results (:class:`PartyLearner`). Both say "party registry": a reading the registry
settled is not learned again from itself (:func:`_trusted`)."""


class PartiesError(RoiError):
    """The party registry file cannot be read or holds a bad row."""


def name_key(name: str) -> str:
    """A name as compared: full- and half-width forms alike (NFKC: an ERP's ``(福州)`` is the
    invoice's ``（福州）``), spaces dropped."""
    return "".join(unicodedata.normalize("NFKC", name).split())


def same_name(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and name_key(a) == name_key(b)


class Parties:
    """Tax id -> name, and name -> tax id where a name is registered once (names compared by
    :func:`name_key`). ``learned``: parties a run learned from its own results
    (:class:`PartyLearner`), for the tax ids ``names`` does not hold; what they settle says so
    (:meth:`source`)."""

    def __init__(self, names: Mapping[str, str], learned: Mapping[str, str] | None = None) -> None:
        self._given = dict(names)
        self._learned = {t: n for t, n in (learned or {}).items() if t not in self._given}
        self._names = self._learned | self._given
        by_name: dict[str, str | None] = {}
        for tax_id, name in self._names.items():
            key = name_key(name)
            by_name[key] = None if key in by_name else tax_id
        self._tax_ids = {key: tax_id for key, tax_id in by_name.items() if tax_id is not None}

    def __len__(self) -> int:
        return len(self._names)

    def name_for(self, tax_id: str | None) -> str | None:
        return self._names.get(tax_id) if tax_id else None

    def tax_id_for(self, name: str | None) -> str | None:
        return self._tax_ids.get(name_key(name)) if name else None

    def source(self, tax_id: str) -> str:
        """Who registered ``tax_id``, as a note names it."""
        return LEARNED if tax_id in self._learned else REGISTRY

    def with_learned(self, learned: Mapping[str, str]) -> Parties:
        """This registry with ``learned`` (replacing what it learned before) beside it."""
        return Parties(self._given, learned)


def load_parties(path: str | Path) -> Parties:
    """Read a registry CSV; :class:`PartiesError` names the file and row of what is wrong."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PartiesError(f"cannot read the party registry {path}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError as exc:
            raise PartiesError(f"{path}: neither UTF-8 nor GB18030 text") from exc
    return Parties(_rows(csv.DictReader(io.StringIO(text)), path))


def _rows(reader: csv.DictReader[str], path: Path) -> dict[str, str]:
    header = [column.strip() for column in reader.fieldnames or []]
    tax_column = next((c for c in TAX_ID_COLUMNS if c in header), None)
    name_column = next((c for c in NAME_COLUMNS if c in header), None)
    if tax_column is None or name_column is None:
        raise PartiesError(
            f"{path}: the header row must name a tax id column ({' or '.join(TAX_ID_COLUMNS)}) "
            f"and a name column ({' or '.join(NAME_COLUMNS)}); it reads {header}"
        )
    reader.fieldnames = header
    names: dict[str, str] = {}
    for row in reader:
        where = f"{path}, line {reader.line_num}"
        raw_id, raw_name = row.get(tax_column) or "", row.get(name_column) or ""
        if not raw_id.strip() and not raw_name.strip():
            continue
        try:
            tax_id, name = normalize_tax_id(raw_id), normalize_name(raw_name)
        except FieldValueError:
            raise PartiesError(f"{where}: a row needs both a tax id and a name") from None
        errors = tax_id_errors(tax_id)
        if errors:
            raise PartiesError(f"{where}: tax id {tax_id}: {'; '.join(errors)}")
        if names.get(tax_id, name) != name:
            raise PartiesError(f"{where}: tax id {tax_id} is registered as {names[tax_id]!r} too")
        names[tax_id] = name
    if not names:
        raise PartiesError(f"{path}: no parties in it")
    return names


# -- learning a registry from results -------------------------------------------------------------

TRACKED_IN_A_RUN = 100_000
"""How many tax ids a run's :class:`PartyLearner` keeps counts of (``Extractor``)."""
MIN_SEEN = 2
"""How many documents must read a party the same way before :func:`learn_parties` registers it:
a name has no check character, and a misread repeats itself exactly far less often than once."""
OUTVOTE = 3
"""A tax id read valid with several names is registered with the one read this many times as
often as all the others together (a misread among many right readings); else it is left out."""


@dataclass
class Learned:
    """What :func:`learn_parties` found: the parties to register, and the tax ids left out."""

    names: dict[str, str]
    conflicts: dict[str, dict[str, int]] = field(default_factory=dict)
    """Tax ids read valid with more than one name, none of them :data:`OUTVOTE` times as often
    as the others together, each name with its count: left out."""
    rare: int = 0
    """Parties read fewer than ``min_seen`` times: left out."""


class PartyLearner:
    """:func:`learn_parties` a document at a time: the parties a run has read enough to register
    so far (:attr:`names`), for the run's own later pages (``Extractor(learn_parties=True)``,
    ``roi batch``): a nightly batch of one company's invoices names the company as the buyer
    on nearly every page, and its suppliers again and again."""

    def __init__(
        self, templates: TemplateStore, min_seen: int = MIN_SEEN, most: int | None = None
    ) -> None:
        """``most``: how many tax ids to keep counts of (a service worker runs for months):
        past it, those read in one document only are forgotten."""
        self.min_seen, self.most = min_seen, most
        self.names: dict[str, str] = {}
        self._parties_of = {template.name: template.parties for template in templates.all()}
        self._seen: dict[str, Counter[str]] = {}
        self._printed: dict[str, str] = {}  # a name's key -> the form it was first read in

    def add(self, result: Mapping[str, Any]) -> bool:
        """Count the parties one ``DocumentResult`` (JSON) read valid, name and tax id both (a
        document counts once, however many pages); whether :attr:`names` changed."""
        pairs: set[tuple[str, str]] = set()
        for page in result.get("pages") or []:
            fields = page.get("fields") or {}
            for party in self._parties_of.get(page.get("template") or "", []):
                name, tax_id = fields.get(party.name), fields.get(party.tax_id)
                if _trusted(name) and _trusted(tax_id):
                    pairs.add((tax_id["value"], name["value"]))
        changed = False
        for tax_id, name in pairs:  # names counted alike whatever their width (name_key)
            names = self._seen.setdefault(tax_id, Counter())
            names[self._printed.setdefault(name_key(name), name)] += 1
            decided = self._decide(names)
            if self.names.get(tax_id) != decided:
                changed = True
                if decided is None:
                    del self.names[tax_id]
                else:
                    self.names[tax_id] = decided
        if self.most is not None and len(self._seen) > self.most:
            self._seen = {t: names for t, names in self._seen.items() if names.total() > 1}
            self._printed = {name_key(n): n for names in self._seen.values() for n in names}
        return changed

    def _decide(self, names: Counter[str]) -> str | None:
        (name, count), *others = names.most_common()
        rest = sum(n for _, n in others)
        return name if count >= OUTVOTE * rest and count >= self.min_seen else None

    def learned(self) -> Learned:
        learned = Learned({})
        for tax_id, names in sorted(self._seen.items()):
            decided = self._decide(names)
            if decided is not None:
                learned.names[tax_id] = decided
            elif len(names) > 1:
                learned.conflicts[tax_id] = dict(names.most_common())
            else:
                learned.rare += 1
        return learned


def learn_parties(
    results: Iterable[Mapping[str, Any]], templates: TemplateStore, min_seen: int = MIN_SEEN
) -> Learned:
    """The parties that results (``DocumentResult`` JSON: ``roi extract --json``, the lines of
    ``roi batch``'s ``results.jsonl``) read valid, name and tax id both, in at least
    ``min_seen`` documents; a tax id read with two names takes the one that outvotes the
    others (:data:`OUTVOTE`), or is left out. A name or tax id the
    registry gave (its ``note`` says so) is not learned again from itself."""
    learner = PartyLearner(templates, min_seen)
    for result in results:
        learner.add(result)
    return learner.learned()


def _trusted(field: Mapping[str, Any] | None) -> bool:
    return bool(
        field
        and field.get("valid")
        and field.get("value")
        and "party registry" not in (field.get("note") or "")
    )


def write_parties(names: Mapping[str, str], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["tax_id", "name"])
    writer.writerows(sorted(names.items()))
