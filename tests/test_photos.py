"""Photos as phones and browsers save them: HEIC (an iPhone's default), WebP and AVIF, read like
the JPEG they were made from; the type told by the content, the orientation applied."""

import io
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from extractor.batch.inputs import find_paths
from extractor.errors import CorruptInputError, TooLargeInputError, UnsupportedInputError
from extractor.loading import PHOTO_KINDS, iter_pages, sniff
from extractor.pipeline import Extractor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FORMATS = {"heic": "HEIF", "webp": "WEBP", "avif": "AVIF"}
ORIENTATION = 0x0112


def _saved(image: np.ndarray, kind: str, quality: int = 90, exif: bytes | None = None) -> bytes:
    """``image`` (BGR) saved as ``kind`` by the encoders the packages ship (x265 for HEIC)."""
    from pillow_heif import register_heif_opener

    register_heif_opener()
    out = io.BytesIO()
    pil = Image.fromarray(cv2.cvtColor(image, cv2.COLOR_BGR2RGB))
    pil.save(out, format=FORMATS[kind], quality=quality, **({"exif": exif} if exif else {}))
    return out.getvalue()


@pytest.fixture(scope="module")
def extractor() -> Extractor:
    return Extractor(fallback="never")


@pytest.mark.parametrize("kind", FORMATS)
def test_a_photo_in_each_format_reads_every_field(extractor: Extractor, kind: str) -> None:
    path = FIXTURES / "light" / "vat_invoice_0015.jpg"
    data = _saved(cv2.imread(str(path)), kind)
    assert sniff(data) == kind
    (page,) = extractor.extract(data, "vat_invoice").pages
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    got = {name: field.value for name, field in page.fields.items()}
    assert got == expected["pages"][0]["fields"]
    assert all(field.valid for field in page.fields.values())


@pytest.mark.parametrize("kind", FORMATS)
def test_a_photo_is_turned_as_its_orientation_says(kind: str) -> None:
    """A phone stores a portrait shot sideways with 'turn me' beside it: EXIF orientation 6 in
    a WebP or AVIF; in a HEIC a rotation of its own (``irot``), which pillow-heif writes from
    EXIF bytes as an iPhone does (HEIF readers take irot, not EXIF, as the spec says)."""
    upright = np.full((120, 80, 3), 255, np.uint8)
    upright[:30, :40] = (0, 0, 200)  # a red corner top-left, as the page is read
    stored = cv2.rotate(upright, cv2.ROTATE_90_COUNTERCLOCKWISE)  # orientation 6 undoes this
    exif = Image.Exif()
    exif[ORIENTATION] = 6
    (page,) = iter_pages(_saved(stored, kind, quality=95, exif=exif.tobytes()))
    assert page.image.shape == upright.shape
    assert np.abs(page.image.astype(int) - upright).mean() < 6


def test_what_is_no_photo_of_those_kinds_is_told_apart() -> None:
    assert sniff(b"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1avif" + bytes(64)) == "avif"
    assert sniff(b"\x00\x00\x00\x14ftypmif1\x00\x00\x00\x00mif1" + bytes(64)) == "heic"
    with pytest.raises(UnsupportedInputError, match="HEIC, WebP or AVIF"):
        sniff(b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2" + bytes(64))  # an MP4 video
    image = np.full((40, 60, 3), 200, np.uint8)
    for kind in FORMATS:
        data = _saved(image, kind)
        with pytest.raises(CorruptInputError, match=f"the {PHOTO_KINDS[kind]} image is corrupt"):
            list(iter_pages(data[: len(data) // 2]))
        with pytest.raises(TooLargeInputError, match="60 x 40 pixels"):
            list(iter_pages(data, max_pixels=1000))  # told from the header, nothing decoded


def test_a_batch_folder_takes_the_photos(tmp_path: Path) -> None:
    for name in ("a.heic", "b.HEIF", "c.webp", "d.avif", "e.mov"):
        (tmp_path / name).write_bytes(b"x")
    assert sorted(p.name for p in find_paths([str(tmp_path)])) == [
        "a.heic",
        "b.HEIF",
        "c.webp",
        "d.avif",
    ]
