"""Pages that do not lie flat: what the homography leaves, measured on the form's rules and
taken out (extractor.bend)."""

import json
from pathlib import Path

import cv2
import numpy as np

from extractor.bend import GRID_MM, REACH_MM, find_bend, rules_of, shifts
from extractor.registration import ink_ruling, register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PPM = 4.0  # px per mm of the synthetic ruling maps


def sagged(image: np.ndarray, amount: float) -> np.ndarray:
    """Every row arcing down by up to ``amount`` of the height in the middle (bench.bends)."""
    h, w = image.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    sy = yy - amount * h * np.sin(np.pi * xx / w)
    return cv2.remap(image, xx, sy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def ruled(rows_mm: list[float], cols_mm: list[float], size_mm=(200, 120), bow_mm=0.0):
    """A ruling map (lines 255 on 0) at PPM: horizontal rules at ``rows_mm``, vertical ones at
    ``cols_mm``, the horizontal ones bowed down by up to ``bow_mm`` in the middle."""
    w, h = round(size_mm[0] * PPM), round(size_mm[1] * PPM)
    lines = np.zeros((h, w), np.uint8)
    xs = np.arange(w)
    for row in rows_mm:
        ys = row * PPM + bow_mm * PPM * np.sin(np.pi * xs / w)
        lines[np.rint(ys).astype(int), xs] = 255
    for col in cols_mm:
        lines[:, round(col * PPM)] = 255
    return cv2.dilate(lines, np.ones((2, 2), np.uint8))


def test_a_bow_is_measured_on_the_rules_and_taken_out() -> None:
    rows, cols = [10, 30, 55, 80, 110], [10, 60, 120, 190]
    reference = ruled(rows, cols)
    page = ruled(rows, cols, bow_mm=3.0)
    bend = find_bend(rules_of(reference, PPM, False), rules_of(reference, PPM, True), page, PPM)
    assert bend is not None
    assert bend.step == GRID_MM * PPM
    for x_mm in (20, 60, 100, 150):
        expected = 3.0 * np.sin(np.pi * x_mm / 200)
        moved_x, moved_y = bend.moved(np.float32([x_mm * PPM]), np.float32([55 * PPM]))
        assert abs(moved_y[0] / PPM - 55 - expected) < 0.35, x_mm
        assert abs(moved_x[0] / PPM - x_mm) < 0.2, x_mm
    (undone,) = bend.undo(page)
    near = cv2.dilate(reference, np.ones((5, 5), np.uint8))  # within ~0.6 mm
    assert np.count_nonzero(undone & ~near) < 0.03 * np.count_nonzero(undone)
    assert np.count_nonzero(page & ~near) > 0.5 * np.count_nonzero(page)


def test_a_bow_beyond_the_search_reach_is_followed() -> None:
    """A 6 mm bow: its middle lies past REACH_MM from the reference's rules, found only once
    the bend measured nearer the ends has been taken out (one search left it at 0.3 mm)."""
    rows, cols = [10, 30, 55, 80, 110], [10, 60, 120, 190]
    reference = ruled(rows, cols)
    page = ruled(rows, cols, bow_mm=6.0)
    bend = find_bend(rules_of(reference, PPM, False), rules_of(reference, PPM, True), page, PPM)
    assert bend is not None
    for x_mm, at_least in ((40, 3.0), (100, 4.4), (160, 3.0)):
        _, moved_y = bend.moved(np.float32([x_mm * PPM]), np.float32([55 * PPM]))
        assert at_least < moved_y[0] / PPM - 55 < 6.0 * np.sin(np.pi * x_mm / 200) + 0.5, x_mm


def test_a_rule_is_not_matched_to_its_neighbours_line() -> None:
    """The 价税合计 row's two rules, 7 mm apart, on a page folded by 5%: where they lie 3.5 mm
    low, each window holds both lines and the rules were dropped as ambiguous; where they lie 5
    mm low, rule 99's window holds only rule 92's line, 2 mm *above* it, and took it. Rules keep
    their spacing: a shift is a rule's where its neighbour lies shifted as much."""
    rows, cols = [20, 92, 99, 110], [10, 190]
    reference = ruled(rows, cols)
    horizontal = rules_of(reference, PPM, False)
    for low_mm in (3.5, 5.0):
        page = ruled([row + low_mm for row in rows], cols)
        found = shifts(horizontal, page, PPM) / PPM
        at_99 = found[np.abs(found[:, 1] - 99) < 0.5]
        if low_mm < REACH_MM:
            assert len(at_99) > 10 and np.all(np.abs(at_99[:, 2] - low_mm) < 0.3), low_mm
        else:
            assert len(at_99) == 0, at_99[:3]


def test_rules_slanting_on_a_folded_page_are_kept_for_the_bend_search() -> None:
    """A thin rule tilted by 5% (a fold the homography cannot fit) steps a pixel every 5 mm at
    the registration's scale: no 6 mm run of one row is left of it, and the rules of the bent
    half vanished from the ruling the bend is measured on."""
    ink = np.zeros((round(60 * PPM), round(200 * PPM)), np.uint8)
    xs = np.arange(round(20 * PPM), round(180 * PPM))
    ink[np.rint(30 * PPM + 0.05 * (xs - xs[0])).astype(int), xs] = 255  # 1 px thick
    for x in range(30, 170, 6):  # a line of print: characters 4 mm tall, 1 mm strokes
        ink[round(45 * PPM) : round(49 * PPM), round(x * PPM) : round((x + 4) * PPM) : 4] = 255
    line = ink[: round(40 * PPM)] > 0
    assert np.count_nonzero(ink_ruling(ink, PPM)[: round(40 * PPM)]) < 0.2 * line.sum()
    kept = ink_ruling(ink, PPM, slanted=True)
    assert np.count_nonzero(kept[: round(40 * PPM)] & line) > 0.9 * line.sum()
    assert np.count_nonzero(kept[round(40 * PPM) :]) == 0  # the print is no rule


def test_a_flat_page_has_no_bend() -> None:
    rows, cols = [10, 30, 55, 80, 110], [10, 60, 120, 190]
    reference = ruled(rows, cols)
    shifted = np.roll(ruled(rows, cols), 1, axis=0)  # a 0.25 mm error of the homography
    rules = rules_of(reference, PPM, False), rules_of(reference, PPM, True)
    assert find_bend(*rules, shifted, PPM) is None
    template = TemplateStore().get("vat_invoice")
    alignment = register(cv2.imread(str(FIXTURES / "light/vat_invoice_0015.jpg")), template)
    assert alignment.matched and alignment.bend is None


def test_a_sagging_page_registers_and_reads() -> None:
    """light/vat_invoice_0015 sagging by 4% of its height: the best homography left up to 3.5
    mm, the page scored 0.59 and went to the fallback whole; bent back, it matches at 0.99."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "light" / "vat_invoice_0015.jpg"
    template = TemplateStore().get("vat_invoice")
    page = sagged(cv2.imread(str(path)), 0.04)
    alignment = register(page, template)
    assert alignment.matched and alignment.score > 0.95
    assert alignment.bend is not None
    assert 2.5 < alignment.bend.largest / template.px_per_mm < 5.0
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    _, jpeg = cv2.imencode(".jpg", page, [cv2.IMWRITE_JPEG_QUALITY, 80])
    (result,) = Extractor(fallback="never").extract(jpeg.tobytes(), "vat_invoice").pages
    fields = expected["pages"][0]["fields"]
    right = [name for name, value in fields.items() if result.fields[name].value == value]
    assert len(right) >= len(fields) - 1, set(fields) - set(right)
    for name in ("buyer_name", "seller_name", "buyer_tax_id", "total"):
        assert result.fields[name].valid and result.fields[name].value == fields[name], name


def folded(image: np.ndarray, slope: float) -> np.ndarray:
    """A crease down the page at 45% of its width, each half tilted by ``slope`` (bench.bends)."""
    h, w = image.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    sy = yy - slope * np.abs(xx - 0.45 * w)
    return cv2.remap(image, xx, sy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def test_a_page_folded_past_the_search_reach_registers_and_reads() -> None:
    """light/vat_invoice_0015 folded down the middle, halves tilted by 5%: the homography fits
    the halves and leaves the fold ~7 mm off, and the bend found in one search (4 mm) left the
    page at 0.84, under BENT_SCORE: 8 of 12 fields, the rest sent to the fallback. Then the
    seller's block, left of the fold, stayed ~3.5 mm off: its tilted rules were missing from the
    ruling, or each taken for its neighbour; its crops held two lines."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "light" / "vat_invoice_0015.jpg"
    template = TemplateStore().get("vat_invoice")
    page = folded(cv2.imread(str(path)), 0.05)
    alignment = register(page, template)
    assert alignment.matched and alignment.score >= 0.87 and alignment.bend is not None
    assert alignment.bend.largest / template.px_per_mm > 5.0
    fields = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]["fields"]
    _, jpeg = cv2.imencode(".jpg", page, [cv2.IMWRITE_JPEG_QUALITY, 80])
    (result,) = Extractor(fallback="never").extract(jpeg.tobytes(), "vat_invoice").pages
    right = [name for name, value in fields.items() if result.fields[name].value == value]
    assert len(right) >= 11, set(fields) - set(right)
    assert not [n for n, f in result.fields.items() if f.valid and f.value != fields[n]]
    for name in ("seller_name", "seller_tax_id"):
        assert result.fields[name].valid and result.fields[name].value == fields[name], name


