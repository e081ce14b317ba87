"""Crops: the form's ruled lines are erased from a grey scan's crop, the print is not."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.crops import _LooseCrop, _print_at_the_left, even_paper, separate_ink, tighten
from extractor.registration import reference_for, register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PPM = 200 / 25.4  # crops are cut at the template's 200 dpi


def grey_crop(blur: float) -> np.ndarray:
    """A field's loose crop from a grey scan: a 12-digit code, blurred by ``blur`` px, between
    two ruled lines that cross the whole crop, and a short separator that meets the lower one."""
    image = np.full((120, 600), 232, np.uint8)
    cv2.putText(image, "043002500304", (30, 78), cv2.FONT_HERSHEY_SIMPLEX, 1.7, 50, 4)
    if blur:
        image = cv2.GaussianBlur(image, (0, 0), blur)
    for y in (12, 106):
        cv2.line(image, (0, y), (599, y), 50, 2)
    cv2.line(image, (585, 40), (585, 106), 50, 2)
    return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)


@pytest.mark.parametrize("blur", [0, 2.5])
def test_rules_are_erased_from_a_grey_scan(blur: float) -> None:
    crop = grey_crop(blur)
    clean, ink = separate_ink(crop, PPM)
    for y in (12, 106):  # across the crop: erased from the image and from the ink
        assert (clean[y - 1 : y + 2] == 255).all() and not ink[y - 1 : y + 2].any()
    assert (clean[45:100, 584:587] == 255).all()  # the separator meets a rule: a rule too
    text = (slice(40, 85), slice(25, 570))
    assert np.count_nonzero(clean[text] < 150) >= 0.97 * np.count_nonzero(crop[text][..., 2] < 150)


def test_the_forms_labels_are_dropped_where_the_reference_has_them() -> None:
    """A label's strokes too dark for the drop-out channel (brown with R 110, as a thick 称 is)
    beside a name: where the form mask says a label lies, the label is dropped; the print
    stays."""
    crop = np.full((60, 400, 3), 245, np.uint8)
    cv2.putText(crop, "X:", (8, 42), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (40, 60, 110), 4)
    cv2.putText(crop, "ACME 12", (120, 42), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (30, 30, 30), 3)
    form = np.zeros(crop.shape[:2], bool)
    form[5:55, 0:75] = True
    label, text = (slice(0, 60), slice(0, 75)), (slice(0, 60), slice(110, 400))
    _, kept = separate_ink(crop, PPM)
    clean, ink = separate_ink(crop, PPM, form)
    assert np.count_nonzero(kept[label]) > 200  # dark enough to stay without the mask
    assert not ink[label].any() and (clean[label] == 255).all()
    assert np.array_equal(ink[text], kept[text]) and np.count_nonzero(ink[text]) > 1000


def test_print_at_a_crops_left_side_is_told_from_a_rules_remnant() -> None:
    """A name is cut again wider when its print reaches the crop's left side; a remnant of the
    ruled line it sits on (medium fresh page 20269310: the name printed on the rule), or a
    speck, reaches it too but spans a few rows."""
    rect = (0, 10, 300, 48)  # a 24 px line and its 12 px margins
    rule = np.zeros((70, 300), np.uint8)
    rule[20:23, 0:40] = 255
    rule[40:43, 5:9] = 255
    cut = rule.copy()  # the right half of a character cut by the crop: three strokes
    for x0, (y0, y1) in zip((0, 4, 8), ((22, 32), (30, 40), (38, 46)), strict=True):
        cut[y0:y1, x0 : x0 + 3] = 255
    assert not _print_at_the_left(rule, rect)
    assert _print_at_the_left(cut, rect)


def test_the_label_mask_lies_outside_every_fields_box() -> None:
    template = TemplateStore().get("vat_invoice")
    labels = reference_for(template).labels
    ppm = template.px_per_mm
    assert labels.shape == template.reference_size_px[::-1]
    for spec in template.fields:  # the mask is widened by 0.5 mm: look 1 mm inside the box
        b = spec.box
        inner = labels[round((b.y + 1) * ppm) : round((b.y + b.h - 1) * ppm)]
        assert not inner[:, round((b.x + 1) * ppm) : round((b.x + b.w - 1) * ppm)].any()
    name = template.field("buyer_name").box  # 名称 lies left of the buyer's name
    beside = labels[round(name.y * ppm) : round((name.y + name.h) * ppm), : round(name.x * ppm)]
    assert np.count_nonzero(beside) > 0.1 * beside.size


def test_print_blurred_into_one_blob_is_not_taken_for_a_rule() -> None:
    """heavy/vat_invoice_0041 (a phone photo out of focus, grey): the digits of the codes and
    tax ids run together into long bars of ink, which the ruling removal erased from the crop
    (764 of the invoice code's 4568 dark pixels, 2076 of the buyer's tax id's 3459)."""
    path = FIXTURES / "heavy/vat_invoice_0041.jpg"
    assert json.loads(path.with_suffix(".json").read_text())["level"] == "heavy"
    template = TemplateStore().get("vat_invoice")
    page = cv2.imread(str(path))
    homography = register(page, template).homography
    for name in ("invoice_code", "issue_date", "buyer_tax_id", "seller_tax_id"):
        loose = _LooseCrop.cut(page, homography, template, template.field(name))
        seen = cv2.warpPerspective(
            page,
            loose.to_page,
            loose.clean.shape[::-1],
            flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
            borderValue=(255, 255, 255),
        )
        dark = seen[..., 2] < 150
        erased = dark & (loose.clean == 255)
        assert np.count_nonzero(dark) > 800
        assert np.count_nonzero(erased) < 0.05 * np.count_nonzero(dark), name


def test_an_amount_printed_past_its_box_is_cut_wider() -> None:
    """A crooked scan whose data layer sits 4-5 mm right of the form (synthetic seed 20269540,
    bench/geometry.py's pages): the tax, right-aligned, runs past its box and the crop margin,
    and its last digit was cut ('¥7.7' read 7.20). The crop is cut again wider on the right."""
    from extractor.pipeline import Extractor
    from extractor.synth.generate import make_document

    document = make_document(20269540, "geometry")
    printed = document.truth["pages"][0]["print"]
    assert printed["data_offset_mm"][0] > TemplateStore().get("vat_invoice").crop_margin_mm
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    expected = document.truth["pages"][0]["fields"]
    for name in ("amount", "tax", "total"):
        assert page.fields[name].value == expected[name] and page.fields[name].valid


def printed_off(offset_mm: float) -> tuple[dict[str, str], dict[str, object], bytes]:
    """Synthetic invoice 7 printed by a dot-matrix printer up to ``offset_mm`` off the form
    (no scan: the printed page itself): its fields, print details and the page as PNG."""
    import random

    from extractor.synth.content import make_invoice
    from extractor.synth.render import render_invoice

    invoice = make_invoice(random.Random(7))
    printed = render_invoice(invoice, 200, random.Random("render:7"), offset_mm=(offset_mm, 0.5))
    return invoice.fields(), printed.info, cv2.imencode(".png", printed.image)[1].tobytes()


def test_a_code_printed_past_its_box_is_read_again_from_a_wider_crop() -> None:
    """The print 5.9 mm left of the form: the first digit of the check code and of both tax ids
    lies beyond the crop margin, cut. Each reading fails its checks, so the field is read again
    from a crop 4 mm wider on that side. (At 5.5 mm the check code's half digit is read right
    from the first crop since ECC runs at a quarter scale: the registration moved a pixel.) The
    print of every field read (``check_print``: the QR code states the check code)."""
    from extractor.pipeline import Extractor

    expected, info, png = printed_off(9.0)
    template = TemplateStore().get("vat_invoice")
    assert info["data_offset_mm"][0] < -(template.crop_margin_mm + 2.5)
    extractor = Extractor(fallback="never", check_print=True)
    (page,) = extractor.extract(png, "vat_invoice").pages
    for name in ("check_code", "buyer_tax_id", "seller_tax_id"):
        field = page.fields[name]
        assert (field.value, field.valid) == (expected[name], True)
        assert field.note == "read from a wider crop: the print runs out of the field's box"
    # the codes whose print starts well inside their box are read from the first crop (the
    # date's first digit runs out of its box too at this offset, and is read wider, right)
    assert all(page.fields[name].note is None for name in ("invoice_code", "invoice_number"))


def test_a_code_whose_first_digit_is_cut_is_read_from_a_wider_crop_though_it_passed() -> None:
    """A blurred photo (synthetic seed 20280003, heavy) whose check code's print starts at its
    crop's left edge: the 3 cut in half reads 1, and twenty digits pass (a check code has no
    check digit), or it reads 3 in doubt (as it does since grainy paper is no longer whitened
    into salt). The wider crop, read too, holds the whole 3 and gives the value, sure of it;
    the second look at other sizes reads the wider crop, not the cut one (which read 1 again,
    a doubt)."""
    from extractor.pipeline import Extractor
    from extractor.synth.generate import make_document

    document = make_document(20280003, "heavy")
    expected = document.truth["pages"][0]["fields"]["check_code"]
    (page,) = Extractor(fallback="never").extract(document.jpeg, "vat_invoice").pages
    field = page.fields["check_code"]
    assert (field.value, field.valid) == (expected, True)
    assert field.note is not None and field.note.startswith("read from a wider crop")
    if "its crop read" in field.note:  # the cut 3 read 1, sure
        assert "its crop read 1" + expected[1:] in field.note


@pytest.mark.parametrize("offset_mm", [7.5, 8.5])
def test_a_name_printed_past_its_box_is_read_whole(offset_mm: float) -> None:
    """The same print 4.9 and 5.5 mm left of the form: the buyer's name starts beyond the crop
    margin. Its first character cut in half read as another one ('青捷光食品有限公司' for
    精捷光…, valid), or the label's 称 came with it ('称精捷光…'). Names are cut again wider on
    the left, and the label is dropped."""
    from extractor.pipeline import Extractor

    expected, info, png = printed_off(offset_mm)
    assert info["data_offset_mm"][0] < -4.5
    (page,) = Extractor(fallback="never").extract(png, "vat_invoice").pages
    for name in ("buyer_name", "seller_name"):
        assert (page.fields[name].value, page.fields[name].valid) == (expected[name], True)


def shaded(image: np.ndarray, darkest: float) -> np.ndarray:
    """``image`` under a shadow: its brightness falling from 1 at the right edge to
    ``darkest`` at the left (a phone held over the page, a scanner's tired lamp)."""
    light = np.linspace(darkest, 1.0, image.shape[1], dtype=np.float32)[None, :, None]
    return np.clip(image.astype(np.float32) * light, 0, 255).astype(np.uint8)


def test_shaded_paper_is_evened_and_even_paper_left_alone() -> None:
    """A name's crop under a shadow (paper 232 on the right, 81 on the left) is divided by its
    paper: the paper white throughout, the print dark; so is one evenly grey; a crop lit evenly
    on white paper is returned as it is, the very array."""
    crop = np.full((90, 700, 3), 232, np.uint8)
    cv2.putText(crop, "ACME TRADING 12", (20, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.5, (40, 40, 40), 3)
    even = crop[..., 2].copy()
    assert even_paper(even, PPM) is even
    dark = shaded(crop, 0.35)[..., 2].copy()
    evened = even_paper(dark, PPM)
    print_ = even < 100
    assert np.percentile(evened[~print_], 5) >= 230  # the paper white, the shaded part too
    assert np.percentile(evened[print_], 95) <= 120  # the print stays dark where it is shaded
    _, ink = separate_ink(shaded(crop, 0.35), PPM)
    assert np.count_nonzero(ink[print_]) >= 0.9 * np.count_nonzero(print_)  # print: ink
    assert np.count_nonzero(ink[~print_]) <= 0.01 * np.count_nonzero(~print_)  # paper: none
    grey = (even * 0.6).astype(np.uint8)  # an underexposed photo: even, but grey (139)
    assert np.percentile(even_paper(grey, PPM)[~print_], 5) >= 230


def test_a_shaded_page_reads_the_names_in_its_shadow() -> None:
    """A light fixture page under a shadow darkening its left side to 35%: one threshold for
    a name's crop took the shaded paper for ink, and the blob for a stain to erase, print and
    all: the buyer's name was read without its first four characters ('（北京）有限公司', valid).
    Crops whose paper is uneven are evened first."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "light" / "vat_invoice_0018.jpg"
    truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    expected = truth["pages"][0]["fields"]
    _, jpeg = cv2.imencode(
        ".jpg", shaded(cv2.imread(str(path)), 0.35), [cv2.IMWRITE_JPEG_QUALITY, 80]
    )
    (page,) = Extractor(fallback="never").extract(jpeg.tobytes(), "vat_invoice").pages
    for name in ("buyer_name", "seller_name", "buyer_tax_id", "seller_tax_id", "total"):
        assert (page.fields[name].value, page.fields[name].valid) == (expected[name], True), name


def test_a_rules_remnant_at_a_lines_end_is_not_part_of_the_line() -> None:
    """A thin piece of a ruled line past a name's last character (the data printed across the
    form's rule) is not text: the line ends at the character; a 一 ending a name is kept (long,
    in the line's middle), and so is a character's short stroke that is not thin."""
    ink = np.zeros((60, 400), np.uint8)
    for x in range(20, 260, 40):  # six characters, 30 px wide, rows 15-45
        ink[15:45, x : x + 30] = 255
    line = tighten(ink, (0, 10, 400, 40), PPM)
    assert line is not None
    for extra, kept in (
        ((18, 19, 275, 283), False),  # the rule's remnant: 1 px, short, high in the line
        ((28, 30, 275, 302), True),  # 一: thin, but long and in the middle
        ((26, 33, 275, 283), True),  # a short stroke 7 px thick: a dot, not a rule
    ):
        y0, y1, x0, x1 = extra
        with_piece = ink.copy()
        with_piece[y0:y1, x0:x1] = 255
        rect = tighten(with_piece, (0, 10, 400, 40), PPM)
        assert rect is not None and (rect[0], rect[2] > line[2]) == (line[0], kept), extra


def test_a_short_line_is_found_under_a_rules_remnant_that_holds_more_ink_in_a_row() -> None:
    """Two characters (a person's name, 张伟) under the remnant of a rule across the crop, a
    row or two thick: the remnant's row holds more ink than the name's whole width, and the bar
    for a line's rows, set by it, left the name's rows under it (no line found)."""
    ink = np.zeros((80, 756), np.uint8)
    ink[16, ::3] = ink[17, 1::3] = ink[21, ::2] = 255  # the rule's pieces
    for x in (40, 80):  # two characters, 30 px wide, rows 28-52, a stroke every 3rd column
        ink[28:52, x : x + 30 : 3] = 255
    assert tighten(ink, (20, 20, 716, 40), PPM) == (28, 16, 92, 48)  # the name, padded


def test_a_name_printed_across_its_rule_reads_without_the_rules_end() -> None:
    """medium/0031's buyer's name is printed 1.7 mm high, across the form's rule; re-saved as a
    JPEG of quality 80 the rule past the name's end was left in the crop and read as a trailing
    一, valid (names have no check)."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "medium" / "vat_invoice_0031.jpg"
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    _, jpeg = cv2.imencode(".jpg", cv2.imread(str(path)), [cv2.IMWRITE_JPEG_QUALITY, 80])
    (page,) = Extractor(fallback="never").extract(jpeg.tobytes(), "vat_invoice").pages
    name = page.fields["buyer_name"]
    assert (name.value, name.valid) == (expected["pages"][0]["fields"]["buyer_name"], True)


GREEN_HIGHLIGHTER = (120, 250, 130)  # BGR


def highlighted(image: np.ndarray, rect: tuple[int, int, int, int]) -> np.ndarray:
    """``image`` with a green highlighter stroked over ``rect`` (x, y, w, h): its colour
    multiplied into paper and print alike, its edges soft."""
    x, y, w, h = rect
    band = np.zeros(image.shape[:2], np.float32)
    band[y : y + h, x : x + w] = 0.85
    band = cv2.GaussianBlur(band, (0, 0), 1.5)[..., None]
    tint = np.array(GREEN_HIGHLIGHTER, np.float32) / 255
    out = image.astype(np.float32) * (1 - band + band * tint)
    return np.clip(out, 0, 255).astype(np.uint8)


def test_print_under_a_green_highlighter_is_ink_and_a_green_forms_ink_is_not() -> None:
    """Green is a form's ink (dropped like brown), but under a green highlighter the print's
    soft edges are green too, and were dropped with it: most of a scanned total's strokes were
    lost (the total read empty). Green holding a square of HIGHLIGHT_MM is a highlighter's; the
    print in it is kept, its paper is not ink; a green form's lines and labels still go."""
    crop = np.full((90, 700, 3), (234, 245, 248), np.uint8)
    cv2.putText(crop, "197.51", (60, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.5, (40, 40, 40), 3)
    crop = cv2.GaussianBlur(crop, (0, 0), 1.2)  # a scan's softness
    print_ = crop[..., 2] < 150
    cv2.line(crop, (0, 8), (699, 8), (100, 140, 40), 2)  # a green form's rule and label
    cv2.putText(crop, "TAX", (480, 62), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (100, 140, 40), 2)
    green_form = (crop[..., 1].astype(int) - crop[..., 2] > 40) & ~print_
    marked = highlighted(crop, (40, 22, 300, 50))
    _, ink = separate_ink(marked, PPM)
    assert np.count_nonzero(ink[print_]) >= 0.8 * np.count_nonzero(print_)
    paper = ~cv2.dilate(print_.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    assert np.count_nonzero(ink[paper & ~green_form]) <= 0.01 * np.count_nonzero(paper)
    assert np.count_nonzero(ink[green_form]) <= 0.05 * np.count_nonzero(green_form)


def test_fields_marked_with_a_green_highlighter_read_as_printed() -> None:
    """clean/vat_invoice_0001 with its total, seller's name and tax id stroked over with a
    green highlighter (as a finance team marks what it checked) reads them right, from their
    own boxes: the total and the seller's name read empty before, their print dropped."""
    from extractor.pipeline import Extractor

    path = FIXTURES / "clean" / "vat_invoice_0001.jpg"
    expected = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]
    extractor = Extractor(fallback="never")
    (plain,) = extractor.extract(path, "vat_invoice").pages
    image = cv2.imread(str(path))
    marked = ("total", "seller_name", "seller_tax_id")
    for name in marked:
        box = plain.fields[name].box
        assert box is not None
        x, y, w, h = (round(v) for v in box)
        image = highlighted(image, (x - h, y - h // 3, w + 2 * h, h + 2 * (h // 3)))
    _, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    (page,) = extractor.extract(jpeg.tobytes(), "vat_invoice").pages
    for name in marked:
        field = page.fields[name]
        assert (field.value, field.valid, field.source) == (expected["fields"][name], True, "roi")


def test_print_across_a_rule_is_kept_where_it_crosses_on_a_black_and_white_scan() -> None:
    """A digit printed over a cell's rule on a black-and-white scan: the rule is erased but
    where the digit's strokes cross it (ink right beside it on both sides, a stroke's width
    along it); a rule running along a stroke's side, or ragged at its edges, is erased."""
    image = np.full((120, 400), 255, np.uint8)
    cv2.line(image, (0, 100), (399, 100), 0, 2)  # the cell's lower rule, across the crop
    cv2.line(image, (200, 0), (200, 100), 0, 3)  # its side's rule
    cv2.line(image, (170, 40), (230, 40), 0, 4)  # a stroke printed across the side rule
    cv2.line(image, (203, 60), (203, 90), 0, 3)  # one printed along it, touching it
    image[98, 300:380:2] = 0  # the lower rule's ragged edge (it covers rows 99-101)
    image[102, 301:380:2] = 0
    clean, ink = separate_ink(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), PPM)
    assert ink[38:43, 198:203].all()  # the crossing: kept
    assert (clean[38:43, 198:203] < 128).all()
    assert not ink[60:90, 199:201].any()  # the rule beside the stroke: erased
    assert not ink[99:102, 300:380].any()  # the lower rule, under its ragged edge


@pytest.mark.parametrize(
    ("seed", "fields"),
    [
        (130, ("amount", "tax")),  # 128.00, 16.64: their last digits on the cells' right rules
        (100, ("amount", "tax", "seller_tax_id")),  # 74.48, 5.12; the id read on with the seal's
        (124, ("buyer_name", "seller_name")),  # printed over 名称's colon: 称 beside the name
    ],
)
def test_print_over_the_forms_rules_and_labels_reads_on_a_black_and_white_scan(
    seed: int, fields: tuple[str, ...]
) -> None:
    """Data printed by a dot-matrix head a few millimetres off the form, scanned black and
    white (the form's rules and labels as black as the print): amounts whose last digits lie
    on a rule read whole (erased with it, 0 read as 3, 4 as 1, both passing the sum); a
    name printed over its label's colon reads without 称 (a piece of label the crop cut wider
    still cuts is the label's); a tax id read on with the seal's print of it is the id."""
    import random

    from extractor.pipeline import Extractor
    from extractor.synth.content import make_invoice
    from extractor.synth.degrade import black_and_white
    from extractor.synth.render import Pins, render_invoice

    invoice = make_invoice(random.Random(seed))
    printed = render_invoice(
        invoice, 200, random.Random(f"render:{seed}"), offset_mm=(5.0, 1.5), pins=Pins()
    )
    png = cv2.imencode(".png", black_and_white(printed.image))[1].tobytes()
    (page,) = Extractor(fallback="never").extract(png, "vat_invoice").pages
    truth = invoice.fields()
    assert {name: (page.fields[name].value, page.fields[name].valid) for name in fields} == {
        name: (truth[name], True) for name in fields
    }


def _printed_on(paper: int, grain: float, blur: float) -> tuple[np.ndarray, np.ndarray]:
    """A check code's print on paper of this grey and grain (its standard deviation), blurred
    so (a Gaussian of this sigma); and where the print and its halo are."""
    rng = np.random.default_rng(3)
    image = np.full((60, 500), float(paper)) + rng.normal(0, grain, (60, 500))
    text = np.zeros((60, 500), np.uint8)
    cv2.putText(text, "40094 45770 87207", (10, 42), cv2.FONT_HERSHEY_SIMPLEX, 1.1, 255, 3)
    print_ = cv2.GaussianBlur(text.astype(float), (0, 0), blur) / 255
    image = np.clip(image * (1 - 0.55 * print_), 0, 255).astype(np.uint8)
    near = cv2.dilate((print_ > 0.05).astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), near


def test_grainy_paper_is_left_grey_and_clean_paper_whitened() -> None:
    """A photographed A4 sheet's tinted paper (213, its grain 9 grey levels) under a blurred
    check code: whitening what lies over the cut pixel by pixel turned 63% of its paper white
    and left the rest grey, salt the recogniser read as strokes (40094 45770 87207 90157 read
    '44 674 67287 919'); it is left grey. Clean white paper under sharp print is whitened."""
    crop, near = _printed_on(213, 9.0, 2.5)
    clean, _ = separate_ink(crop, PPM)
    assert np.mean(clean[~near] == 255) < 0.05
    crop, near = _printed_on(245, 3.0, 0.8)
    clean, _ = separate_ink(crop, PPM)
    assert np.mean(clean[~near] == 255) > 0.95
