"""Finding a value beside its printed label among full-page OCR lines (extractor.fallback)."""

from __future__ import annotations

import math
import pickle
from functools import partial
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.bend import Bend
from extractor.fallback import (
    RIGHT_MM,
    ROW_MM,
    LabelStarts,
    ReferenceLabels,
    align_by_labels,
    beside_label,
    flattened,
    lines_in_box,
    near_fields,
    printed_as,
    rows_to_read,
    unflattened,
    written_date,
)
from extractor.fullpage import TextLine, get_fullpage_ocr
from extractor.label_cache import reference_lines
from extractor.pipeline import _alone
from extractor.templates import TemplateStore

PPM = 200 / 25.4  # the templates' reference px to the mm


def _line(text: str, x: float, y: float, width: float, angle_deg: float) -> TextLine:
    """A line of ``text`` whose left end is at (x, y) on a row turned by ``angle_deg``
    (clockwise on the image, y down), 20 px tall, corners in reading order."""
    a = math.radians(angle_deg)
    along, down = np.array([math.cos(a), math.sin(a)]), np.array([-math.sin(a), math.cos(a)])
    top_left = np.array([x, y])
    quad = [top_left, top_left + width * along, top_left + width * along + 20 * down]
    quad.append(top_left + 20 * down)
    return TextLine(np.array(quad, np.float32), text, 0.99)


def _across(ppm: float, x0_mm: float, x1_mm: float, y_mm: float) -> np.ndarray:
    """The outline (px) of a level line 3 mm tall from x0 to x1 mm, centred at y mm."""
    return np.array([[x0_mm, y_mm - 1.5], [x1_mm, y_mm - 1.5], [x1_mm, y_mm + 1.5],
                     [x0_mm, y_mm + 1.5]], np.float32) * ppm  # fmt: skip


def _rotated_row(angle: float) -> list[TextLine]:
    """校验码 and its value on one row turned by ``angle``, and below them the invoice's
    next row, whose value starts nearer to the label's end in image coordinates."""
    a = math.radians(angle)
    end = np.array([100.0, 400.0]) + 70 * np.array([math.cos(a), math.sin(a)])
    value = end + 30 * np.array([math.cos(a), math.sin(a)])
    return [
        _line("校验码", 100, 400, 70, angle),
        _line("00040 17449 08783 77333", *value, 260, angle),
        # the next row of a form tilted by 30 degrees: level with the label's end on the image
        _line("12345 67890 12345 67890", end[0] + 40, end[1] - 45, 260, angle),
    ]


def test_the_value_beside_a_label_is_found_along_the_labels_own_row() -> None:
    spec = TemplateStore().get("vat_invoice").field("check_code")
    for angle in (0.0, -30.0, 30.0):
        found = beside_label(_rotated_row(angle), spec)
        assert found is not None and found[0] == "00040 17449 08783 77333", angle


def test_a_label_printed_twice_gives_nothing_where_nothing_says_whose_it_is() -> None:
    """名称 is printed for the buyer and the seller: with no alignment to say which occurrence
    is the field's, neither value is taken (the first one was, for both names)."""
    spec = TemplateStore().get("vat_invoice").field("buyer_tax_id")
    lines = [
        _line("纳税人识别号：", 100, 100, 120, 0),
        _line("91430102MAFKUXF28G", 240, 100, 200, 0),
        _line("纳税人识别号：", 100, 600, 120, 0),
        _line("91441900MAX1YJDH7E", 240, 600, 200, 0),
    ]
    assert beside_label(lines, spec) is None
    near = (np.array([230.0, 610.0]), 100.0)  # where the alignment puts the field's label
    found = beside_label(lines, spec, near)
    assert found is not None and found[0] == "91441900MAX1YJDH7E"


