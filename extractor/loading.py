"""Inputs: PDF, OFD (drawn as PDF: :mod:`extractor.ofd`), PNG, JPEG and TIFF documents, and
photos as phones and browsers save them (HEIC, WebP, AVIF), from a path or bytes, as a stream
of page images.

The type is told by the file's magic bytes, never by its name. Anything unreadable raises an
:class:`~extractor.errors.InputError` subclass with a message a person can act on.
"""

from __future__ import annotations

import functools
import io
import sys
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

import cv2
import numpy as np

from extractor.errors import (
    CorruptInputError,
    InputError,
    TooLargeInputError,
    UnsupportedInputError,
)
from extractor.fields.charsets import plain_character
from extractor.ofd import ofd_to_pdf
from extractor.overprints import without_overprints
from extractor.pdf_scans import embedded_scan, is_scan
from extractor.radicals import unify_radicals

if TYPE_CHECKING:
    import pymupdf

DEFAULT_DPI = 200
MAX_PAGES = 200
MAX_PIXELS = 80_000_000  # per page; a 600 dpi A3 page is ~70 MP
MM_PER_PT = 25.4 / 72
MIN_TEXT_LAYER_WORDS = 5
T = TypeVar("T")
MAX_GARBLED_SHARE = 0.2
"""A text layer more of whose characters than this are no plain text (symbols, kana, rare
ideographs: :func:`~extractor.fields.charsets.plain_character`) is its fonts' glyph ids, their
ToUnicode maps missing: not read. Measured: 1.1-1.5% on born-digital invoices (¥, ⊗), 41-59%
with the CJK fonts' maps taken out."""

_MAGIC: list[tuple[bytes, str]] = [
    (b"%PDF-", "pdf"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
]
MEDIA_TYPES = {
    "pdf": "application/pdf",
    "ofd": "application/ofd",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "tiff": "image/tiff",
    "heic": "image/heic",
    "webp": "image/webp",
    "avif": "image/avif",
}
_HEIC_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"hevm", b"hevs"})
"""ISO base media brands of HEIF stills and sequences in HEVC (an iPhone's photos: heic)."""
_AVIF_BRANDS = frozenset({b"avif", b"avis"})
_HEIF_BRANDS = frozenset({b"mif1", b"msf1"})
"""Any HEIF's brands, whatever its codec: an AVIF lists them too, beside its own."""
PHOTO_KINDS = {"heic": "HEIC", "webp": "WebP", "avif": "AVIF"}
"""Photos' kinds and their names as printed: decoded with Pillow (HEIC through the pillow-heif
plugin, whose wheel ships libheif and its HEVC decoder), their orientation applied."""


@dataclass(frozen=True, slots=True)
class Word:
    """A word of a PDF's text layer, in millimetres from the page's top-left corner."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str


class Page:
    """One page of a document, as a BGR image (and, for born-digital PDFs, its text layer).

    ``image`` may be given as a function that renders it: a PDF page with a text layer is
    rendered only when something asks for its image (a born-digital page read from its text
    layer never is; rendering was most of its cost).
    """

    __slots__ = ("_image", "_pictured", "_render", "dpi", "index", "size_mm", "words")

    def __init__(
        self,
        index: int,
        image: np.ndarray | Callable[[], np.ndarray],
        dpi: float | None,
        size_mm: tuple[float, float] | None = None,
        words: list[Word] | None = None,
        pictured: float | Callable[[], float] = 0.0,
    ) -> None:
        self.index = index
        self.dpi = dpi
        """Pixels per inch when the source says (a PDF page rendered, or the scan it embeds at
        its own resolution); None for images."""
        self.size_mm = size_mm
        """The page's printed size (PDF pages)."""
        self.words = words
        """The PDF's text layer, when it has a usable one."""
        self._pictured = pictured
        self._image, self._render = (None, image) if callable(image) else (image, None)

    @property
    def pictured(self) -> float:
        """The share of a born-digital page's area its images cover (what is printed there is
        not in its text layer: a logo, a QR code, or a scan or photo of a form); measured when
        first asked for (only a page that does not register asks)."""
        if callable(self._pictured):
            self._pictured = self._pictured()
        return self._pictured

    @property
    def image(self) -> np.ndarray:
        if self._image is None:
            assert self._render is not None
            self._image, self._render = self._render(), None
        return self._image


