"""Non-invoice pages that travel with invoices in multi-page files: a delivery note printed on
the same continuous tractor-feed paper (a ruled table, a tempting false match for the invoice
template), an A4 cover letter with a round company seal, and the goods list (销货清单) a national
invoice with more lines than its table holds attaches (the form's goods header, its parties'
labels)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

import numpy as np

from extractor.synth import names
from extractor.synth.content import (
    FIRST_DAY,
    LAST_DAY,
    Invoice,
    Item,
    make_invoice,
    make_items,
    person,
)
from extractor.synth.form import PERFORATION, hole_layer, perforation_layer
from extractor.synth.raster import Layer, compose, to_uint8
from extractor.synth.render import PRINTERS, RenderedPage, paper
from extractor.synth.seals import SEAL_RED, invoice_seal, oval_seal, place

NOTE_W, NOTE_H = 241.0, 140.0
A4_W, A4_H = 210.0, 297.0
BLUE_INK = (150, 80, 30)  # BGR: the note's preprinted ruling


class Measures(Protocol):
    """What sets text and says how wide it is: a raster :class:`Layer`, a PDF page's pen."""

    def text_width(self, text: str, size: float, cjk: str = ..., latin: str = ...) -> float: ...


def wrap(layer: Measures, text: str, size: float, width: float, cjk: str = "ming") -> list[str]:
    """Break ``text`` into lines no wider than ``width`` mm."""
    lines, current = [], ""
    for ch in text:
        if current and layer.text_width(current + ch, size, cjk=cjk) > width:
            lines.append(current)
            current = ""
        current += ch
    if current:
        lines.append(current)
    return lines


def delivery_note(seed: int, dpi: float) -> tuple[RenderedPage, dict[str, object]]:
    """A 送货单 on 241 x 140 mm tractor-feed paper; returns the page and what it says."""
    rng = random.Random(f"note:{seed}")
    inv: Invoice = make_invoice(random.Random(seed))
    form = Layer(NOTE_W, NOTE_H, dpi)
    data = Layer(NOTE_W, NOTE_H, dpi)
    x0, x1, y0, y1 = 14.0, 227.0, 34.0, 112.0
    title = f"{inv.seller.name}送货单"
    form.text(120.5, 12, title, 6.0, cjk="hei", align="centre", stroke=0.06)
    for label, x, y in (("客户名称：", 16, 25), ("送货日期：", 150, 25), ("No.", 190, 12)):
        form.text(x, y, label, 3.2, cjk="hei")
    columns = (
        ("序号", 14, 26),
        ("货品名称", 26, 90),
        ("规格型号", 90, 120),
        ("单位", 120, 136),
        ("数量", 136, 156),
        ("单价", 156, 180),
        ("金额", 180, 206),
        ("备注", 206, 227),
    )
    form.box(x0, y0, x1, y1, 0.45)
    row_h = 7.0
    rows = int((y1 - y0) / row_h)
    for r in range(1, rows):
        form.hline(y0 + r * row_h, x0, x1, 0.2)
    for label, a, b in columns:
        if a > x0:
            form.vline(a, y0, y1, 0.2)
        form.text((a + b) / 2, y0 + row_h / 2, label, 3.2, cjk="hei", align="centre")
    form.text(20, 120, "送货人：", 3.2, cjk="hei")
    form.text(90, 120, "收货人签字：", 3.2, cjk="hei")
    form.text(170, 120, "白联：存根  红联：客户  黄联：财务", 2.6, cjk="hei")

    cjk = rng.choice(("ming", "hei"))
    date = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days))
    dx, dy = rng.uniform(-2, 2), rng.uniform(-1, 1)
    data.text(36 + dx, 25 + dy, inv.buyer.name, 3.4, cjk=cjk)
    data.text(168 + dx, 25 + dy, f"{date:%Y-%m-%d}", 3.4, cjk=cjk)
    number = f"{rng.randrange(10**7):07d}"
    data.text(198 + dx, 12 + dy, number, 4.5, cjk=cjk)
    lines = []
    for k, item in enumerate(inv.items[: rows - 2]):
        y = y0 + row_h * (k + 1.5) + dy
        qty = item.quantity or "1"
        price = item.unit_price or f"{item.amount:.2f}"
        cells = (
            str(k + 1),
            item.name.split("*")[-1],
            item.spec,
            item.unit,
            qty,
            price,
            f"{item.amount + item.tax:.2f}",
            "",
        )
        for (_, a, _), cell in zip(columns, cells, strict=True):
            data.text(a + 1.5 + dx, y, cell, 3.2, cjk=cjk)
        lines.append({"name": cells[1], "quantity": qty, "amount": cells[6]})
    data.text(36 + dx, 120 + dy, person(rng), 3.4, cjk=cjk)

    nrng = np.random.default_rng(rng.getrandbits(64))
    tint = rng.choice(
        ((236, 244, 248), (232, 236, 252), (214, 244, 250))
    )  # white, pink, yellow copy
    page = paper(form.h, form.w, nrng, tint)
    image = compose(
        page,
        [
            (form.alpha(), BLUE_INK),
            (perforation_layer(NOTE_W, NOTE_H, dpi).alpha(), PERFORATION),
            (data.alpha(), PRINTERS["laser"][0]),
        ],
    )
    info = {"kind": "delivery_note", "title": title, "number": number, "lines": lines}
    rendered = RenderedPage(
        to_uint8(image), hole_layer(NOTE_W, NOTE_H, dpi).alpha(), dpi, NOTE_W, NOTE_H, {}
    )
    return rendered, info