def test_a_label_no_other_field_prints_is_taken_wherever_the_page_prints_it() -> None:
    """The 增值税电子普通发票 prints 发票代码 and its value at the top right, 120 mm from where the
    paper form's code lies: the label is the code's alone, and found once on the page, it is
    the code's out of reach (纳税人识别号, every party's, is not alone)."""
    vat = TemplateStore().get("vat_invoice")
    lines = [_line("发票代码：", 1500, 60, 120, 0), _line("034002000311", 1640, 60, 200, 0)]
    near = (np.array([250.0, 60.0]), 300.0)  # the paper form's code, where the frame puts it
    assert beside_label(lines, vat.field("invoice_code"), near) is None
    found = beside_label(lines, vat.field("invoice_code"), near, alone=True)
    assert found is not None and found[0] == "034002000311"
    assert _alone(vat.field("invoice_code"), vat) and not _alone(vat.field("buyer_tax_id"), vat)


def test_the_rows_of_the_fields_in_doubt_are_what_the_fallback_reads() -> None:
    """On a page its frame registered, the fallback's OCR reads each doubtful field's row of
    the form (its box and ROW_MM above and below, the form's whole width), set upright at the
    page's resolution: a band as narrow on a page turned 30 degrees (and shrunk) as on a
    straight one; one band for two neighbouring fields."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    width, height = template.reference_size_px
    a = np.deg2rad(30)
    turned = np.array([[np.cos(a), -np.sin(a), 900.0], [np.sin(a), np.cos(a), 30.0], [0, 0, 1]])
    for homography, scale in ((np.eye(3), 1.0), (turned @ np.diag([0.8, 0.8, 1.0]), 0.8)):
        words = template.field("total_in_words")
        (view,) = rows_to_read([words], template, homography)
        assert view.size[0] == pytest.approx(width * scale, abs=2)
        assert view.size[1] == pytest.approx((words.box.h + 2 * ROW_MM) * ppm * scale, abs=2)
        box = words.box
        corners = np.array([[[box.x, box.y], [box.x + box.w, box.y + box.h]]], np.float64) * ppm
        on_page = cv2.perspectiveTransform(corners, homography)
        (x0, y0), (x1, y1) = cv2.perspectiveTransform(on_page, view.matrix)[0]
        assert x0 == pytest.approx(box.x * ppm * scale, abs=1)  # upright, the box inside
        assert y0 == pytest.approx(ROW_MM * ppm * scale, abs=1)
        assert (x1 - x0, y1 - y0) == pytest.approx((box.w * ppm * scale, box.h * ppm * scale), 0.01)
        assert np.allclose(view.to_page(np.float32([[x0, y0]])), on_page[0, :1], atol=0.01)
        names = [template.field("buyer_name"), template.field("buyer_tax_id")]
        assert len(rows_to_read(names, template, homography)) == 1  # merged
    bands = rows_to_read(template.fields, template, np.eye(3))
    assert sum(v.size[1] for v in bands) <= height + 2 * ROW_MM * ppm  # no row read twice


def test_the_reference_forms_labels_are_read_once_and_kept_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full-page OCR of the reference form costs ~2 s; the next process takes its lines from
    the cache, as read; another OCR setting (or another image) reads them again."""
    monkeypatch.setenv("ROI_CACHE_DIR", str(tmp_path))
    path = TemplateStore().get("vat_invoice").reference_image_path
    ocr = get_fullpage_ocr("cpu", 1)
    reads: list[tuple[int, ...]] = []

    def read(image: np.ndarray) -> list[TextLine]:
        reads.append(image.shape)
        return ocr(image)

    first = reference_lines(path, ocr.setting, read)
    again = reference_lines(path, ocr.setting, read)
    assert first and again and len(reads) == 1
    assert len(list((tmp_path / "labels").glob("*.json"))) == 1
    assert [(ln.text, ln.score) for ln in again] == [(ln.text, ln.score) for ln in first]
    assert all(np.allclose(a.quad, b.quad) for a, b in zip(again, first, strict=True))
    assert {"纳税人识别号", "价税合计（大写）"} <= ReferenceLabels(again, PPM).texts
    reference_lines(path, ocr.setting + ", another", read)
    assert len(reads) == 2
    not_an_image = tmp_path / "form.png"
    not_an_image.write_bytes(b"no image here")
    assert reference_lines(not_an_image, ocr.setting, read) is None