def sniff(data: bytes) -> str:
    """The document type of ``data`` (pdf, ofd, png, jpeg, tiff, heic, webp, avif) from its
    first bytes (an OFD: a ZIP archive holding ``OFD.xml``)."""
    if not data:
        raise CorruptInputError("the file is empty (0 bytes)")
    head = data[:1024]
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if b"%PDF-" in head:  # PDFs may carry junk before the header
        return "pdf"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    heif = _heif_kind(head)
    if heif is not None:
        return heif
    if _is_ofd(data):
        return "ofd"
    raise UnsupportedInputError(
        "unsupported file type: expected a PDF, OFD, PNG, JPEG, TIFF, HEIC, WebP or AVIF "
        "(judged by content, not name)"
    )


def _heif_kind(head: bytes) -> str | None:
    """'heic' or 'avif' for an ISO base media file (its ``ftyp`` box first) of a HEIF brand: the
    major brand names the codec, else a compatible one does; a HEIF naming neither is taken
    for HEVC (libheif says if it is not). Other ftyp files (MP4 videos) are neither."""
    if len(head) < 12 or head[4:8] != b"ftyp":
        return None
    end = min(int.from_bytes(head[:4], "big"), len(head))
    brands = {head[8:12]} | {head[i : i + 4] for i in range(16, end - 3, 4)}
    for named in ({head[8:12]}, brands):
        if named & _AVIF_BRANDS:
            return "avif"
        if named & _HEIC_BRANDS:
            return "heic"
    return "heic" if brands & _HEIF_BRANDS else None