@dataclass(frozen=True)
class Letter:
    """What a cover letter says (:func:`letter`), to print or to set in a PDF."""

    title: str
    to: str
    paragraphs: list[str]
    sender: str
    date: str
    contact: str


def letter(seed: int) -> tuple[Letter, Invoice, random.Random]:
    """The cover letter of ``seed`` (发票寄送函), the invoice it is about, and the generator's
    state after it (for its seal)."""
    rng = random.Random(f"letter:{seed}")
    inv: Invoice = make_invoice(random.Random(seed))
    title = rng.choice(("发票寄送函", "关于报销发票的说明", "付款申请说明"))
    paragraphs = rng.sample(names.LETTER_LINES, rng.randint(3, 5))
    paragraphs.insert(1, f"本次寄送发票金额合计人民币{inv.total:.2f}元（大写：{inv.words}）。")
    date = inv.issue_date + timedelta(days=rng.randint(0, 5))
    contact = f"联系人：{person(rng)}　电话：{inv.seller.address_phone.split()[-1]}"
    said = Letter(
        title,
        f"致：{inv.buyer.name}财务部",
        paragraphs,
        inv.seller.name,
        f"{date.year}年{date.month}月{date.day}日",
        contact,
    )
    return said, inv, rng


@dataclass(frozen=True)
class Placed:
    """A line of a page where it goes (mm; ``y`` its visual centre) and how it is set."""

    x: float
    y: float
    text: str
    size: float
    cjk: str = "ming"
    align: str = "left"
    title: bool = False


def letter_layout(said: Letter, pen: Measures) -> tuple[list[Placed], float]:
    """The letter's lines on an A4 page, its paragraphs wrapped as ``pen`` measures them, and
    the height of its signature (where its seal goes)."""
    placed = [Placed(A4_W / 2, 35, said.title, 7.0, "hei", "centre", True)]
    placed.append(Placed(25, 55, said.to, 4.2))
    y = 68.0
    for para in said.paragraphs:
        for line in wrap(pen, "　　" + para, 4.2, A4_W - 50):
            placed.append(Placed(25, y, line, 4.2))
            y += 7.5
        y += 2.0
    y = max(y + 20, 200.0)
    placed += [
        Placed(A4_W - 25, y, said.sender, 4.2, align="right"),
        Placed(A4_W - 25, y + 9, said.date, 4.2, align="right"),
        Placed(25, y + 30, said.contact, 3.6),
    ]
    return placed, y


def cover_letter(seed: int, dpi: float) -> tuple[RenderedPage, dict[str, object]]:
    """An A4 portrait cover letter (发票寄送函) in Chinese, signed and sealed."""
    said, inv, rng = letter(seed)
    ink = Layer(A4_W, A4_H, dpi)
    seal = Layer(A4_W, A4_H, dpi)
    placed, y = letter_layout(said, ink)
    for line in placed:
        stroke = 0.08 if line.title else 0.0
        ink.text(
            line.x, line.y, line.text, line.size, cjk=line.cjk, align=line.align, stroke=stroke
        )
    tile = oval_seal(
        20.0, 20.0, dpi, arc_text=inv.seller.name, middle=[], bottom="财务专用章", star=True
    )
    place(
        seal,
        tile,
        A4_W - 50 + rng.uniform(-8, 8),
        y + rng.uniform(-2, 6),
        rng.uniform(-20, 20),
        rng.uniform(0.6, 0.9),
    )
    info = {"kind": "cover_letter", "title": said.title, "to": inv.buyer.name, "from": said.sender}
    return _office_a4(ink, seal, rng, dpi), info