def test_only_the_lines_near_the_fields_in_doubt_are_recognised() -> None:
    """Of the lines detected in a doubtful field's row, those reaching into the part of the row
    around it (LEFT_MM before its box for its label, RIGHT_MM after) are read, whole; a line of
    one character only in the box."""
    template = TemplateStore().get("vat_invoice")
    line = partial(_across, template.px_per_mm)
    words = template.field("total_in_words")  # box x 54-160 mm, y 92-99 mm
    near = near_fields([words], template, np.eye(3))

    assert near(line(60, 100, 95.5))  # the value in its box
    assert near(line(14, 44, 95.5))  # its label, before the box
    assert near(line(150, 230, 95.5))  # a line reaching in from the right, kept whole
    assert not near(line(200, 228, 95.5))  # the same row past RIGHT_MM: the total's box
    assert not near(line(160 + RIGHT_MM + 1, 190, 95.5))  # a line that starts past RIGHT_MM
    assert near(line(160 + RIGHT_MM - 1, 190, 95.5))  # one that starts within it
    assert not near(line(60, 100, 60.0))  # the goods table, another row
    assert near(line(60, 100, 92 - ROW_MM + 1))  # within ROW_MM above
    assert not near(line(40, 44, 95.5))  # one character before the box: no label, no value
    assert near(line(60, 64, 95.5))  # one character in the box: maybe a piece of the value


def test_a_line_in_the_box_of_a_field_read_valid_is_not_recognised_for_another() -> None:
    """The buyer's tax id, read valid, sits within ROW_MM below the buyer's name in doubt: its
    line is that field's value, no label and no name, so the fallback does not read it; the
    name's own line, its label and a line in both boxes' reach are read."""
    template = TemplateStore().get("vat_invoice")
    line = partial(_across, template.px_per_mm)
    name, tax_id = template.field("buyer_name"), template.field("buyer_tax_id")  # y 38 / 43 mm

    unsettled = near_fields([name], template, np.eye(3))
    near = near_fields([name], template, np.eye(3), settled=[tax_id])
    assert unsettled(line(48, 95, 45.5)) and not near(line(48, 95, 45.5))  # the tax id's line
    assert near(line(48, 100, 40.5))  # the name's own line
    assert near(line(20, 44, 40.5))  # its label
    assert near(line(48, 100, 43.0))  # in the reach of both boxes: maybe the name, fallen low
    doubted = near_fields([name, tax_id], template, np.eye(3), settled=[])
    assert doubted(line(48, 95, 45.5))  # both in doubt: read


