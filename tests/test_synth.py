"""The synthetic invoice generator and the committed fixture set."""

from __future__ import annotations

import json
import random
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.fields import amount_to_words, is_valid_uscc, parse_amount_words
from extractor.synth import LEVELS, generate_invoice, make_document, render_form
from extractor.synth import layout as L
from extractor.synth.__main__ import main as synth_main
from extractor.synth.content import as_red_letter, make_invoice
from extractor.synth.generate import DATA_OFFSET_MM, truth_json
from extractor.synth.money import org_check_char
from extractor.synth.render import render_invoice
from extractor.templates import TemplateStore

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MIN_COUNTS = {"clean": 14, "light": 12, "medium": 10, "heavy": 8, "geometry": 8}
USCC_CHARSET = "0123456789ABCDEFGHJKLMNPQRTUWXY"


@pytest.fixture(scope="module")
def template():
    return TemplateStore(ROOT / "templates").get("vat_invoice")


def truth_files() -> list[Path]:
    return sorted(FIXTURES.glob("*/*.json"))


def invoice_pages() -> list[tuple[str, dict]]:
    out = []
    for path in truth_files():
        for page in json.loads(path.read_text(encoding="utf-8"))["pages"]:
            if page["template"] is not None:
                out.append((f"{path.parent.name}/{path.name}#{page['page']}", page))
    return out


def uscc_ok(code: str) -> bool:
    """GB 32100-2015, written out here independently of extractor.fields."""
    if len(code) != 18 or any(c not in USCC_CHARSET for c in code):
        return False
    weights = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
    total = sum(USCC_CHARSET.index(c) * w for c, w in zip(code, weights, strict=False))
    return USCC_CHARSET[(31 - total % 31) % 31] == code[17] and is_valid_uscc(code)


# -- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_same_seed_same_pixels(level: str) -> None:
    a, ta = generate_invoice(7, level)
    b, tb = generate_invoice(7, level)
    assert a.dtype == np.uint8 and a.ndim == 3
    assert np.array_equal(a, b)
    assert ta == tb


def test_content_depends_on_seed_only() -> None:
    fields = {
        level: generate_invoice(11, level)[1]["pages"][0]["fields"] for level in ("clean", "heavy")
    }
    assert fields["clean"] == fields["heavy"]
    assert generate_invoice(12, "clean")[1]["pages"][0]["fields"] != fields["clean"]


@pytest.mark.parametrize("name", ["clean/vat_invoice_0001", "light/vat_invoice_0015"])
def test_regenerates_committed_document(name: str) -> None:
    truth = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    image, regenerated = generate_invoice(truth["seed"], truth["level"], truth["template"])
    assert json.loads(truth_json({"file": truth["file"], **regenerated})) == truth
    committed = cv2.imread(str(FIXTURES / f"{name}.jpg"), cv2.IMREAD_COLOR)
    assert committed.shape == image.shape
    # JPEG and font rasterisers may differ by version: compare decoded pixels loosely.
    assert np.abs(committed.astype(np.int16) - image.astype(np.int16)).mean() < 1.0


# -- ground truth ------------------------------------------------------------------------------


def test_fixture_set_is_complete_and_small() -> None:
    for level, n in MIN_COUNTS.items():
        jpgs = sorted((FIXTURES / level).glob("*.jpg"))
        assert len(jpgs) >= n, level
        assert all(p.with_suffix(".json").is_file() for p in jpgs)
    multipage = FIXTURES / "multipage"
    assert len(list(multipage.glob("*.pdf"))) >= 2
    assert len(list(multipage.glob("*.tif"))) >= 1
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 15_000_000  # the fixtures issue: under 15 MB
    assert (FIXTURES / "README.md").is_file()


def test_truth_files_are_well_formed() -> None:
    files = truth_files()
    assert files
    names = set()
    for path in files:
        truth = json.loads(path.read_text(encoding="utf-8"))
        assert Path(truth["file"]).stem == path.stem
        assert (path.parent / truth["file"]).is_file()
        assert truth["file"] not in names
        names.add(truth["file"])
        assert truth["template"] == "vat_invoice"
        assert truth["level"] == (
            "multipage" if path.parent.name == "multipage" else path.parent.name
        )
        assert [p["page"] for p in truth["pages"]] == list(range(len(truth["pages"])))
        for page in truth["pages"]:
            if page["template"] is None:
                assert page["fields"] == {}
            else:
                assert page["template"] == "vat_invoice"


