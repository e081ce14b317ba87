"""Random but valid content of a fully digital invoice (数电票), drawn from a ``random.Random``.

The parties, items, taxes and amounts follow the same rules as the classic generator
(:mod:`extractor.synth.content`); what differs is what a 数电票 carries: a 20-digit 发票号码
(2-digit year, 2-digit province code, 1 channel digit, 15-digit sequence), no 发票代码, 校验码,
密码区, 收款人 or 复核, issue dates from 2022 on, and the QR payload
``01,<type>,,<20-digit number>,<amount>,<YYYYMMDD>,,<crc>``.
"""

from __future__ import annotations

import binascii
import random
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from extractor.synth import names
from extractor.synth.content import Item, Party, make_items, party, person, remark, totals
from extractor.synth.money import money
from extractor.synth.names import Region

FIRST_DAY = date(2022, 1, 1)
LAST_DAY = date(2025, 12, 31)
KINDS = ("普通发票", "增值税专用发票")
# QR type of the 数电票: 32 for 普通发票 (domain notes); 31 for 专用发票 is not from the notes.
QR_TYPES = {"普通发票": "32", "增值税专用发票": "31"}


@dataclass(frozen=True, slots=True)
class DigitalInvoice:
    region: Region
    kind: str  # 普通发票 | 增值税专用发票
    number: str  # 20 digits
    issue_date: date
    buyer: Party
    seller: Party
    items: tuple[Item, ...]
    amount: Decimal
    tax: Decimal
    total: Decimal
    words: str  # the 大写 as printed after the ⊗ mark
    remark: str
    drawer: str

    @property
    def title(self) -> str:
        return f"电子发票（{self.kind}）"

    @property
    def date_text(self) -> str:
        d = self.issue_date
        return f"{d.year:04d}年{d.month:02d}月{d.day:02d}日"

    @property
    def qr_payload(self) -> str:
        body = ",".join(
            [
                "01",
                QR_TYPES[self.kind],
                "",
                self.number,
                money(self.amount),
                self.issue_date.strftime("%Y%m%d"),
                "",
            ]
        )
        return f"{body},{binascii.crc_hqx(body.encode('ascii'), 0):04X}"

    def fields(self) -> dict[str, str]:
        """The template's fields, normalised as the extractor reports them."""
        return {
            "invoice_number": self.number,
            "issue_date": self.issue_date.isoformat(),
            "buyer_name": self.buyer.name,
            "buyer_tax_id": self.buyer.tax_id,
            "seller_name": self.seller.name,
            "seller_tax_id": self.seller.tax_id,
            "amount": money(self.amount),
            "tax": money(self.tax),
            "total": money(self.total),
            "total_in_words": money(self.total),
        }

    def extra(self) -> dict[str, object]:
        """Everything else printed on the invoice (not template fields)."""
        return {
            "title": self.title,
            "total_in_words_text": self.words,
            "items": [i.as_dict() for i in self.items],
            "remark": self.remark,
            "drawer": self.drawer,
            "qr_payload": self.qr_payload,
        }


def invoice_number(rng: random.Random, region: Region, day: date) -> str:
    """yy + province (the region code's first two digits) + channel digit + 15-digit sequence."""
    channel = rng.choice("12")
    sequence = rng.randrange(1, 10**9)  # issued numbers are zero-padded counters
    return f"{day.year % 100:02d}{region.code[:2]}{channel}{sequence:015d}"


def make_digital_invoice(rng: random.Random) -> DigitalInvoice:
    """One 数电票's content, every draw from ``rng``."""
    region = rng.choice(names.REGIONS)
    day = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    kind = KINDS[0] if rng.random() < 0.75 else KINDS[1]
    seller = party(rng, region)
    buyer = party(rng, rng.choice(names.REGIONS) if rng.random() < 0.4 else region)
    items = make_items(rng, day, small_scale=kind == KINDS[0] and rng.random() < 0.15)
    amount, tax, total, words = totals(rng, items)
    return DigitalInvoice(
        region=region,
        kind=kind,
        number=invoice_number(rng, region, day),
        issue_date=day,
        buyer=buyer,
        seller=seller,
        items=items,
        amount=amount,
        tax=tax,
        total=total,
        words=words,
        remark=remark(rng, rng.choice(region.cities), day) if rng.random() < 0.7 else "",
        drawer=person(rng),
    )