def test_the_fallback_looks_for_a_field_where_the_page_prints_it() -> None:
    """Data printed 4 mm above the cells: the tax id's line (its box at 43-48 mm, printed at
    39.5-42.5) lies in the name's box (38-43) as the form places it. Moved by the page's print
    offset, each box holds its own line, and a tax id read valid keeps its line out of the
    name's reading."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    name, tax_id = template.field("buyer_name"), template.field("buyer_tax_id")  # y 38 / 43 mm
    printed = [
        TextLine(_across(ppm, 48, 100, 40.5 - 4), "南京卓睿家具有限公司", 0.99),
        TextLine(_across(ppm, 48, 95, 45.5 - 4), "913201056195242039", 0.99),
    ]
    assert lines_in_box(printed, name, template, np.eye(3))[0] == "913201056195242039"
    assert lines_in_box(printed, name, template, np.eye(3), -4.0)[0] == "南京卓睿家具有限公司"
    assert lines_in_box(printed, tax_id, template, np.eye(3), -4.0)[0] == "913201056195242039"
    settled = near_fields([name], template, np.eye(3), settled=[tax_id], down=-4.0)
    assert settled(printed[0].quad) and not settled(printed[1].quad)


def test_the_lines_of_a_bent_page_are_looked_for_where_its_bend_puts_them() -> None:
    """A page folded by 5%: left of the fold its rows lie 4 mm low once the homography has fitted
    the halves. The total in words (价税合计, 92-99 mm) then lies in the seller's name box
    (99-104 mm) as the form places it, and the fallback took it for the seller's name. The
    lines flattened (the page's bend taken out) each lie in their own box, and a value's
    outline is reported where it lies on the page."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    width, height = template.reference_size_px
    grid = np.zeros((math.ceil(height / (8 * ppm)) + 1, math.ceil(width / (8 * ppm)) + 1))
    bend = Bend(grid.astype(np.float32), (grid + 4 * ppm).astype(np.float32), 8 * ppm)
    homography = np.array([[1.02, 0.01, 30.0], [-0.01, 0.98, 12.0], [0.0, 0.0, 1.0]])
    printed = [  # reference px, then onto the bent page
        TextLine(_across(ppm, 60, 110, 95.5), "捌拾肆元柒角肆分", 0.99),
        TextLine(_across(ppm, 48, 100, 101.6), "禾维欣汽车销售服务有限公司", 0.99),
    ]
    on_page = []
    for line in printed:
        x, y = bend.moved(line.quad[None, :, 0], line.quad[None, :, 1])
        quad = cv2.perspectiveTransform(np.stack([x, y], axis=-1), homography)[0]
        on_page.append(TextLine(quad, line.text, line.score))
    seller_name = template.field("seller_name")
    assert lines_in_box(on_page, seller_name, template, homography)[0] == "捌拾肆元柒角肆分"
    flat = flattened(on_page, homography, bend)
    text, _, quad = lines_in_box(flat, seller_name, template, homography)
    assert text == "禾维欣汽车销售服务有限公司"
    assert np.abs(unflattened(quad, homography, bend) - on_page[1].quad).max() < 0.05


def test_a_box_whose_lines_fail_together_gives_the_one_that_passes() -> None:
    """The seller's seal repeats its tax id: full-page OCR reads the seal's line beside the
    printed one, as surely, and the two together are no tax id. A name detected in two pieces
    is still read whole."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    tax_id, name = template.field("seller_tax_id"), template.field("seller_name")  # 104.25, 99
    row = [
        TextLine(_across(ppm, 48, 90, 106.9), "91350102515373949Y", 0.99),
        TextLine(_across(ppm, 100, 129, 106.5), "91350102515373949Y", 0.99),
    ]
    text, _, quad = lines_in_box(row, tax_id, template, np.eye(3))
    assert text == "91350102515373949Y" and np.array_equal(quad, row[0].quad)
    pieces = [
        TextLine(_across(ppm, 48, 80, 101.6), "毅创业酒店管理", 0.99),
        TextLine(_across(ppm, 82, 110, 101.6), "（福州）有限公司", 0.99),
    ]
    assert lines_in_box(pieces, name, template, np.eye(3))[0] == "毅创业酒店管理（福州）有限公司"


def test_a_line_over_the_forms_own_print_is_recognised_only_for_a_label_in_doubt() -> None:
    """Outside the boxes in doubt, a line over the form's own print (its reference's lines) is
    read only where that print is part of a doubtful field's label: beside the buyer's name,
    校验码 and the 密码区's cipher (read with the 密 it covers) are not; 称：, of 名称, is. A
    sample's value in a field's box is no form print."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    line = partial(_across, ppm)
    name = template.field("buyer_name")  # box x 47-138, y 38-43 mm

    def printed(text: str, x0: float, x1: float, y0: float, y1: float) -> TextLine:
        quad = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float32) * ppm
        return TextLine(quad, text, 0.99)

    form = [
        printed("校验码", 14, 24.3, 28, 30.6),
        printed("称：", 39.5, 46, 39, 41.8),
        printed("密码区", 138.4, 143.3, 39, 57),  # printed downwards
    ]
    plain = near_fields([name], template, np.eye(3))
    near = near_fields([name], template, np.eye(3), form=form)
    cipher, check = line(137.5, 213, 43.7), line(14, 24, 29.6)
    assert plain(cipher) and not near(cipher)
    assert plain(check) and not near(check)  # within ROW_MM above the name
    assert near(line(39.4, 45.7, 40.8))  # 称：
    assert near(line(43.6, 94.2, 39.1))  # the name, begun over 称：'s end, in its box
    # a reference made from a filled sample holds its values in their boxes: no form print
    sample = [*form, printed("91350102515373949Y", 48, 90, 43.5, 46.5)]  # the tax id's box
    assert near_fields([name], template, np.eye(3), form=sample)(line(48, 95, 45.5))


