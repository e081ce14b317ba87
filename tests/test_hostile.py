"""Hostile documents: decompression bombs, broken and looping PDFs, odd image formats.

Each one gets a typed :class:`~extractor.errors.RoiError` with a message, or a correct result,
within bounded time and memory. The bombs run in a child process with an address-space limit, so
a regression shows up as a failed test rather than an out-of-memory machine.
"""

from __future__ import annotations

import io
import json
import resource
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pymupdf
import pytest
from PIL import Image, ImageOps

from extractor.errors import (
    CorruptInputError,
    InputError,
    RoiError,
    TooLargeInputError,
    UnsupportedInputError,
)
from extractor.loading import iter_pages

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ROOT / "fixtures" / "clean" / "vat_invoice_0001.jpg"
MULTIPAGE_PDF = ROOT / "fixtures" / "multipage" / "vat_invoice_0045.pdf"
CHILD_MEMORY_LIMIT = 2 * 1024**3  # address space of the child that opens the bombs
CHILD_PEAK_RSS_MB = 700  # what opening every bomb in turn may cost at most


# -- builders ------------------------------------------------------------------------------------


def png(image: np.ndarray) -> bytes:
    return cv2.imencode(".png", image)[1].tobytes()


def png_header_bomb(width: int = 60000, height: int = 60000) -> bytes:
    """A real small PNG whose IHDR claims ``width`` x ``height`` (the CRC no longer matches)."""
    data = bytearray(png(np.full((40, 60, 3), 200, np.uint8)))
    data[16:20] = width.to_bytes(4, "big")
    data[20:24] = height.to_bytes(4, "big")
    return bytes(data)


def jpeg_header_bomb(width: int = 60000, height: int = 60000, junk: bool = False) -> bytes:
    """A real small JPEG whose SOF claims ``width`` x ``height``; ``junk`` puts a stray byte
    before the SOF segment (libjpeg skips it: a header check must too)."""
    data = bytearray(cv2.imencode(".jpg", np.full((40, 60, 3), 200, np.uint8))[1].tobytes())
    sof = data.find(b"\xff\xc0")
    data[sof + 5 : sof + 7] = height.to_bytes(2, "big")
    data[sof + 7 : sof + 9] = width.to_bytes(2, "big")
    if junk:
        data[sof:sof] = b"\x00"
    return bytes(data)


def photo(kind: str, image: np.ndarray | None = None) -> bytes:
    """A real small HEIC, WebP or AVIF (BGR ``image``; a grey 60 x 40 one by default)."""
    from pillow_heif import register_heif_opener

    register_heif_opener()
    pixels = np.full((40, 60, 3), 200, np.uint8) if image is None else image
    out = io.BytesIO()
    Image.fromarray(cv2.cvtColor(pixels, cv2.COLOR_BGR2RGB)).save(out, format=kind)
    return out.getvalue()


def heic_header_bomb(width: int = 60000, height: int = 60000) -> bytes:
    """A real small HEIC whose coded image claims ``width`` x ``height`` (its ``ispe`` box)."""
    data = bytearray(photo("HEIF"))
    ispe = data.find(b"ispe")
    data[ispe + 8 : ispe + 12] = width.to_bytes(4, "big")
    data[ispe + 12 : ispe + 16] = height.to_bytes(4, "big")
    return bytes(data)


def webp_header_bomb(width: int = 16384, height: int = 16384) -> bytes:
    """A real small WebP whose extended header (VP8X) claims a ``width`` x ``height`` canvas."""
    out = io.BytesIO()
    Image.new("RGBA", (60, 40), (200, 200, 200, 128)).save(out, format="WEBP")  # alpha: VP8X
    data = bytearray(out.getvalue())
    assert data[12:16] == b"VP8X", data[12:16]
    data[24:27] = (width - 1).to_bytes(3, "little")
    data[27:30] = (height - 1).to_bytes(3, "little")
    return bytes(data)