@pytest.mark.parametrize(
    ("where", "page"), invoice_pages(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_invoice_truth_is_valid(where: str, page: dict, template) -> None:
    f = page["fields"]
    assert set(f) == {spec.name for spec in template.fields}
    for spec in template.fields:
        if spec.regex:
            assert re.fullmatch(spec.regex, f[spec.name]), (spec.name, f[spec.name])
    for name in ("buyer_tax_id", "seller_tax_id"):
        assert uscc_ok(f[name]), f[name]
    amount, tax, total = (Decimal(f[k]) for k in ("amount", "tax", "total"))
    for k in ("amount", "tax", "total", "total_in_words"):
        assert re.fullmatch(r"\d+\.\d\d", f[k])
    assert amount + tax == total
    assert f["total_in_words"] == f["total"]
    assert Decimal("10.00") <= total <= Decimal("999999.99")
    day = date.fromisoformat(f["issue_date"])
    assert date(2017, 1, 1) <= day <= date(2025, 12, 31)
    assert len(f["check_code"]) == 20 and f["check_code"].isdigit()
    code = f["invoice_code"]
    if len(code) == 12:
        assert code[0] == "0" and code[-2:] in ("04", "05") and day.year >= 2018
    else:
        assert code[7] in "63" and day.year < 2018
    extra = page["extra"]
    items = extra["items"]
    assert 1 <= len(items) <= 5
    assert sum(Decimal(i["amount"]) for i in items) == amount
    assert sum(Decimal(i["tax"]) for i in items) == tax
    words = extra["total_in_words_text"]
    assert words.replace("圆", "元") == amount_to_words(total)
    assert parse_amount_words(words) == f["total"]
    payload = extra["qr_payload"].split(",")
    assert payload[:7] == [
        "01",
        "04",
        code,
        f["invoice_number"],
        f["amount"],
        day.strftime("%Y%m%d"),
        f["check_code"],
    ]


def test_content_rules_hold_over_many_seeds() -> None:
    for seed in range(300):
        inv = make_invoice(random.Random(seed))
        assert uscc_ok(inv.buyer.tax_id) and uscc_ok(inv.seller.tax_id)
        assert (
            inv.seller.tax_id[8:16]
            and org_check_char(inv.seller.tax_id[8:16]) == inv.seller.tax_id[16]
        )
        assert inv.amount + inv.tax == inv.total
        assert sum(i.amount for i in inv.items) == inv.amount
        rates = {i.rate for i in inv.items}
        if inv.issue_date >= date(2019, 4, 1):
            assert rates <= {Decimal("0.13"), Decimal("0.09"), Decimal("0.06"), Decimal("0.03")}
        assert all(len(line) == 27 for line in inv.cipher) and len(inv.cipher) == 4


# -- drawing and geometry ------------------------------------------------------------------------


def test_layout_agrees_with_template(template) -> None:
    for spec in template.fields:
        x0, y0, x1, y1 = L.VALUE_AREAS[spec.name]
        assert spec.box.as_list() == pytest.approx([x0, y0, x1 - x0, y1 - y0]), spec.name


def test_reference_image(template) -> None:
    path = template.reference_image_path
    assert path is not None and path.is_file()
    committed = cv2.imread(str(path), cv2.IMREAD_COLOR)
    w, h = template.reference_size_px
    assert committed.shape == (h, w, 3)
    assert path.stat().st_size < 200_000
    fresh = render_form(template)
    assert fresh.shape == committed.shape
    gray = [cv2.cvtColor(im, cv2.COLOR_BGR2GRAY).astype(np.int16) for im in (fresh, committed)]
    assert np.abs(gray[0] - gray[1]).mean() < 3.0  # the PNG is palette-quantised


def test_print_stays_near_its_boxes(template) -> None:
    """The data layer is offset from the form by at most the level's range plus jitter."""
    for level in ("clean", "medium"):
        truth = generate_invoice(5, level)[1]
        dx, dy = truth["degradations"]["data_offset_mm"]
        ox, oy = DATA_OFFSET_MM[level]
        assert abs(dx) <= ox and abs(dy) <= oy
        boxes = truth["pages"][0]["print"]["field_ink_boxes_mm"]
        assert set(boxes) == {spec.name for spec in template.fields}
        for spec in template.fields:
            x, y, w, h = boxes[spec.name]
            b = spec.box
            assert b.x - ox - 1 <= x and x + w <= b.x + b.w + ox + 1, spec.name
            assert b.y - oy - 1 <= y and y + h <= b.y + b.h + oy + 1, spec.name


def _back_and_reference(seed: int, level: str, ppm: float) -> tuple[np.ndarray, np.ndarray]:
    """The scan warped back to the page by its recorded homography, and the page as printed."""
    doc = make_document(seed, level)
    inv = make_invoice(random.Random(seed))
    page = render_invoice(
        inv, doc.dpi, random.Random(f"render:{seed}"), offset_mm=DATA_OFFSET_MM[level]
    )
    size = (round(L.PAGE_W * ppm), round(L.PAGE_H * ppm))
    to_work = np.array([[ppm, 0, -0.5], [0, ppm, -0.5], [0, 0, 1]])
    h = np.array(doc.truth["degradations"]["page_to_image"])
    back = cv2.warpPerspective(
        doc.image, to_work @ np.linalg.inv(h), size, borderValue=(255, 255, 255)
    )
    ref = cv2.resize(page.image, size, interpolation=cv2.INTER_AREA)
    rows = slice(round(L.FRAME_Y0 * ppm), round(L.FRAME_Y1 * ppm))
    cols = slice(round(L.FRAME_X0 * ppm), round(L.FRAME_X1 * ppm))
    out = []
    for im in (back, ref):
        gray = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY).astype(np.float32)
        out.append(cv2.GaussianBlur(gray, (0, 0), 1.5)[rows, cols])
    return out[0], out[1]


@pytest.mark.parametrize(
    ("seed", "level"), [(3, "light"), (3, "medium"), (3, "heavy"), (4, "heavy")]
)
def test_page_to_image_is_exact(seed: int, level: str) -> None:
    """Warping the scan back with its recorded homography lands it on the printed page."""
    back, ref = _back_and_reference(seed, level, ppm=6.0)
    aligned = np.corrcoef(back.ravel(), ref.ravel())[0, 1]
    shifted = np.corrcoef(np.roll(back, 3, axis=1).ravel(), ref.ravel())[0, 1]  # 0.5 mm off
    assert aligned > 0.75 and aligned > shifted + 0.05


@pytest.mark.parametrize("seed", [2, 23])
def test_clean_qr_code_decodes(seed: int) -> None:
    image, truth = generate_invoice(seed, "clean")
    page = truth["pages"][0]
    x, y, w, h = page["print"]["qr_box_mm"]
    ppm = truth["degradations"]["dpi"] / 25.4
    crop = image[
        round((y - 3) * ppm) : round((y + h + 3) * ppm),
        round((x - 3) * ppm) : round((x + w + 3) * ppm),
    ]
    data, _, _ = cv2.QRCodeDetector().detectAndDecode(crop)
    assert data == page["extra"]["qr_payload"]


def test_multipage_files_open() -> None:
    import pymupdf
    from PIL import Image

    for path in sorted((FIXTURES / "multipage").glob("*.*")):
        if path.suffix == ".json":
            continue
        truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        if path.suffix == ".pdf":
            with pymupdf.open(path) as pdf:
                assert pdf.page_count == len(truth["pages"])
                kinds = [p["template"] for p in truth["pages"]]
                assert None in kinds and "vat_invoice" in kinds
        else:
            with Image.open(path) as tif:
                assert tif.n_frames == len(truth["pages"]) == 2
            assert all(p["template"] == "vat_invoice" for p in truth["pages"])


def test_cli_writes_a_small_set(tmp_path: Path) -> None:
    counts = "clean=1,light=1,medium=0,heavy=1,multipage=0,geometry=1"
    assert (
        synth_main(["--out", str(tmp_path), "--seed", "9", "--counts", counts, "--no-reference"])
        == 0
    )
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        "README.md",
        "clean/vat_invoice_0001.jpg",
        "clean/vat_invoice_0001.json",
        "geometry/vat_invoice_0004.jpg",
        "geometry/vat_invoice_0004.json",
        "heavy/vat_invoice_0003.jpg",
        "heavy/vat_invoice_0003.json",
        "light/vat_invoice_0002.jpg",
        "light/vat_invoice_0002.json",
    ]
    truth = json.loads((tmp_path / "heavy/vat_invoice_0003.json").read_text(encoding="utf-8"))
    assert truth["seed"] == 90003 and truth["level"] == "heavy"