def test_a_glance_looks_for_a_fields_label_or_enough_labels_to_align_by() -> None:
    """What a glance at a page no frame registered on looks for in its lines' starts: a field's
    own label (beside which the fallback finds its value), or as many of the reference's
    distinct labels as aligning a page takes (8 of the form's 24 here), each at a line's first
    or second character, spaces and colons aside. Not a label further in (项目名称 is another
    label than 名称; a letter's sentence naming the 发票号码), nor the same label twice: a
    delivery note printing 规格型号, 单位, 数量, 单价, 金额 and ``No`` gives nothing to read."""
    template = TemplateStore().get("vat_invoice")
    printed = ["No", "规格型号", "单位", "数量", "单价", "金额", "税率", "税额", "密码区", "备注"]
    printed += [f"标签{n:02d}" for n in range(14)]
    reference = ReferenceLabels(
        [_line(text, 0, 30 * i, 80, 0) for i, text in enumerate(printed)], PPM
    )
    fields = ["发票代码 034002400304", "名 称：宁波乾科方家具有限公司", "1开票日期：2022年07月19日"]
    for field_label in [*fields, "价税合计（大写）", "（小写）¥128.00"]:
        assert LabelStarts([(template, reference)])(field_label), field_label
    note = LabelStarts([(template, reference)])
    for line in ["No.6213099", "规格型号", "单位", "数量", "数量", "单价", "金 额", "货品名称"]:
        assert not note(line), line
    for line in ["项目名称", "所附单据共计若干页，发票号码详见附件清单。", "码", "致：财务部"]:
        assert not note(line), line
    copy = pickle.loads(pickle.dumps(note))  # it goes to the fallback's process as it is
    assert copy("税率") is None and copy("密 码 区") is True  # the 8th distinct label
    assert note("税率") is None and note("备注") is True
    goods_list = LabelStarts([(template, reference)])
    assert goods_list("销售货物或者提供应税") is False  # the title: no invoice, whatever follows


def test_a_date_written_out_is_found_in_reach_whatever_its_label_reads() -> None:
    """An e-invoice whose QR code did not decode: 开票日期 is printed in its top band, above the
    paper form's box, and blur read it 升亲日期, so no label led to 2024年12月07日. The one line in
    reach of the date's box that holds a date written out is the date; two (a remark's period),
    one out of reach, or another field's spec: none."""
    template = TemplateStore().get("vat_invoice")
    spec = template.field("issue_date")
    near = (np.array([1000.0, 250.0]), 350.0)
    label, value = _line("升亲日期：", 800, 180, 110, 0), _line("2024年12月07日", 920, 180, 160, 0)
    found = written_date(
        [label, value, _line("77202 59541 00055 10672", 920, 230, 250, 0)], spec, near
    )
    assert found is not None and found[0] == "2024年12月07日"
    period = _line("服务期间2024年1月1日至2024年12月31日", 850, 400, 400, 0)
    assert written_date([label, value, period], spec, near) is None
    assert written_date([label, _line("2024年12月07日", 200, 900, 160, 0)], spec, near) is None
    assert written_date([label, value], template.field("check_code"), near) is None
    assert written_date([_line("20241207", 920, 180, 120, 0)], spec, near) is None