def tiff(
    sizes: list[tuple[int, int]], *, loop_to: int | None = None, deflate: bool = False
) -> bytes:
    """A little-endian greyscale TIFF, one IFD per (width, height) page, all pages sharing one
    strip: uncompressed and short (decoders must cope) or, with ``deflate``, a complete
    zlib-compressed white page (so thousands of big pages fit in a few KB: a real bomb)."""
    w0, h0 = sizes[0]
    strip = zlib.compress(b"\xff" * (w0 * h0), 9) if deflate else b"\xff" * 256
    ifd_size = 2 + 10 * 12 + 4
    data_off = 8 + len(sizes) * ifd_size
    out = bytearray(b"II*\x00" + struct.pack("<I", 8))
    for i, (w, h) in enumerate(sizes):
        entries = [
            (256, 4, w), (257, 4, h), (258, 3, 8), (259, 3, 8 if deflate else 1), (262, 3, 1),
            (273, 4, data_off), (277, 3, 1), (278, 4, h), (279, 4, len(strip)), (284, 3, 1),
        ]  # fmt: skip
        out += struct.pack("<H", len(entries))
        for tag, typ, val in entries:
            if typ == 4:
                out += struct.pack("<HHII", tag, typ, 1, val)
            else:
                out += struct.pack("<HHIHH", tag, typ, 1, val, 0)
        nxt = 8 + (i + 1) * ifd_size if i + 1 < len(sizes) else 0
        if i + 1 == len(sizes) and loop_to is not None:
            nxt = 8 + loop_to * ifd_size
        out += struct.pack("<I", nxt)
    return bytes(out + strip)