def _is_ofd(data: bytes) -> bool:
    """Whether ``data`` is an OFD package: a ZIP archive whose entry point is ``OFD.xml``."""
    if not data.startswith(b"PK\x03\x04"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "OFD.xml" in archive.namelist()
    except (zipfile.BadZipFile, ValueError):
        return False


def read_source(source: str | Path | bytes) -> tuple[bytes, str]:
    """The bytes of ``source`` and a name to report it by."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), "<bytes>"
    path = Path(source)
    try:
        return path.read_bytes(), str(path)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a directory, not a document") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def iter_pages(
    data: bytes,
    *,
    dpi: int = DEFAULT_DPI,
    pages: set[int] | None = None,
    max_pages: int = MAX_PAGES,
    max_pixels: int = MAX_PIXELS,
) -> Iterator[Page]:
    """Yield the pages of a document one at a time (PDF pages are rendered as they are asked for).

    ``pages`` selects zero-based page indexes; None means all.
    """
    kind = sniff(data)
    if kind in ("pdf", "ofd"):
        if kind == "ofd":  # drawn as a PDF: its text layer read, its pages rendered as asked
            data = ofd_to_pdf(data, max_pages, pages)
        yield from _pdf_pages(
            data, dpi=dpi, pages=pages, max_pages=max_pages, max_pixels=max_pixels
        )
    elif kind == "tiff":
        yield from _tiff_pages(data, pages=pages, max_pages=max_pages, max_pixels=max_pixels)
    else:
        if pages is None or 0 in pages:
            yield Page(0, _decode_image(data, kind, max_pixels), None)


def _check_pixels(width: float, height: float, max_pixels: int, what: str) -> None:
    if width * height > max_pixels:
        raise TooLargeInputError(
            f"{what} is {int(width)} x {int(height)} pixels, over the limit of {max_pixels:,}"
        )


def _image_header_size(data: bytes, kind: str) -> tuple[int, int] | None:
    """(width, height) from a PNG or JPEG header, read before decoding anything."""
    if kind == "png" and len(data) >= 24 and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if kind == "jpeg":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF or data[i + 1] in (0x00, 0xFF):
                i += 1  # junk or fill bytes between segments: libjpeg skips them, so do we
                continue
            marker = data[i + 1]
            if 0xD0 <= marker <= 0xD9 or marker == 0x01:
                i += 2  # markers without a length
                continue
            length = int.from_bytes(data[i + 2 : i + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h = int.from_bytes(data[i + 5 : i + 7], "big")
                w = int.from_bytes(data[i + 7 : i + 9], "big")
                return w, h
            i += 2 + length
    return None


def _png_has_alpha(data: bytes) -> bool:
    """An alpha channel (colour type 4 or 6) or a transparency chunk (tRNS) before the pixels."""
    if len(data) > 25 and data[25] in (4, 6):
        return True
    idat = data.find(b"IDAT")
    trns = data.find(b"tRNS", 0, idat if idat > 0 else len(data))
    return trns > 0


def to_bgr8(image: np.ndarray) -> np.ndarray:
    """Any decoded image as 8-bit BGR: 16-bit and float scaled, grey expanded, and alpha composited
    on white paper (a transparent background is paper, not black ink)."""
    if image.dtype == np.uint16:
        image = (image.astype(np.float32) / 257.0).round().astype(np.uint8)
    elif image.dtype in (np.float32, np.float64):
        image = (np.clip(image, 0.0, 1.0) * 255.0).round().astype(np.uint8)
    elif image.dtype != np.uint8:
        image = cv2.normalize(image, None, 0, 255, cv2.NORM_MINMAX).astype(np.uint8)
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    channels = image.shape[2]
    if channels == 1:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if channels in (2, 4):
        color = image[:, :, :-1]
        if channels == 2:
            color = cv2.cvtColor(color, cv2.COLOR_GRAY2BGR)
        alpha = image[:, :, -1:].astype(np.float32) / 255.0
        out = color.astype(np.float32) * alpha + 255.0 * (1.0 - alpha)
        return out.round().astype(np.uint8)
    return image[:, :, :3] if channels > 3 else image


def _decode_image(data: bytes, kind: str, max_pixels: int) -> np.ndarray:
    if kind in PHOTO_KINDS:
        return _decode_photo(data, kind, max_pixels)
    size = _image_header_size(data, kind)
    if size is None:
        size = _pil_size(data)
    if size is not None:
        _check_pixels(*size, max_pixels, "the image")
    # IMREAD_COLOR applies EXIF orientation and converts CMYK, grey and 16-bit; it drops alpha,
    # which would turn a transparent background black, so PNGs with alpha are read unchanged.
    alpha = kind == "png" and _png_has_alpha(data)
    flags = cv2.IMREAD_UNCHANGED if alpha else cv2.IMREAD_COLOR
    try:
        image = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
    except cv2.error as exc:
        raise CorruptInputError(f"the {kind.upper()} image cannot be decoded: {exc.err}") from exc
    if image is None or image.size == 0:
        raise CorruptInputError(
            f"the {kind.upper()} image is corrupt or truncated and cannot be decoded"
        )
    return to_bgr8(image) if alpha else image


def _decode_photo(data: bytes, kind: str, max_pixels: int) -> np.ndarray:
    """A HEIC, WebP or AVIF photo as 8-bit BGR, turned as its orientation says (HEIF applies its
    own transforms on decoding; the others' EXIF orientation is applied here), 10- and 12-bit
    HEIC reduced to 8, alpha composited on white paper."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    if kind == "heic":
        _register_heif()
    name = PHOTO_KINDS[kind]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as opened:  # the header alone, so far
                _check_pixels(*opened.size, max_pixels, "the image")
                image = ImageOps.exif_transpose(opened)
                alpha = "A" in image.getbands() or "transparency" in image.info
                pixels = np.asarray(image.convert("RGBA" if alpha else "RGB"))
    except InputError:
        raise
    except Image.DecompressionBombError as exc:  # Pillow's own limit is above ours
        raise TooLargeInputError(f"the image is over the pixel limit: {exc}") from exc
    except UnidentifiedImageError as exc:  # its header is not whole
        raise CorruptInputError(f"the {name} image is corrupt and cannot be decoded") from exc
    except Exception as exc:  # the decoders raise OSError, ValueError, SyntaxError...
        raise CorruptInputError(
            f"the {name} image is corrupt or truncated and cannot be decoded: {str(exc).strip()}"
        ) from exc
    bgr = cv2.cvtColor(pixels, cv2.COLOR_RGBA2BGRA if alpha else cv2.COLOR_RGB2BGR)
    return to_bgr8(bgr) if alpha else bgr


@functools.cache
def _register_heif() -> None:
    """Pillow's HEIF opener (pillow-heif), registered once per process."""
    from pillow_heif import register_heif_opener

    register_heif_opener()


def _pil_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) as Pillow reads it from the header (no pixels decoded), or None."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow warns about odd headers; we judge
            with Image.open(io.BytesIO(data)) as im:
                return im.size
    except Image.DecompressionBombError as exc:
        raise TooLargeInputError(f"the image is over the pixel limit: {exc}") from exc
    except Exception:
        return None


def _tiff_frames(data: bytes, max_pages: int, max_pixels: int) -> list[tuple[int, int, bool]]:
    """(width, height, has alpha) of each TIFF page, from the IFDs alone (no pixels decoded).

    Stops after ``max_pages + 1`` pages, so a file with thousands of pages is refused without
    walking them all; Pillow stops at an IFD chain that loops.
    """
    from PIL import Image

    frames: list[tuple[int, int, bool]] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow warns about odd headers; we judge
            with Image.open(io.BytesIO(data)) as im:
                while True:
                    width, height = im.size
                    frames.append((width, height, "A" in im.mode))
                    if len(frames) > max_pages:
                        raise TooLargeInputError(
                            f"the TIFF has more than {max_pages} pages, over the limit of "
                            f"{max_pages}"
                        )
                    _check_pixels(width, height, max_pixels, f"TIFF page {len(frames)}")
                    try:
                        im.seek(len(frames))
                    except EOFError:
                        break
    except InputError:
        raise
    except Image.DecompressionBombError as exc:  # Pillow's own limit is above ours
        raise TooLargeInputError(f"the TIFF is over the pixel limit: {exc}") from exc
    except Exception as exc:
        if not frames:
            raise CorruptInputError(
                f"the TIFF image is corrupt or truncated and cannot be decoded: {exc}"
            ) from exc
        # A broken IFD after good pages: keep the pages read so far (as OpenCV would).
    return frames


def _tiff_pages(
    data: bytes, *, pages: set[int] | None, max_pages: int, max_pixels: int
) -> Iterator[Page]:
    # Page count and sizes come from the headers first; then pages are decoded one at a time, so
    # a small file of thousands of well-compressed pages never sits decoded in memory at once.
    frames = _tiff_frames(data, max_pages, max_pixels)
    buf = np.frombuffer(data, np.uint8)
    for index, (width, height, alpha) in enumerate(frames):
        if pages is not None and index not in pages:
            continue
        _check_pixels(width, height, max_pixels, f"TIFF page {index + 1}")
        flags = cv2.IMREAD_UNCHANGED if alpha else cv2.IMREAD_COLOR
        try:
            ok, decoded = cv2.imdecodemulti(buf, flags, None, (index, index + 1))
        except cv2.error as exc:
            raise CorruptInputError(f"TIFF page {index + 1} cannot be decoded: {exc.err}") from exc
        if not ok or not decoded or decoded[0] is None or decoded[0].size == 0:
            raise CorruptInputError(
                f"TIFF page {index + 1} is corrupt or truncated and cannot be decoded"
            )
        frame = decoded[0]
        yield Page(index, to_bgr8(frame) if alpha else frame, None)


def _text_layer(page: object) -> list[Word] | None:
    """The page's words in mm as the page is shown (and rendered: a page with /Rotate turns
    its words with it), or None when it has no usable text layer (a scanned PDF; a scan's
    invisible OCR layer is never asked for, :func:`~extractor.pdf_scans.is_scan`; one whose
    fonts' glyphs are not mapped to text, :data:`MAX_GARBLED_SHARE`). Radicals that stand for
    ideographs are spelled as the ideographs (:mod:`extractor.radicals`). A glyph its font does
    not map to text stays U+FFFD: a field holding one is not read from the text layer (dropped,
    it would leave a name valid with characters missing). Text drawn again over itself (bold
    by overprinting) is read once (:mod:`extractor.overprints`)."""
    import pymupdf

    try:
        textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_WORDS)  # type: ignore[attr-defined]
        raw = without_overprints(
            page.get_text("words", textpage=textpage, sort=True),  # type: ignore[attr-defined]
            page.get_text("rawdict", textpage=textpage),  # type: ignore[attr-defined]
        )
        turn = page.rotation_matrix  # type: ignore[attr-defined]
    except Exception:
        return None
    words = []
    for x0, y0, x1, y1, text, *_ in raw:
        if clean := unify_radicals(text.strip()):
            shown = pymupdf.Rect(x0, y0, x1, y1) * turn
            words.append(
                Word(
                    shown.x0 * MM_PER_PT,
                    shown.y0 * MM_PER_PT,
                    shown.x1 * MM_PER_PT,
                    shown.y1 * MM_PER_PT,
                    clean,
                )
            )
    if len(words) < MIN_TEXT_LAYER_WORDS:
        return None
    text = "".join(word.text for word in words)
    garbled = sum(not plain_character(ch) for ch in text)
    return None if garbled > MAX_GARBLED_SHARE * len(text) else words