def test_a_value_printed_as_only_its_field_prints_is_found_wherever_it_lies() -> None:
    """An e-invoice photographed, its QR code past decoding and its faint labels not found: the
    check code's four groups of five digits and a 12-digit code whose region, kind and year
    hold are their fields' wherever they lie, once on the page (or after a colon: a label
    read wrong). Not a 20-digit run ungrouped (a 数电票's number), a 12-digit machine number,
    nor two such lines (nothing tells which)."""
    template = TemplateStore().get("vat_invoice")
    check, code = template.field("check_code"), template.field("invoice_code")
    machine = _line("机器编号：156045400456", 100, 200, 300, 0)
    grouped = _line("67174 51272 26665 39922", 1400, 210, 330, 0)
    found = printed_as([machine, grouped, _line("037022300211", 1400, 60, 180, 0)], check)
    assert found is not None and found[0] == "67174 51272 26665 39922"
    misread = _line("校验吗：67174 5127226665 39922", 1300, 210, 430, 0)
    found = printed_as([machine, misread], check)
    assert found is not None and found[0] == "67174 5127226665 39922"
    assert printed_as([_line("24312000000012345678", 1400, 60, 300, 0)], check) is None
    assert printed_as([grouped, _line("16002 15156 73539 77490", 1400, 260, 330, 0)], check) is None
    found = printed_as([machine, _line("037022300211", 1400, 60, 180, 0)], code)
    assert found is not None and found[0] == "037022300211"
    assert printed_as([machine, _line("037022300299", 1400, 60, 180, 0)], code) is None  # kind 99
    assert printed_as([grouped], template.field("invoice_number")) is None  # printed_as unset


def test_a_field_printed_as_only_it_prints_is_looked_for_across_its_row() -> None:
    """The lines recognised for a field in doubt are those near its box; for one printed as
    only it prints (:func:`printed_as`), those of its whole row: the e-invoice's check code at
    the top right, 100 mm from the paper form's box, and its code inside the paper form's
    number box, though the number was read valid (a line in a settled field's box is that
    field's value, left unread, but where another layout prints a field)."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    top_right = _across(ppm, 178.0, 222.0, 27.0)  # the e-invoice's check code
    assert near_fields([template.field("check_code")], template, np.eye(3))(top_right)
    code, number = template.field("invoice_code"), template.field("invoice_number")
    e_code = _across(ppm, 177.0, 203.0, 8.5)  # the e-invoice's code, in the number's box
    assert near_fields([code], template, np.eye(3), settled=[number])(e_code)
    name, tax_id = template.field("buyer_name"), template.field("buyer_tax_id")
    in_tax_id = _across(ppm, 50.0, 90.0, tax_id.box.y + 2.5)  # the row below the name's
    assert not near_fields([name], template, np.eye(3), settled=[tax_id])(in_tax_id)
    assert near_fields([name], template, np.eye(3))(in_tax_id)


def test_a_line_that_grazes_the_forms_print_is_not_taken_for_it() -> None:
    """The e-invoice prints 发票代码： at 160-176 mm, 7.5-10.5 mm: 0.7 mm into the paper form's №
    (164-172 mm, 9.8-16.1 mm), it was left out as the form's own print, and the code beside it
    never found. A line runs over the form's print across half its height or more."""
    template = TemplateStore().get("vat_invoice")
    ppm = template.px_per_mm
    no = np.array([[164.1, 9.8], [172.0, 9.8], [172.0, 16.1], [164.1, 16.1]], np.float32) * ppm
    specs = [template.field("invoice_code"), template.field("invoice_number")]
    near = near_fields(specs, template, np.eye(3), form=[TextLine(no, "No", 0.99)])
    assert near(_across(ppm, 160.0, 176.0, 9.0))  # grazes the №
    assert not near(_across(ppm, 160.0, 176.0, 13.0))  # lies over it


