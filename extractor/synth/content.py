"""Random but valid invoice content, drawn from a ``random.Random``.

Everything holds the rules a genuine classic 增值税普通发票 holds: USCC check characters,
invoice codes that match region, year and kind, item amounts that add up to 合计, taxes at the
rates in force on the issue date, 价税合计 = 合计金额 + 合计税额, and the 大写 equal to the 小写.
"""

from __future__ import annotations

import binascii
import math
import random
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Protocol, TypeVar

from extractor.synth import names
from extractor.synth.money import (
    USCC_CHARSET,
    amount_to_words,
    cents,
    money,
    org_check_char,
    uscc_check_char,
)
from extractor.synth.names import City, Region

CIPHER_CHARS = "0123456789+-*/<>"
FIRST_DAY = date(2017, 1, 1)
LAST_DAY = date(2025, 12, 31)
MIN_TOTAL = Decimal("10.00")
MAX_TOTAL = Decimal("999999.99")
QR_TYPE_ORDINARY = "04"  # 增值税普通发票 in the QR payload
QR_TYPE_ELECTRONIC = "10"  # 增值税电子普通发票
QR_TYPE_SPECIAL = "01"  # 增值税专用发票


@dataclass(frozen=True, slots=True)
class Party:
    name: str
    tax_id: str
    address_phone: str
    bank_account: str


EXEMPT_RATE = "免税"
EXEMPT_TAX = "***"
"""What a tax-exempt line prints in its rate and tax columns, and its invoice as its total tax."""


@dataclass(frozen=True, slots=True)
class Item:
    name: str  # *计算机设备*笔记本电脑
    spec: str
    unit: str
    quantity: str  # as printed; "" when not given
    unit_price: str  # as printed (tax excluded); "" when not given
    amount: Decimal
    rate: Decimal  # Decimal("0.13")
    tax: Decimal
    exempt: bool = False  # 免税: no tax, printed *** in the tax column

    @property
    def rate_text(self) -> str:
        return EXEMPT_RATE if self.exempt else f"{int(self.rate * 100)}%"

    @property
    def tax_text(self) -> str:
        return EXEMPT_TAX if self.exempt else f"{self.tax:.2f}"

    def as_dict(self) -> dict[str, str]:
        """The item line as printed, for the ground truth's ``extra``."""
        return {
            "name": self.name,
            "spec": self.spec,
            "unit": self.unit,
            "quantity": self.quantity,
            "unit_price": self.unit_price,
            "amount": money(self.amount),
            "rate": self.rate_text,
            "tax": self.tax_text,
        }


@dataclass(frozen=True, slots=True)
class Invoice:
    region: Region
    title: str
    code: str
    number: str
    issue_date: date
    check_code: str
    buyer: Party
    seller: Party
    items: tuple[Item, ...]
    amount: Decimal
    tax: Decimal
    total: Decimal
    words: str  # the 大写 as printed (after the ⊗ mark)
    cipher: tuple[str, ...]
    remark: str
    payee: str
    reviewer: str
    drawer: str
    machine_no: str
    qr_type: str = QR_TYPE_ORDINARY

    @property
    def date_text(self) -> str:
        d = self.issue_date
        return f"{d.year:04d}年{d.month:02d}月{d.day:02d}日"

    @property
    def check_code_text(self) -> str:
        c = self.check_code
        return " ".join(c[i : i + 5] for i in range(0, len(c), 5))

    @property
    def qr_payload(self) -> str:
        body = ",".join(
            [
                "01",
                self.qr_type,
                self.code,
                self.number,
                money(self.amount),
                self.issue_date.strftime("%Y%m%d"),
                self.check_code,
            ]
        )
        return f"{body},{binascii.crc_hqx(body.encode('ascii'), 0):04X}"

    def fields(self) -> dict[str, str]:
        """The template's fields, normalised as the extractor reports them."""
        return {
            "invoice_code": self.code,
            "invoice_number": self.number,
            "issue_date": self.issue_date.isoformat(),
            **({"check_code": self.check_code} if self.check_code else {}),
            "buyer_name": self.buyer.name,
            "buyer_tax_id": self.buyer.tax_id,
            "amount": money(self.amount),
            "tax": money(self.tax),
            "total": money(self.total),
            "total_in_words": money(self.total),
            "seller_name": self.seller.name,
            "seller_tax_id": self.seller.tax_id,
        }

    def extra(self) -> dict[str, object]:
        """Everything else printed on the invoice (not template fields)."""
        return {
            "title": self.title,
            "total_in_words_text": self.words,
            "buyer_address_phone": self.buyer.address_phone,
            "buyer_bank_account": self.buyer.bank_account,
            "seller_address_phone": self.seller.address_phone,
            "seller_bank_account": self.seller.bank_account,
            "items": [i.as_dict() for i in self.items],
            "cipher": list(self.cipher),
            "remark": self.remark,
            "payee": self.payee,
            "reviewer": self.reviewer,
            "drawer": self.drawer,
            "machine_no": self.machine_no,
            "qr_payload": self.qr_payload,
        }


