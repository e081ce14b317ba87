"""A party registry: the tax ids and names of the companies a team trades with.

Finance teams keep one (the vendor master of their ERP, their own company as the buyer of
nearly every invoice) and can export it as CSV. Given one (``roi extract --parties FILE``,
``ROI_PARTIES`` for the service), every page's name and tax id of each party the template
pairs (``parties:`` in its YAML) are checked against it:

- a name read exactly as the registry names the tax id read (a USCC that passes its check
  character) confirms both: the cascade keeps the cheap model's reading of such a name instead
  of reading it again with the small one (:meth:`extractor.pipeline.Extractor.recognize`), and
  a name or tax id in doubt is confirmed;
- a name read a character or two off the registered one takes the registered name, with a note
  saying how it was read; one further off is flagged;
- a tax id read otherwise than the registry gives the name read is mended the same way when one
  character is off, flagged otherwise.

CSV: a header row naming a ``tax_id`` (or ``纳税人识别号``) and a ``name`` (or ``名称``) column,
other columns ignored; UTF-8 (with or without BOM) or GB18030, as Excel writes it in China.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

from extractor.errors import RoiError
from extractor.fields import FieldValueError, normalize_tax_id, normalize_text, tax_id_errors

TAX_ID_COLUMNS = ("tax_id", "纳税人识别号", "税号")
NAME_COLUMNS = ("name", "名称", "单位名称")


class PartiesError(RoiError):
    """The party registry file cannot be read or holds a bad row."""


class Parties:
    """Tax id -> name, and name -> tax id where a name is registered once."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self._names = dict(names)
        by_name: dict[str, str | None] = {}
        for tax_id, name in self._names.items():
            by_name[name] = None if name in by_name else tax_id
        self._tax_ids = {name: tax_id for name, tax_id in by_name.items() if tax_id is not None}

    def __len__(self) -> int:
        return len(self._names)

    def name_for(self, tax_id: str | None) -> str | None:
        return self._names.get(tax_id) if tax_id else None

    def tax_id_for(self, name: str | None) -> str | None:
        return self._tax_ids.get(name) if name else None


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
            tax_id, name = normalize_tax_id(raw_id), normalize_text(raw_name)
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
