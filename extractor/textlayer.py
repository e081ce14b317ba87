"""Born-digital PDFs: read each field from the text layer inside its box, no OCR at all.

Used when a PDF page carries a usable text layer and has the template's printed size (a
数电票 PDF is issued at its form's size, so its millimetres are the template's millimetres).
"""

from __future__ import annotations

from collections.abc import Collection

from extractor.fallback import norm
from extractor.loading import Page, Word
from extractor.templates import FieldSpec, Template

SIZE_TOLERANCE_MM = 3.0
MARGIN_MM = 1.5  # born-digital print sits in its cell
LINE_MM = 2.0  # words whose centres are this close vertically share a line


def page_fits(page: Page, template: Template) -> bool:
    if page.words is None or page.size_mm is None:
        return False
    width, height = page.size_mm
    return (
        abs(width - template.page.width_mm) <= SIZE_TOLERANCE_MM
        and abs(height - template.page.height_mm) <= SIZE_TOLERANCE_MM
    )


def words_in_box(
    words: list[Word], spec: FieldSpec, margin_mm: float, labels: Collection[str] = ()
) -> list[Word]:
    """Words whose centres lie in the field's box grown by ``margin_mm``, in reading order,
    without the form's printed labels (``labels``, compared without spaces and colons)."""
    box = spec.box
    x0, y0 = box.x - margin_mm, box.y - margin_mm / 2
    x1, y1 = box.x + box.w + margin_mm, box.y + box.h + margin_mm / 2
    inside = [w for w in words if x0 <= (w.x0 + w.x1) / 2 <= x1 and y0 <= (w.y0 + w.y1) / 2 <= y1]
    return sorted(inside, key=lambda w: (round((w.y0 + w.y1) / 2 / LINE_MM), w.x0))


def join_words(words: list[Word], label: str | None = None) -> str:
    """Words as printed: Latin words keep a space between them, CJK and digits run together;
    the field's own label, when printed in front of the value, is dropped."""
    text = ""
    for word in words:
        if (
            text
            and text[-1].isascii()
            and text[-1].isalpha()
            and word.text[:1].isascii()
            and word.text[:1].isalpha()
        ):
            text += " "
        text += word.text
    if label and norm(text).startswith(norm(label)):
        text = norm(text)[len(norm(label)) :]
    return text