# -- people, places, companies ------------------------------------------------------------


def person(rng: random.Random) -> str:
    given = "".join(rng.choice(names.GIVEN_CHARS) for _ in range(rng.choice((1, 2, 2))))
    return rng.choice(names.SURNAMES) + given


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def uscc(rng: random.Random, district_code: str, institution: bool = False) -> str:
    """A unified social credit code with valid organisation and USCC check characters."""
    head = "12" if institution else "91"
    if rng.random() < 0.55:
        letters = USCC_CHARSET[10:]
        body = "MA" + "".join(rng.choice("0123456789" + letters) for _ in range(6))
    else:
        body = _digits(rng, 8)
    first17 = head + district_code + body + org_check_char(body)
    return first17 + uscc_check_char(first17)


def phone(rng: random.Random, city: City) -> str:
    if rng.random() < 0.2:
        return "1" + rng.choice("3456789") + _digits(rng, 9)
    first = rng.choice("2345678")
    rest = _digits(rng, 7 if len(city.area_code) == 3 else rng.choice((6, 7)))
    return f"{city.area_code}-{first}{rest}"


def address(rng: random.Random, city: City, district: str) -> str:
    prefix = f"{city.name}市{district}"
    street = f"{rng.choice(city.roads)}{rng.randint(1, 399)}号"
    building = rng.choice(
        (
            "",
            "",
            f"{rng.randint(1, 30)}层",
            f"{rng.choice('ABCD')}座{rng.randint(1, 28)}{rng.randint(1, 20):02d}室",
            f"{rng.randint(1, 12)}号楼{rng.randint(1, 9)}{rng.randint(1, 20):02d}",
        )
    )
    return prefix + street + building


def bank_account(rng: random.Random, city: City, district: str) -> str:
    place = rng.choice(
        (district.removesuffix("区").removesuffix("街道"), rng.choice(city.roads)[:2])
    )
    branch = f"{rng.choice(names.BANKS)}{city.name}{place}{rng.choice(names.BRANCH_WORDS)}"
    return f"{branch} {_digits(rng, rng.choice((16, 17, 19)))}"


def company(rng: random.Random, city: City, district: str) -> tuple[str, bool]:
    """A company (or public institution) name; True for an institution."""
    if rng.random() < 0.06:
        return f"{city.name}市{district}{rng.choice(names.INSTITUTIONS)}", True
    core = "".join(rng.sample(names.NAME_CHARS, rng.choice((2, 2, 2, 3, 4))))
    industry = rng.choice(names.INDUSTRIES)
    suffix = rng.choice(names.COMPANY_SUFFIXES)
    style = rng.random()
    if style < 0.6:
        name = f"{city.name}{core}{industry}{suffix}"
    elif style < 0.72:
        name = f"{core}{industry}（{city.name}）有限公司"
    elif style < 0.88:
        name = f"{core}{industry}{suffix}"
    else:
        name = f"{core}{industry}有限公司{city.name}分公司"
    return name, False


def party(rng: random.Random, region: Region) -> Party:
    city = rng.choice(region.cities)
    district_code, district = rng.choice(city.districts)
    name, institution = company(rng, city, district)
    return Party(
        name=name,
        tax_id=uscc(rng, district_code, institution),
        address_phone=f"{address(rng, city, district)} {phone(rng, city)}",
        bank_account=bank_account(rng, city, district),
    )


# -- money ---------------------------------------------------------------------------------


def rates_on(day: date) -> dict[str, Decimal]:
    """VAT rates in force on ``day`` for general taxpayers, by rate class."""
    if day < date(2018, 5, 1):
        goods, low = "0.17", "0.11"
    elif day < date(2019, 4, 1):
        goods, low = "0.16", "0.10"
    else:
        goods, low = "0.13", "0.09"
    return {"goods": Decimal(goods), "low": Decimal(low), "service": Decimal("0.06")}


