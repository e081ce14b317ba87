"""Human-readable views of results (terminal tables)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from extractor.result import DocumentResult, FieldResult, PageResult


def page_table(result: PageResult, file: str) -> Table:
    form = f" (form {result.form})" if result.form > 1 else ""
    title = f"{file} — page {result.page}{form} — {result.template} — {result.status}"
    caption = f"match score {result.match_score:.2f}"
    if result.message:
        caption += f" — {result.message}"
    t = result.timings_ms
    caption += (
        f" — ms: decode {t.decode:.0f}, register {t.register:.0f}, crop {t.crop:.0f}, "
        f"recognize {t.recognize:.0f}, validate {t.validate:.0f}"
    )
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    table.add_column("field")
    table.add_column("value")
    table.add_column("conf", justify="right")
    table.add_column("valid")
    table.add_column("source")
    table.add_column("errors / note")
    for name, field in result.fields.items():
        mark = Text("yes", style="green") if field.valid else Text("NO", style="bold red")
        table.add_row(
            name,
            field.value if field.value is not None else "",
            f"{field.confidence:.2f}",
            mark,
            field.source,
            _why(field),
        )
    return table


def _why(field: FieldResult) -> Text:
    """What is wrong with a field, or else how it was mended or vouched for (dimmed)."""
    if field.errors:
        return Text("; ".join(field.errors))
    return Text(field.note or "", style="dim")


def document_table(result: DocumentResult) -> Group:
    return Group(*(page_table(page, result.file) for page in result.pages))
