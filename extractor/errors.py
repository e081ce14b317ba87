"""The project's own error types: every failure a caller can act on is one of these."""

from __future__ import annotations


class RoiError(Exception):
    """Base class of every error roi raises on purpose."""


class InputError(RoiError):
    """The document cannot be read."""


class UnsupportedInputError(InputError):
    """The bytes are not a PDF, OFD, PNG, JPEG, TIFF, HEIC, WebP or AVIF."""


class CorruptInputError(InputError):
    """The bytes claim a supported type but cannot be decoded."""


class TooLargeInputError(InputError):
    """The document exceeds a configured page or pixel limit."""


class TemplateError(RoiError):
    """A template file is invalid."""


class TemplateNotFoundError(TemplateError):
    """No template has the requested name."""


class ModelNotFoundError(RoiError):
    """Model weights are missing; the message names the file and how to provide it."""


class EngineError(RoiError):
    """An OCR engine failed or is misconfigured."""