def test_the_geometry_level_is_the_heavy_levels_geometry_at_medium_quality() -> None:
    """The ``geometry`` level measures the heavy level's misregistration alone: the same seed's
    print, geometry and turn as ``heavy``, with the medium level's blur, noise and JPEG quality."""
    from extractor.synth import degrade

    seed = 20269508  # a phone photo with motion blur, then turned: draws after the blur's
    heavy = make_document(seed, "heavy").truth
    assert "motion" in heavy["degradations"]["blur"] and "turn" in heavy["degradations"]
    milder = make_document(seed, "geometry").truth
    assert milder["level"] == "geometry" and milder["pages"] == heavy["pages"]
    for same in ("dpi", "geometry", "turn", "page_to_image", "data_offset_mm"):
        assert milder["degradations"][same] == heavy["degradations"][same], same
    low, high = degrade.BLUR_SIGMA["medium"]
    assert low <= milder["degradations"]["blur"]["sigma_px"] <= high
    assert milder["degradations"]["blur"]["motion"]["length_px"] == 0
    low, high = degrade.JPEG_QUALITY["medium"]
    assert low <= milder["degradations"]["jpeg"]["quality"] <= high


@pytest.mark.parametrize("seed", [7100, 7101, 7102])
def test_a_red_letter_invoice_cancels_its_blue_one(seed: int) -> None:
    """A red-letter invoice (红字发票) is the blue one's content with every quantity and amount
    negative and 负 before the words: its rules hold as the blue one's do."""
    blue = make_invoice(random.Random(seed))
    red = as_red_letter(blue)
    assert (red.code, red.number, red.buyer, red.seller) == (
        blue.code,
        blue.number,
        blue.buyer,
        blue.seller,
    )
    assert (red.amount, red.tax, red.total) == (-blue.amount, -blue.tax, -blue.total)
    assert red.amount < 0 and red.total == red.amount + red.tax
    assert sum(item.amount for item in red.items) == red.amount
    assert sum(item.tax for item in red.items) == red.tax
    assert all(item.quantity.startswith("-") for item in red.items if item.quantity)
    assert parse_amount_words(red.words) == f"{red.total:.2f}"
    fields = make_document(seed, "clean", red_letter=True).truth["pages"][0]["fields"]
    assert (fields["amount"], fields["total"]) == (f"{red.amount:.2f}", f"{red.total:.2f}")
    assert fields["total_in_words"] == fields["total"]