PYMUPDF_EXTRAS = ("pymupdf.layout", "pymupdf4llm")
"""Packages PyMuPDF 2 imports with itself when they are installed (and it requires them):
``pymupdf.layout`` builds an ONNX layout-analysis model on import, for ``Page.get_layout``.
roi uses neither; imported, they cost a process up to ~80 MB of resident memory (less where
onnxruntime is loaded already: ~25-50 MB in a worker) and the first PDF ~0.5 s (measured:
``import pymupdf`` 115 against 33 MB, 0.60 against 0.08 s)."""


def _pymupdf() -> ModuleType:
    """PyMuPDF, imported the first time without :data:`PYMUPDF_EXTRAS`. They are kept out only
    while it is imported (an import of a module whose ``sys.modules`` entry is None fails, and
    PyMuPDF imports each of them in a ``try``): a caller may still import them afterwards."""
    if "pymupdf" not in sys.modules:
        kept_out = [name for name in PYMUPDF_EXTRAS if name not in sys.modules]
        sys.modules.update(dict.fromkeys(kept_out))
        try:
            import pymupdf  # noqa: F401
        finally:
            for name in kept_out:
                if sys.modules.get(name, False) is None:
                    del sys.modules[name]
    return sys.modules["pymupdf"]


def _pdf_pages(
    data: bytes, *, dpi: int, pages: set[int] | None, max_pages: int, max_pixels: int
) -> Iterator[Page]:
    pymupdf = _pymupdf()

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # pymupdf raises its own FileDataError and RuntimeErrors
        raise CorruptInputError(f"the PDF is corrupt or truncated: {exc}") from exc
    with doc:
        try:
            encrypted = doc.needs_pass
            count = doc.page_count
        except Exception as exc:  # e.g. a page tree whose /Count is absurd
            raise CorruptInputError(f"the PDF's page tree is broken: {exc}") from exc
        if encrypted:
            raise InputError("the PDF is encrypted with a password; remove it and try again")
        if count == 0:
            raise CorruptInputError("the PDF has no pages (corrupt or truncated)")
        if count > max_pages:
            raise TooLargeInputError(f"the PDF has {count} pages, over the limit of {max_pages}")
        zoom = dpi / 72.0
        for index in range(count):
            if pages is not None and index not in pages:
                continue
            try:
                page = doc.load_page(index)
                rect = page.rect
                _check_pixels(
                    rect.width * zoom, rect.height * zoom, max_pixels, f"PDF page {index + 1}"
                )
            except TooLargeInputError:
                raise
            except Exception as exc:
                raise CorruptInputError(f"PDF page {index + 1} cannot be read: {exc}") from exc
            size_mm = (rect.width * MM_PER_PT, rect.height * MM_PER_PT)
            scan = _is_scan(page)
            words = None if scan else _text_layer(page)
            if words:
                render = _later(
                    data, index, lambda page, i=index: _render(page, i, zoom), "rendered"
                )
                pictured = _later(data, index, _pictured, "read")
                yield Page(index, render, float(dpi), size_mm, words, pictured)
                continue
            embedded = _embedded_scan(doc, page, dpi, max_pixels) if scan else None
            image, image_dpi = embedded or (_render(page, index, zoom), float(dpi))
            yield Page(index, image, image_dpi, size_mm, None)


