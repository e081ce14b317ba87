"""The error a normaliser raises when raw text cannot be turned into a field value."""

from __future__ import annotations

from extractor.errors import RoiError


class FieldValueError(RoiError, ValueError):
    """Raw text that cannot be normalised; the message says why, for a person to read."""