def test_only_an_e_invoice_is_printed_on_an_a4_sheet() -> None:
    """The paper form is printed on its own paper; an e-invoice's PDF on an office sheet."""
    with pytest.raises(ValueError, match="a4 needs electronic"):
        make_document(3, "clean", a4=True)
    doc = make_document(3, "clean", electronic=True, a4=True)
    h, w = doc.image.shape[:2]
    assert h > 1.3 * w and doc.truth["degradations"]["sheet"]["scale"] < 0.85


def test_a_special_invoice_has_a_10_digit_code_and_no_check_code() -> None:
    """A 增值税专用发票 on the paper form: a 10-digit code whose 8th digit is 1 or 5 (domain
    notes), type 01 in the QR code, no check code (its machine number printed on that line)."""
    from extractor.fields.codes import invoice_code_errors
    from extractor.synth.content import as_special

    region_year = slice(0, 6)
    for seed in range(6):
        ordinary = make_invoice(random.Random(seed))
        special = as_special(ordinary)
        assert special.title.endswith("增值税专用发票") and len(special.code) == 10
        assert special.code[7] in "15" and not invoice_code_errors(special.code)
        region_year_of_ordinary = slice(1, 7) if len(ordinary.code) == 12 else region_year
        assert special.code[region_year] == ordinary.code[region_year_of_ordinary]
        assert special.check_code == "" and special.qr_payload.startswith(f"01,01,{special.code},")
        assert "check_code" not in special.fields() and "check_code" in ordinary.fields()
    with pytest.raises(ValueError, match="special is the paper"):
        make_document(3, "clean", special=True, electronic=True)