def _pictured(page: pymupdf.Page) -> float:
    """The share of ``page``'s area its images cover (overlaps counted twice; 1 when PyMuPDF
    cannot list them)."""
    import pymupdf

    try:
        area = page.rect.get_area()
        drawn = sum((pymupdf.Rect(i["bbox"]) & page.rect).get_area() for i in page.get_image_info())
    except Exception:  # pymupdf raises its own errors and RuntimeErrors
        return 1.0
    return min(1.0, drawn / area) if area else 1.0


def _is_scan(page: pymupdf.Page) -> bool:
    """:func:`~extractor.pdf_scans.is_scan`; False when PyMuPDF cannot list the page's drawing."""
    try:
        return is_scan(page)
    except Exception:  # pymupdf raises its own errors and RuntimeErrors
        return False


def _embedded_scan(
    doc: pymupdf.Document, page: pymupdf.Page, dpi: int, max_pixels: int
) -> tuple[np.ndarray, float] | None:
    """:func:`~extractor.pdf_scans.embedded_scan`, or None (the page is rendered) when the PDF
    holds it in a way PyMuPDF or the decoder cannot follow."""
    try:
        return embedded_scan(doc, page, dpi, max_pixels)
    except Exception:  # pymupdf raises its own errors and RuntimeErrors; rendering says why
        return None


def _render(page: object, index: int, zoom: float) -> np.ndarray:
    """A PDF page as a BGR image at ``zoom`` (pixels per point)."""
    import pymupdf

    try:
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)  # type: ignore[attr-defined]
        image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)
        return cv2.cvtColor(image, cv2.COLOR_RGB2BGR if pix.n == 3 else cv2.COLOR_GRAY2BGR)
    except Exception as exc:
        raise CorruptInputError(f"PDF page {index + 1} cannot be rendered: {exc}") from exc


def _later(
    data: bytes, index: int, read: Callable[[pymupdf.Page], T], what: str
) -> Callable[[], T]:
    """``read`` of page ``index`` of the PDF ``data``, when called (it opens the document again:
    the loader's copy may be closed by then; opening costs ~0.1 ms). ``what`` says what is done
    with the page, for the error when it cannot be opened."""

    def later() -> T:
        pymupdf = _pymupdf()
        try:
            doc = pymupdf.open(stream=data, filetype="pdf")
            page = doc.load_page(index)
        except Exception as exc:
            raise CorruptInputError(f"PDF page {index + 1} cannot be {what}: {exc}") from exc
        with doc:
            return read(page)

    return later