def zipped(*names: str) -> bytes:
    """A ZIP archive holding ``names`` (an OFD package's entry point is OFD.xml)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, "<x/>")
    return buffer.getvalue()


def pdf(objects: list[bytes]) -> bytes:
    """A hand-written PDF: object 1 is the catalog, with a correct xref table."""
    out = b"%PDF-1.7\n"
    offsets = []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out + trailer.encode()


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"


def pdf_page(media_box: str = "0 0 683 397", count: int = 1, extra: bytes = b"") -> bytes:
    return pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count %d >>" % count,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [%s] %s>>" % (media_box.encode(), extra),
        ]
    )


def pdf_kids_cycle() -> bytes:
    return pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 2 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
        ]
    )


def pdf_kids_self() -> bytes:
    return pdf([CATALOG, b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>"])


def pdf_parent_cycle() -> bytes:
    """A page whose /Parent is itself (inherited attributes are looked up through /Parent)."""
    return pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 3 0 R >>",
        ]
    )


def pdf_xobject_cycle() -> bytes:
    """A form XObject that draws itself: rendering must stop, not recurse forever."""
    return pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 400] /Resources 4 0 R "
            b"/Contents 5 0 R >>",
            b"<< /XObject << /X 6 0 R >> >>",
            b"<< /Length 8 >>\nstream\n/X Do   \nendstream",
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 600 400] /Resources 4 0 R /Length 8 >>"
            b"\nstream\n/X Do   \nendstream",
        ]
    )


def pdf_blank(pages: int, size: float = 10) -> bytes:
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=size, height=size)
    return doc.tobytes()


def pdf_encrypted(user_password: str | None) -> bytes:
    doc = pymupdf.open()
    doc.new_page(width=683, height=397).insert_text((50, 50), "invoice")
    return doc.tobytes(
        encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw=user_password or ""
    )


# -- the catalogue (also listed in docs/reliability.md) ------------------------------------------

# name -> (builder, expected): an error class name, or "ok" for a result.
BOMBS: dict[str, tuple[Callable[[], bytes], str]] = {
    "png_60000x60000_header": (png_header_bomb, "TooLargeInputError"),
    "jpeg_60000x60000_header": (jpeg_header_bomb, "TooLargeInputError"),
    "jpeg_60000x60000_junk_before_sof": (
        lambda: jpeg_header_bomb(junk=True),
        "TooLargeInputError",
    ),
    "jpeg_20000x20000_header": (lambda: jpeg_header_bomb(20000, 20000), "TooLargeInputError"),
    "tiff_60000x60000_header": (lambda: tiff([(60000, 60000)]), "TooLargeInputError"),
    "tiff_9000x9000_header": (lambda: tiff([(9000, 9000)]), "TooLargeInputError"),
    "tiff_3000_tiny_pages": (lambda: tiff([(16, 16)] * 3000), "TooLargeInputError"),
    "tiff_300_deflated_2000x2000_pages": (
        lambda: tiff([(2000, 2000)] * 300, deflate=True),
        "TooLargeInputError",
    ),
    "tiff_ifd_loop": (lambda: tiff([(16, 16)] * 3, loop_to=0), "ok"),
    "pdf_mediabox_1e6_pt": (lambda: pdf_page("0 0 1000000 1000000"), "TooLargeInputError"),
    "pdf_mediabox_14400_pt": (lambda: pdf_page("0 0 14400 14400"), "TooLargeInputError"),
    "pdf_userunit_75000": (
        lambda: pdf_page("0 0 14400 14400", extra=b"/UserUnit 75000 "),
        "TooLargeInputError",
    ),
    "pdf_mediabox_1e40_pt": (lambda: pdf_page("0 0 1e40 1e40"), "ok"),
    "pdf_page_count_2e9": (lambda: pdf_page(count=2_000_000_000), "CorruptInputError"),
    "pdf_5000_pages": (lambda: pdf_blank(5000), "TooLargeInputError"),
    # libheif refuses it (its own limit on a coded image's size) before allocating anything
    "heic_60000x60000_coded_image": (heic_header_bomb, "CorruptInputError"),
    "webp_16384x16384_canvas": (webp_header_bomb, "TooLargeInputError"),
}

ODD: dict[str, tuple[Callable[[], bytes], str]] = {
    "zero_bytes": (lambda: b"", "CorruptInputError"),
    "text_named_pdf": (
        lambda: b"hello, I am a text file named invoice.pdf",
        "UnsupportedInputError",
    ),
    "gif": (lambda: b"GIF89a" + b"\0" * 100, "UnsupportedInputError"),
    "bigtiff": (lambda: b"II+\x00" + b"\0" * 100, "UnsupportedInputError"),
    "png_signature_only": (lambda: b"\x89PNG\r\n\x1a\n", "CorruptInputError"),
    "jpeg_soi_only": (lambda: b"\xff\xd8\xff", "CorruptInputError"),
    "tiff_header_only": (lambda: b"II*\x00\x08\x00\x00\x00", "CorruptInputError"),
    "pdf_header_only": (lambda: b"%PDF-1.7\n%%EOF\n", "CorruptInputError"),
    "pdf_kids_cycle": (pdf_kids_cycle, "CorruptInputError"),
    "pdf_kids_self": (pdf_kids_self, "CorruptInputError"),
    "pdf_parent_cycle": (pdf_parent_cycle, "ok"),
    "pdf_xobject_draws_itself": (pdf_xobject_cycle, "ok"),
    "pdf_encrypted_user_password": (lambda: pdf_encrypted("secret"), "InputError"),
    "pdf_encrypted_owner_password_only": (lambda: pdf_encrypted(None), "ok"),
    "pdf_truncated_to_100_bytes": (lambda: MULTIPAGE_PDF.read_bytes()[:100], "CorruptInputError"),
    "tiff_truncated_strips": (lambda: tiff([(64, 64)]), "CorruptInputError"),
    "heic_truncated": (lambda: photo("HEIF")[:300], "CorruptInputError"),
    "webp_truncated": (lambda: photo("WEBP")[:40], "CorruptInputError"),
    "avif_truncated": (lambda: photo("AVIF")[:200], "CorruptInputError"),
    "mp4_video": (
        lambda: b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + bytes(64),
        "UnsupportedInputError",
    ),
}


def outcome(data: bytes, max_pages: int = 200) -> tuple[str, str, int]:
    """(error class name or "ok", message, pages) of reading every page of ``data``."""
    try:
        pages = list(iter_pages(data, max_pages=max_pages))
    except RoiError as exc:
        return type(exc).__name__, str(exc), 0
    return "ok", "", len(pages)


# -- tests ---------------------------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    sys.path.insert(0, {tests!r})
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    import test_hostile as h
    out = {{}}
    for name, (build, _) in h.BOMBS.items():
        data = build()
        start = time.perf_counter()
        try:
            kind, message, pages = h.outcome(data)
        except BaseException as exc:  # anything not typed is a failure the parent reports
            kind, message, pages = "UNTYPED " + type(exc).__name__, str(exc)[:300], 0
        out[name] = {{
            "kind": kind, "message": message, "pages": pages, "size": len(data),
            "seconds": round(time.perf_counter() - start, 3),
            "peak_rss_mb": h.peak_rss_mb(),
        }}
    print(json.dumps(out))
    """
)


