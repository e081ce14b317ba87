"""Finding the documents of a batch: files, folders (recursive) and glob patterns."""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from extractor.errors import InputError

DOCUMENT_SUFFIXES = frozenset(
    {".pdf", ".ofd", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".heic", ".heif", ".webp", ".avif"}
)
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Document:
    """One input document: its path as reported, its absolute path and its content hash."""

    path: str
    """The path as found (relative to the working directory when given relative)."""
    key: str
    """The absolute, resolved path: with ``sha256``, the document's identity in the manifest."""
    sha256: str
    size: int


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _is_document(path: Path) -> bool:
    return path.suffix.lower() in DOCUMENT_SUFFIXES and not path.name.startswith(".")


def documents_in(folder: Path) -> list[Path]:
    """The documents under ``folder``, recursively, by suffix (:data:`DOCUMENT_SUFFIXES`),
    sorted; hidden files left out."""
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and _is_document(p)]


def find_paths(inputs: Iterable[str]) -> list[Path]:
    """Every document path named by ``inputs``, each once, in a stable order.

    A file is taken whatever its suffix (its type is judged by content later); a folder is
    searched recursively for documents by suffix (``DOCUMENT_SUFFIXES``); anything else is a glob
    pattern (``**`` recurses). A name that matches nothing raises :class:`InputError`.
    """
    found: dict[Path, None] = {}
    for item in inputs:
        path = Path(item)
        if path.is_file():
            found.setdefault(path, None)
        elif path.is_dir():
            for p in documents_in(path):
                found.setdefault(p, None)
        elif glob.has_magic(item):
            matches = sorted(glob.glob(item, recursive=True))
            files: list[Path] = []
            for m in map(Path, matches):
                if m.is_file():
                    files.append(m)
                elif m.is_dir():
                    files.extend(documents_in(m))
            if not files:
                raise InputError(f"{item}: the pattern matches no files")
            for p in files:
                found.setdefault(p, None)
        else:
            raise InputError(f"{item}: no such file or folder")
    # The same file named twice (e.g. ./a.pdf and a.pdf) is one document.
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


def describe(path: Path) -> Document:
    """Hash a document path (raises :class:`InputError` when it cannot be read)."""
    try:
        return Document(
            path=str(path),
            key=str(path.resolve()),
            sha256=sha256_file(path),
            size=path.stat().st_size,
        )
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
