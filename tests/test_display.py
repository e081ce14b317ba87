"""The terminal table of a page's fields."""

from rich.console import Console

from extractor.display import page_table
from extractor.result import FieldResult, PageResult


def _rendered(page: PageResult) -> str:
    console = Console(record=True, width=200)
    console.print(page_table(page, "scan.jpg"))
    return console.export_text()


def test_a_field_shows_what_is_wrong_or_else_how_it_was_vouched_for() -> None:
    page = PageResult(
        page=1,
        template="vat_invoice",
        status="needs_review",
        matched=True,
        match_score=0.99,
        fields={
            "total_in_words": FieldResult(
                value="84.74",
                raw="",
                confidence=0.97,
                valid=True,
                note="taken from total, which it repeats",
            ),
            "tax": FieldResult(
                value="4.8O",
                raw="¥4.8O",
                confidence=0.4,
                valid=False,
                errors=["not an amount"],
                note="a mend",
            ),
            "total": FieldResult(value="84.74", raw="¥84.74", confidence=0.97, valid=True),
        },
    )
    lines = [line for line in _rendered(page).splitlines() if "│" in line]
    rows = {line.split("│")[1].strip(): line for line in lines}
    assert "taken from total, which it repeats" in rows["total_in_words"]
    assert "not an amount" in rows["tax"] and "a mend" not in rows["tax"]
    assert rows["total"].rstrip("│ ").endswith("roi")