def peak_rss_mb() -> int:
    """This process's own peak RSS. (``ru_maxrss`` is no good in a child: Linux carries the
    parent's high-water mark over fork and exec, so under a big pytest process it reads high.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_bombs() -> dict[str, dict[str, object]]:
    """Open every bomb in a child with a 2 GiB address-space limit; their outcomes."""
    code = _CHILD.format(tests=str(Path(__file__).parent), limit=CHILD_MEMORY_LIMIT)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_bombs_are_refused_before_decoding() -> None:
    results = run_bombs()
    for name, (_, expected) in BOMBS.items():
        got = results[name]
        assert got["kind"] == expected, (name, got)
        if expected != "ok":
            assert got["message"], name
        assert got["seconds"] < 10, (name, got)
    peak = max(int(r["peak_rss_mb"]) for r in results.values())
    assert peak < CHILD_PEAK_RSS_MB, results


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_inputs_typed_error_or_result(name: str) -> None:
    build, expected = ODD[name]
    kind, message, pages = outcome(build())
    assert kind == expected, (name, kind, message)
    if expected == "ok":
        assert pages >= 1
    else:
        assert message


def test_error_classes_are_input_errors() -> None:
    for cls in (CorruptInputError, TooLargeInputError, UnsupportedInputError):
        assert issubclass(cls, InputError) and issubclass(cls, RoiError)


def test_truncated_pdfs_error_or_render() -> None:
    whole = MULTIPAGE_PDF.read_bytes()
    for cut in (100, 1000, 5000, len(whole) // 2, len(whole) - 100):
        kind, message, _ = outcome(whole[:cut])
        assert kind in ("ok", "CorruptInputError"), (cut, kind, message)


def test_wrong_extension_is_judged_by_content(tmp_path: Path) -> None:
    named_pdf = tmp_path / "scan.pdf"
    named_pdf.write_bytes(CLEAN.read_bytes())  # a JPEG named .pdf
    pages = list(iter_pages(named_pdf.read_bytes()))
    assert len(pages) == 1 and pages[0].dpi is None  # decoded as an image, not rendered


def test_rgba_png_is_composited_on_white() -> None:
    image = np.zeros((60, 80, 4), np.uint8)  # transparent black everywhere
    image[10:20, 10:30] = (0, 0, 0, 255)  # an opaque black block
    image[30:40, 10:30] = (0, 0, 0, 128)  # 50% black
    image[45:55, 40:60] = (0, 0, 255, 255)  # opaque red
    page = next(iter_pages(png(image)))
    assert page.image.shape == (60, 80, 3) and page.image.dtype == np.uint8
    assert (page.image[0:5, 40:80] == 255).all()  # paper, not black
    assert (page.image[10:20, 10:30] == 0).all()
    assert abs(int(page.image[35, 20, 0]) - 127) <= 2
    assert tuple(page.image[50, 50]) == (0, 0, 255)


def test_grey_alpha_and_palette_transparency_are_white() -> None:
    for mode, kwargs in (("LA", {}), ("P", {"transparency": 0})):
        buf = io.BytesIO()
        Image.new(mode, (40, 30), 0).save(buf, "PNG", **kwargs)
        page = next(iter_pages(buf.getvalue()))
        assert (page.image == 255).all(), mode


def test_rgba_tiff_is_composited_on_white() -> None:
    buf = io.BytesIO()
    Image.new("RGBA", (40, 30), (0, 0, 0, 0)).save(buf, "TIFF")
    page = next(iter_pages(buf.getvalue()))
    assert page.image.shape == (30, 40, 3) and (page.image == 255).all()


def test_16_bit_png_scaled_to_8_bit() -> None:
    ramp = np.tile(np.linspace(0, 65535, 256).astype(np.uint16), (10, 1))
    for image in (ramp, np.dstack([ramp] * 3)):
        page = next(iter_pages(png(image)))
        assert page.image.dtype == np.uint8 and page.image.shape == (10, 256, 3)
        got = page.image[0, :, 0].astype(int)
        assert np.abs(got - np.round(np.linspace(0, 255, 256))).max() <= 1


def test_cmyk_jpeg_colours() -> None:
    for cmyk, bgr in (((0, 0, 0, 0), (255, 255, 255)), ((0, 255, 255, 0), (0, 0, 255)),
                      ((0, 0, 0, 255), (0, 0, 0))):  # fmt: skip
        buf = io.BytesIO()
        Image.new("CMYK", (40, 30), cmyk).save(buf, "JPEG", quality=95)
        page = next(iter_pages(buf.getvalue()))
        assert np.abs(page.image[15, 20].astype(int) - bgr).max() <= 12, (cmyk, page.image[15, 20])


def _exif_jpeg(image: Image.Image, orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=95, exif=exif.tobytes())
    return buf.getvalue()


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow(orientation: int) -> None:
    """Every EXIF orientation is applied as Pillow's exif_transpose does (the reference)."""
    stored = Image.new("RGB", (80, 50), (255, 255, 255))
    stored.paste((0, 0, 0), (0, 0, 20, 10))  # a marker at the stored top-left corner
    data = _exif_jpeg(stored, orientation)
    expected = cv2.cvtColor(
        np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data)))), cv2.COLOR_RGB2BGR
    )
    page = next(iter_pages(data))
    assert page.image.shape == expected.shape
    assert np.abs(page.image.astype(int) - expected.astype(int)).max() <= 8