def test_a_line_is_the_longest_label_it_starts_with() -> None:
    """销售方 is printed beside the seller's block and 销售方（章） at the seal's place: a line
    reading 销售方：（章） is the second (taken for the first, it was out of place, and a page
    whose labels were just enough to align it by was left unaligned)."""
    printed = ["发票代码", "开票日期", "购买方", "货物或应税劳务、服务名称", "规格型号", "单位"]
    printed += ["数量", "单价", "金额", "税率", "税额", "价税合计（大写）", "销售方"]
    printed += ["销售方（章）"]
    at = [(40 + 70 * (i % 7), 30 + 60 * (i // 7)) for i in range(len(printed))]
    reference = ReferenceLabels(
        [_line(t, x, y, 60, 0) for t, (x, y) in zip(printed, at, strict=True)], PPM
    )
    page = [_line(t, x + 100, y + 50, 60, 0) for t, (x, y) in zip(printed, at, strict=True)]
    page[-1] = _line("销售方：（章）", at[-1][0] + 100, at[-1][1] + 50, 60, 0)
    found = align_by_labels(page, reference, known=True)
    assert found.matches == found.inliers == len(printed)
    assert found.homography is not None
    moved = found.homography / found.homography[2, 2]
    assert np.allclose(moved, [[1, 0, 100], [0, 1, 50], [0, 0, 1]], atol=1e-3)


def test_labels_of_one_row_count_three_at_most() -> None:
    """The national form prints 8 of its distinct labels in its goods table's header, and a
    goods list (销货清单) prints that header too, with 购买方 and 销售方（章）: ten labels in place
    that said nothing of the form but its header. Labels of one row count three at most, so a
    page asked for as the form is aligned by labels from enough rows, not by one row's."""
    header = ["货物或应税劳务、服务名称", "规格型号", "单位", "数量", "单价", "金额"]
    header += ["税率", "税额"]
    at = {label: (300 + 160 * i, 475) for i, label in enumerate(header)}
    at |= {"发票代码": (312, 46), "开票日期": (1320, 248), "购买方": (130, 377)}
    at |= {"价税合计（大写）": (258, 750), "销售方": (129, 860), "收款人": (200, 976)}
    at |= {"销售方（章）": (1415, 975), "北京增值税普通发票": (949, 100), "No": (1323, 102)}
    at |= {"发票联": (948, 189), "校验码": (150, 231), "密码区": (1109, 376)}
    at |= {"(小写)": (1323, 751), "开票人": (949, 975), "复核": (584, 975)}  # the form's 23
    reference = ReferenceLabels([_line(t, x, y, 60, 0) for t, (x, y) in at.items()], PPM)
    assert reference.evidence(header) == 3
    # 3 of the header's, 购买方, and 销售方（章） and 收款人, printed on one row
    assert reference.evidence([*header, "购买方", "销售方（章）", "收款人"]) == 6
    assert len(reference.unique) == 23

    def page(labels: list[str]) -> list[TextLine]:  # the reference seen 0.8 x, moved
        return [_line(t, 0.8 * at[t][0] + 40, 0.8 * at[t][1] + 25, 48, 0) for t in labels]

    goods_list = page([*header, "购买方", "销售方（章）"])
    assert align_by_labels(goods_list, reference, known=True).homography is None
    form = page([*header[:3], "发票代码", "开票日期", "购买方", "价税合计（大写）", "销售方"])
    found = align_by_labels(form, reference, known=True)
    assert found.homography is not None and found.inliers == 8
