"""The result of an extraction: stable JSON, one object per document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

Source = Literal["roi", "fallback", "text_layer", "qr"]
PageStatus = Literal["ok", "needs_review", "unmatched"]


class FieldResult(BaseModel):
    value: str | None = Field(description="Normalised value (amounts '1234.56', dates ISO).")
    raw: str = Field(description="Text as recognised, before normalisation.")
    confidence: float = Field(ge=0, le=1, description="Mean per-character recognition confidence.")
    valid: bool
    errors: list[str] = Field(default_factory=list, description="Why the value is not trusted.")
    box: list[float] | None = Field(
        default=None, description="[x, y, width, height] of the text read, in page pixels."
    )
    source: Source = "roi"
    note: str | None = Field(
        default=None,
        description="How the value was mended or vouched for, when it was (a restored decimal "
        "point; a doubtful reading confirmed by a rule or the QR code).",
    )


@dataclass
class Timings:
    """Milliseconds spent per pipeline stage on one page."""

    decode: float = 0.0
    register: float = 0.0
    crop: float = 0.0
    recognize: float = 0.0
    validate: float = 0.0
    fallback: float = 0.0


class PageResult(BaseModel):
    page: int = Field(description="1-based page number in the document.")
    form: int = Field(
        default=1,
        ge=1,
        description="Which form on the page, 1-based: a page holding several invoices "
        "(photographed or scanned together) gives a result for each, with the same page number.",
    )
    template: str | None
    status: PageStatus
    matched: bool = Field(description="Whether the page registered on the template's frame.")
    registration: Literal["frame", "labels", "text_layer"] | None = Field(
        default=None,
        description="How the page was aligned: its ruled frame, the fallback's printed labels, "
        "or (born-digital PDFs) its text layer at the template's size.",
    )
    match_score: float = Field(ge=0, le=1)
    rotation_deg: float = 0.0
    message: str | None = None
    fields: dict[str, FieldResult] = Field(default_factory=dict)
    qr: str | None = Field(default=None, description="The page's QR payload, when one was read.")
    template_scores: dict[str, float] | None = Field(
        default=None,
        description="Every template's match score, when the template was 'auto' or the page "
        "was read as another template than the one asked for (its form's: see ``message``).",
    )
    timings_ms: Timings = Field(default_factory=Timings)


class DocumentResult(BaseModel):
    file: str
    template: str
    engine: str
    pages: list[PageResult]

    @property
    def valid(self) -> bool:
        return all(p.status == "ok" for p in self.pages)