# -- real documents in odd clothing: same fields as the plain scan --------------------------------


@pytest.fixture(scope="module")
def extractor():  # type: ignore[no-untyped-def]
    from extractor.pipeline import Extractor

    return Extractor(fallback="never")


def _values(result: object) -> dict[str, str | None]:
    return {k: f.value for k, f in result.pages[0].fields.items()}  # type: ignore[attr-defined]


def test_invoice_as_exif_rotated_jpeg_and_rgba_png(extractor) -> None:  # type: ignore[no-untyped-def]
    plain = _values(extractor.extract(CLEAN, "vat_invoice"))
    truth = json.loads(CLEAN.with_suffix(".json").read_text(encoding="utf-8"))
    expected = {
        k: (v.get("value") if isinstance(v, dict) else v)
        for k, v in truth["pages"][0]["fields"].items()
    }
    assert sum(plain.get(k) == v for k, v in expected.items()) >= 0.8 * len(expected)

    image = Image.open(CLEAN)
    # Stored turned 90 degrees anticlockwise, with orientation 6 saying "turn clockwise to view".
    rotated = _exif_jpeg(image.transpose(Image.Transpose.ROTATE_90), 6)
    assert _values(extractor.extract(rotated, "vat_invoice")) == plain

    rgba = np.asarray(image.convert("RGBA")).copy()
    ink = rgba[:, :, :3].min(axis=2) < 200
    rgba[~ink, 3] = 0  # paper transparent: composited on black it would be a black page
    rgba[~ink, :3] = 0
    data = png(cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))
    assert _values(extractor.extract(data, "vat_invoice")) == plain


def test_child_limits_are_real() -> None:
    """The bomb child's address-space limit does stop a real allocation of that size."""
    code = (
        "import resource, numpy as np\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY_LIMIT}, {CHILD_MEMORY_LIMIT}))\n"
        "try:\n    np.ones((60000, 60000, 3), np.uint8)\n"
        "except MemoryError:\n    print('refused')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused" in proc.stdout, proc.stderr
    assert resource.getrlimit(resource.RLIMIT_AS)  # the parent is not limited by this test
