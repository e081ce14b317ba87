"""Geometry of the classic national VAT invoice form, in mm from the page's top-left corner.

These numbers agree with ``templates/vat_invoice.yaml``: each field's box there is the value
area named here (``tests/test_synth.py`` checks it).
"""

from __future__ import annotations

PAGE_W = 241.0
PAGE_H = 140.0

# The ruled table.
FRAME_X0, FRAME_X1 = 13.0, 228.0
FRAME_Y0, FRAME_Y1 = 38.0, 120.0
HEAD_COL_X = 20.0  # right edge of the narrow column holding 购买方 / 销售方
LABEL_X0, LABEL_X1 = 20.0, 47.0
VALUE_X0, VALUE_X1 = 47.0, 138.0
SIDE_HEAD_X0, SIDE_HEAD_X1 = 138.0, 144.0  # 密码区 / 备注 column
SIDE_X0, SIDE_X1 = 144.0, 228.0  # cipher text / notes

BUYER_Y0, BUYER_Y1 = 38.0, 58.0
BUYER_ROW = 5.0
SELLER_Y0, SELLER_Y1 = 99.0, 120.0
SELLER_ROW = 5.25
PARTY_LABELS = ("名　　称:", "纳税人识别号:", "地 址、电 话:", "开户行及账号:")

ITEM_HEAD_Y0, ITEM_HEAD_Y1 = 58.0, 63.0
ITEM_BODY_Y0, ITEM_BODY_Y1 = 63.0, 86.0
SUM_Y0, SUM_Y1 = 86.0, 92.0
TOTAL_Y0, TOTAL_Y1 = 92.0, 99.0

# (label, x0, x1) of the item table's columns.
ITEM_COLUMNS = (
    ("货物或应税劳务、服务名称", 13.0, 62.0),
    ("规格型号", 62.0, 88.0),
    ("单位", 88.0, 100.0),
    ("数量", 100.0, 120.0),
    ("单价", 120.0, 143.0),
    ("金额", 143.0, 174.0),
    ("税率", 174.0, 186.0),
    ("税额", 186.0, 228.0),
)
COL_NAME, COL_SPEC, COL_UNIT, COL_QTY, COL_PRICE, COL_AMOUNT, COL_RATE, COL_TAX = range(8)

WORDS_LABEL_X0, WORDS_LABEL_X1 = 13.0, 54.0
WORDS_X0, WORDS_X1 = 54.0, 160.0
SMALL_LABEL_X0, SMALL_LABEL_X1 = 160.0, 176.0
SMALL_X0, SMALL_X1 = 176.0, 228.0

FOOTER_Y0, FOOTER_Y1 = 121.0, 127.0
FOOTER_LABELS = (("收款人:", 20.0), ("复核:", 70.0), ("开票人:", 115.0), ("销售方:（章）", 170.0))

# Top band.
QR_X0, QR_Y0, QR_SIZE = 14.0, 5.0, 18.0
CHECK_LABEL_X0, CHECK_LABEL_X1 = 14.0, 28.0
CHECK_X0, CHECK_X1, CHECK_Y0, CHECK_Y1 = 28.0, 108.0, 26.0, 33.0
CODE_LABEL = (34.0, 4.0, 50.0, 8.0)
CODE_X0, CODE_X1, CODE_Y0, CODE_Y1 = 34.0, 84.0, 8.0, 17.0
TITLE_CX, TITLE_Y0, TITLE_Y1 = 120.5, 8.0, 18.0
TITLE_RULE_X0, TITLE_RULE_X1, TITLE_RULE_Y = 95.0, 146.0, 20.0
COPY_Y0, COPY_Y1 = 22.0, 27.0
NO_SIGN_X0, NO_SIGN_X1 = 165.0, 171.0
# The number ends by x 207: code and number are repeated small at x 213.
NUMBER_X0, NUMBER_X1, NUMBER_Y0, NUMBER_Y1 = 171.0, 207.0, 8.0, 18.0
REPEAT_X = 213.0
DATE_LABEL_X0, DATE_LABEL_X1 = 160.0, 176.0
DATE_X0, DATE_X1, DATE_Y0, DATE_Y1 = 176.0, 226.0, 28.0, 35.0

# The 增值税电子普通发票's top band (a PDF, printed on A4 or shown as an image): no tractor holes,
# 机器编号 under the QR code where the paper form prints 校验码, and code, number, date and check
# code stacked at the top right, each after its label.
E_MACHINE_LABEL_X0, E_MACHINE_X0, E_MACHINE_Y = 14.0, 30.0, 29.5
E_LABEL_X0, E_VALUE_X0 = 160.0, 178.0
E_ROWS_Y = (9.0, 15.0, 21.0, 27.0)  # 发票代码, 发票号码, 开票日期, 校验码 (centres)
E_LABELS = ("发票代码：", "发票号码：", "开票日期：", "校 验 码：")

# Tractor-feed strips.
HOLE_XS = (4.0, 237.0)
HOLE_PITCH = 12.7
HOLE_RADIUS = 2.0
PERFORATION_XS = (9.0, 232.0)

THICK = 0.55  # outer frame
THIN = 0.22  # inner rules

# Field name -> value area (x0, y0, x1, y1); the template's boxes are these.
VALUE_AREAS: dict[str, tuple[float, float, float, float]] = {
    "invoice_code": (CODE_X0, CODE_Y0, CODE_X1, CODE_Y1),
    "invoice_number": (NUMBER_X0, NUMBER_Y0, NUMBER_X1, NUMBER_Y1),
    "issue_date": (DATE_X0, DATE_Y0, DATE_X1, DATE_Y1),
    "check_code": (CHECK_X0, CHECK_Y0, CHECK_X1, CHECK_Y1),
    "buyer_name": (VALUE_X0, BUYER_Y0, VALUE_X1, BUYER_Y0 + BUYER_ROW),
    "buyer_tax_id": (VALUE_X0, BUYER_Y0 + BUYER_ROW, VALUE_X1, BUYER_Y0 + 2 * BUYER_ROW),
    "amount": (143.0, SUM_Y0, 174.0, SUM_Y1),
    "tax": (186.0, SUM_Y0, 228.0, SUM_Y1),
    "total_in_words": (WORDS_X0, TOTAL_Y0, WORDS_X1, TOTAL_Y1),
    "total": (SMALL_X0, TOTAL_Y0, SMALL_X1, TOTAL_Y1),
    "seller_name": (VALUE_X0, SELLER_Y0, VALUE_X1, SELLER_Y0 + SELLER_ROW),
    "seller_tax_id": (VALUE_X0, SELLER_Y0 + SELLER_ROW, VALUE_X1, SELLER_Y0 + 2 * SELLER_ROW),
}


def buyer_row(i: int) -> tuple[float, float]:
    return BUYER_Y0 + i * BUYER_ROW, BUYER_Y0 + (i + 1) * BUYER_ROW


def seller_row(i: int) -> tuple[float, float]:
    return SELLER_Y0 + i * SELLER_ROW, SELLER_Y0 + (i + 1) * SELLER_ROW