def test_the_fallback_on_a_folded_page_follows_its_bend() -> None:
    """medium/vat_invoice_0034 folded by 5%: its seller's crops hold two lines (flagged), and the
    fallback, placing the lines it found through the homography alone, took the total in words
    printed 4 mm above for the seller's name. Its lines are placed through the bend now."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "medium" / "vat_invoice_0034.jpg"
    page = folded(cv2.imread(str(path)), 0.05)
    fields = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]["fields"]
    _, jpeg = cv2.imencode(".jpg", page, [cv2.IMWRITE_JPEG_QUALITY, 80])
    (result,) = Extractor(fallback="auto").extract(jpeg.tobytes(), "vat_invoice").pages
    assert result.registration == "frame"
    seller_name, seller_tax_id = result.fields["seller_name"], result.fields["seller_tax_id"]
    assert seller_name.source == "fallback" and seller_name.value == fields["seller_name"]
    assert seller_tax_id.valid and seller_tax_id.value == fields["seller_tax_id"]
    assert not [n for n, f in result.fields.items() if f.valid and f.value != fields[n]]


def test_another_form_is_not_bent_into_a_match() -> None:
    """A paper VAT invoice against the e-invoice template's frame: another ruled table, 0.58-0.61;
    bending lets its rules move by millimetres (to 0.69-0.74), which is no match."""
    template = TemplateStore().get("vat_invoice_digital")
    for name in ("light/vat_invoice_0015.jpg", "medium/vat_invoice_0030.jpg"):
        alignment = register(cv2.imread(str(FIXTURES / name)), template)
        assert alignment.bend is None and alignment.score < 0.65, name


def test_a_number_read_from_the_date_below_it_is_flagged() -> None:
    """medium/vat_invoice_0034 sagging by 8% of its height: too bent to register by its frame,
    the page is aligned by its printed labels, and the invoice number's crop slides onto the
    开票日期 printed below it, whose eight digits the digits' allowlist reads as 20230525: a
    valid number, but the date's."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "medium" / "vat_invoice_0034.jpg"
    page = sagged(cv2.imread(str(path)).astype(np.float32), 0.08)  # as bench.bends bends it
    _, jpeg = cv2.imencode(
        ".jpg", page.clip(0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 80]
    )
    (result,) = Extractor().extract(jpeg.tobytes(), "vat_invoice").pages
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    date, number = result.fields["issue_date"], result.fields["invoice_number"]
    assert date.valid and date.value == expected["pages"][0]["fields"]["issue_date"] == "2023-05-25"
    assert number.value == "20230525" and not number.valid
    assert number.errors == ["reads as issue_date's digits: its crop may hold the date"]