def _office_a4(ink: Layer, seal: Layer, rng: random.Random, dpi: float) -> RenderedPage:
    """An A4 sheet of office paper, ``ink`` laser-printed on it and ``seal`` stamped in red."""
    nrng = np.random.default_rng(rng.getrandbits(64))
    page = paper(ink.h, ink.w, nrng, (245, 247, 248))
    image = compose(page, [(ink.alpha(), PRINTERS["laser"][0]), (seal.alpha(), SEAL_RED)])
    return RenderedPage(to_uint8(image), np.zeros((ink.h, ink.w), np.float32), dpi, A4_W, A4_H, {})


LIST_COLUMNS = (
    ("序号", 10, 20),
    ("货物（劳务）名称", 20, 70),
    ("规格型号", 70, 95),
    ("单位", 95, 107),
    ("数量", 107, 122),
    ("单价", 122, 142),
    ("金额", 142, 165),
    ("税率", 165, 177),
    ("税额", 177, 200),
)


def goods_list(seed: int, dpi: float) -> tuple[RenderedPage, dict[str, object]]:
    """The 销售货物或者提供应税劳务、服务清单 of the invoice of ``seed`` (its parties, code and
    number), as tax-control software prints it on A4: 12-24 goods lines under the form's own
    column headers, 小计 and 总计, the seller's invoice seal. No invoice: its fields are not
    on it."""
    rng = random.Random(f"list:{seed}")
    inv: Invoice = make_invoice(random.Random(seed))
    items: list[Item] = []
    wanted = rng.randint(12, 24)
    while len(items) < wanted:
        items += make_items(rng, inv.issue_date, False)
    items = items[:wanted]
    ink, seal = Layer(A4_W, A4_H, dpi), Layer(A4_W, A4_H, dpi)
    title = "销售货物或者提供应税劳务、服务清单"
    ink.text(A4_W / 2, 22, title, 6.0, cjk="hei", align="centre", stroke=0.06)
    cjk = rng.choice(("ming", "hei"))
    ink.text(15, 34, f"购买方名称：{inv.buyer.name}", 3.4, cjk=cjk)
    ink.text(15, 41, f"销售方名称：{inv.seller.name}", 3.4, cjk=cjk)
    belongs = f"所属增值税专用发票代码：{inv.code}    号码：{inv.number}    共1页  第1页"
    ink.text(15, 48, belongs, 3.4, cjk=cjk)
    y0, row = 54.0, 6.5
    rows = len(items) + 4  # the header, the goods, 小计, 总计, 备注
    ink.box(10, y0, 200, y0 + row * rows, 0.35)
    for r in range(1, rows):
        ink.hline(y0 + r * row, 10, 200, 0.15)
    for label, a, b in LIST_COLUMNS:
        if a > 10:
            ink.vline(a, y0, y0 + row * (rows - 1), 0.15)
        ink.text((a + b) / 2, y0 + row / 2, label, 3.0, cjk="hei", align="centre")
    for k, item in enumerate(items):
        y = y0 + row * (k + 1.5)
        cells = (
            str(k + 1),
            item.name,
            item.spec,
            item.unit,
            item.quantity,
            item.unit_price,
            f"{item.amount:.2f}",
            item.rate_text,
            f"{item.tax:.2f}",
        )
        for (_, a, _), cell in zip(LIST_COLUMNS, cells, strict=True):
            ink.text(a + 1, y, cell, 2.8, cjk=cjk)
    amount, tax = sum(i.amount for i in items), sum(i.tax for i in items)
    for j, label in enumerate(("小计", "总计", "备注")):
        y = y0 + row * (len(items) + 1.5 + j)
        ink.text(25, y, label, 3.0, cjk="hei")
        if label != "备注":
            ink.text(143, y, f"{amount:.2f}", 2.8, cjk=cjk)
            ink.text(178, y, f"{tax:.2f}", 2.8, cjk=cjk)
    foot = y0 + row * rows + 10
    ink.text(15, foot, "销售方（章）：", 3.4, cjk=cjk)
    day = inv.issue_date
    ink.text(120, foot, f"填开日期：{day.year}年{day.month:02d}月{day.day:02d}日", 3.4, cjk=cjk)
    note = "注：本清单一式两联：第一联，销售方留存；第二联，销售方送交购买方。"
    ink.text(15, foot + 10, note, 3.0, cjk=cjk)
    tile = invoice_seal(inv.seller.name, inv.seller.tax_id, dpi)
    place(seal, tile, 55, foot + 2, rng.uniform(-10, 10), rng.uniform(0.6, 0.9))
    info = {"kind": "goods_list", "title": title, "code": inv.code, "number": inv.number}
    return _office_a4(ink, seal, rng, dpi), info