def _plain(value: Decimal) -> str:
    """A number without trailing zeros or exponent: 12.50 -> 12.5, 100.00 -> 100."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _quantity(rng: random.Random, unit: str, share: Decimal) -> Decimal:
    if unit in ("吨", "千克", "升", "立方米", "米", "斤") and rng.random() < 0.6:
        q = Decimal(str(round(rng.uniform(1, 400), rng.choice((1, 2, 3)))))
        return q if q > 0 else Decimal(1)
    if unit in ("月", "年", "人月", "天", "间夜", "次", "项"):
        return Decimal(rng.choice((1, 1, 1, 2, 3, 6, 12)))
    top = max(1, min(500, int(share / 20)))
    return Decimal(rng.randint(1, max(1, min(top, rng.choice((3, 10, 50, 200))))))


def make_item(
    rng: random.Random,
    category: tuple[str, str, str, tuple[str, ...], tuple[str, ...]],
    rate: Decimal,
    gross_share: Decimal,
) -> Item:
    _, kind, label, units, specs = category
    unit = rng.choice(units)
    name = f"*{kind}*{label}"
    spec = rng.choice(specs) if rng.random() < 0.7 else ""
    one = Decimal(1) + rate
    if not unit and rng.random() < 0.7:  # a service billed as one sum: no quantity or price
        amount = cents(gross_share / one)
        return Item(name, spec, "", "", "", amount, rate, cents(amount * rate))
    qty = _quantity(rng, unit, gross_share)
    if rng.random() < 0.5:  # priced tax-included: the printed unit price has 8 decimals
        price_incl = gross_share / qty
        price_incl = (
            Decimal(round(price_incl))
            if price_incl > 20 and rng.random() < 0.5
            else cents(price_incl)
        )
        price_incl = max(price_incl, Decimal("0.01"))
        gross = cents(qty * price_incl)
        amount = cents(gross / one)
        tax = gross - amount
        unit_price = _plain((price_incl / one).quantize(Decimal("0.00000001")))
    else:
        price = max(cents(gross_share / one / qty), Decimal("0.01"))
        amount = cents(qty * price)
        tax = cents(amount * rate)
        unit_price = _plain(price) if rng.random() < 0.5 else f"{price:.2f}"
    return Item(name, spec, unit, _plain(qty), unit_price, amount, rate, tax)


def make_items(rng: random.Random, day: date, small_scale: bool) -> tuple[Item, ...]:
    """1-5 item lines whose total lies in [10.00, 999999.99]."""
    rates = rates_on(day)
    while True:
        n = rng.choices((1, 2, 3, 4, 5), weights=(45, 25, 15, 8, 7))[0]
        target = Decimal(str(round(math.exp(rng.uniform(math.log(15), math.log(600000))), 2)))
        weights = [rng.uniform(0.2, 1.0) for _ in range(n)]
        scale = sum(weights)
        rate_class = rng.choice(("goods", "goods", "low", "service"))
        items = []
        for w in weights:
            pool = (
                [c for c in names.ITEMS if c[0] == rate_class]
                if rng.random() < 0.75
                else list(names.ITEMS)
            )
            category = rng.choice(pool)
            rate = Decimal("0.03") if small_scale else rates[category[0]]
            share = max(Decimal("1.00"), cents(target * Decimal(str(w / scale))))
            items.append(make_item(rng, category, rate, share))
        total = sum((i.amount + i.tax for i in items), Decimal(0))
        if MIN_TOTAL <= total <= MAX_TOTAL and all(i.amount > 0 for i in items):
            return tuple(items)


# -- codes -----------------------------------------------------------------------------------


def invoice_code(rng: random.Random, region: Region, day: date) -> str:
    """普票 code: 10 digits before 2018 (8th digit 6 or 3), 12 digits from 2018 (ending 04/05)."""
    printed = max(2015, day.year - rng.choice((0, 0, 1)))
    yy = f"{printed % 100:02d}"
    if day.year < 2018:
        batch, kind, tail = (
            rng.randint(1, 4),
            rng.choice("63"),
            rng.choice(("20", "30", "40", "50")),
        )
        return f"{region.code}{yy}{batch}{kind}{tail}"
    return f"0{region.code}{yy}{rng.randint(1, 3):03d}{rng.choice(('04', '04', '04', '05'))}"


def remark(rng: random.Random, city: City, day: date) -> str:
    pattern = rng.choice(names.REMARKS)
    other = rng.choice([c for r in names.REGIONS for c in r.cities])
    return pattern.format(
        order=f"PO{day:%Y%m%d}{_digits(rng, 4)}",
        year=day.year,
        n3=_digits(rng, 3),
        city=city.name,
        city2=other.name,
        person=person(rng),
        month=day.month,
    )


def totals(rng: random.Random, items: tuple[Item, ...]) -> tuple[Decimal, Decimal, Decimal, str]:
    """合计金额, 合计税额, 价税合计 and its 大写 as printed (圆 instead of 元 on some)."""
    amount = sum((i.amount for i in items), Decimal(0))
    tax = sum((i.tax for i in items), Decimal(0))
    total = amount + tax
    words = amount_to_words(total)
    if rng.random() < 0.3:
        words = words.replace("元", "圆")
    return amount, tax, total, words


class Issued(Protocol):
    """What an invoice of either form (:class:`Invoice`, the 数电票's) holds of its amounts."""

    items: tuple[Item, ...]
    amount: Decimal
    tax: Decimal
    total: Decimal
    words: str


IssuedT = TypeVar("IssuedT", bound=Issued)


def as_red_letter(inv: IssuedT) -> IssuedT:
    """``inv`` as the red-letter invoice (红字发票) that cancels it, as a return or a discount
    is invoiced: every quantity and amount negative, items' and totals' alike, and 负 before
    the amount in words (⊗负壹佰...)."""
    items = tuple(
        replace(
            item,
            quantity=f"-{item.quantity}" if item.quantity else "",
            amount=-item.amount,
            tax=-item.tax,
        )
        for item in inv.items
    )
    return replace(
        inv, items=items, amount=-inv.amount, tax=-inv.tax, total=-inv.total, words=f"负{inv.words}"
    )


def as_tax_exempt(inv: IssuedT) -> IssuedT:
    """``inv`` as a tax-exempt sale (免税: farm produce, medical care, a small taxpayer under
    relief): every line's amount as it was, no tax (*** in the tax column and as the total
    tax), the total the amount."""
    items = tuple(replace(item, rate=Decimal(0), tax=Decimal(0), exempt=True) for item in inv.items)
    words = amount_to_words(inv.amount)
    if "圆" in inv.words:
        words = words.replace("元", "圆")
    return replace(inv, items=items, tax=Decimal(0), total=inv.amount, words=words)


def as_electronic(inv: Invoice) -> Invoice:
    """``inv`` issued as a 增值税电子普通发票: its title, a code ending in 11 and type 10 in the
    QR code."""
    title = inv.title.replace("增值税普通发票", "增值税电子普通发票")
    region_year = inv.code[1:7] if len(inv.code) == 12 else inv.code[:6]
    code = f"0{region_year}{inv.code[-5:-2]}11"
    return replace(inv, title=title, code=code, qr_type=QR_TYPE_ELECTRONIC)


def as_special(inv: Invoice) -> Invoice:
    """``inv`` issued as a 增值税专用发票 on the national paper form: its title, a 10-digit code
    (region, year, batch, then 1 or 5 for a 专票: domain notes), type 01 in the QR code, and no
    check code (the form prints its machine number, 机器编号, on that line instead)."""
    title = inv.title.replace("增值税普通发票", "增值税专用发票")
    region_year = inv.code[1:7] if len(inv.code) == 12 else inv.code[:6]
    kind = "15"[int(inv.number[-1]) % 2]
    code = f"{region_year}{int(inv.number[-2]) % 4 + 1}{kind}{inv.number[-4:-2]}"
    return replace(inv, title=title, code=code, check_code="", qr_type=QR_TYPE_SPECIAL)


def printed_tax(inv: Issued) -> str:
    """The total tax as an invoice prints it: ¥ and the sum, or *** where every line is exempt."""
    if inv.items and all(item.exempt for item in inv.items):
        return EXEMPT_TAX
    return f"¥{inv.tax:.2f}"


def make_invoice(rng: random.Random) -> Invoice:
    """One invoice's content, every draw from ``rng``."""
    region = rng.choice(names.REGIONS)
    day = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    seller = party(rng, region)
    buyer = party(rng, rng.choice(names.REGIONS) if rng.random() < 0.4 else region)
    items = make_items(rng, day, small_scale=rng.random() < 0.15)
    amount, tax, total, words = totals(rng, items)
    return Invoice(
        region=region,
        title=f"{region.title}增值税普通发票",
        code=invoice_code(rng, region, day),
        number=f"{rng.randrange(1, 10**8):08d}",
        issue_date=day,
        check_code=_digits(rng, 20),
        buyer=buyer,
        seller=seller,
        items=items,
        amount=amount,
        tax=tax,
        total=total,
        words=words,
        cipher=tuple("".join(rng.choice(CIPHER_CHARS) for _ in range(27)) for _ in range(4)),
        remark=remark(rng, rng.choice(region.cities), day),
        payee=person(rng) if rng.random() < 0.7 else "",
        reviewer=person(rng) if rng.random() < 0.7 else "",
        drawer=person(rng),
        machine_no=_digits(rng, 12),
    )
