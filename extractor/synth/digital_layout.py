"""Geometry of the fully digital invoice (数电票, 电子发票（普通发票）/（增值税专用发票）), in mm
from the page's top-left corner.

The page is 210 x 140 mm, as the PDFs the national e-invoice service issues: the QR code
top-left, the title with the 全国统一发票监制章 over it in the middle, 发票号码 (20 digits) and
开票日期 top-right, then one ruled table: buyer and seller side by side (名称,
统一社会信用代码/纳税人识别号), the item table (no inner rules) ending in the 合计 row, the 价税合计
row (大写 and 小写), 备注; 开票人 below the table.

These numbers agree with ``templates/vat_invoice_digital.yaml``: each field's box there is the
value area named here (``tests/test_synth_digital.py`` checks it).
"""

from __future__ import annotations

PAGE_W = 210.0
PAGE_H = 140.0

# -- top band -----------------------------------------------------------------------------------

QR_X0, QR_Y0, QR_SIZE = 10.0, 3.5, 19.0
QR_BOX = (8.0, 2.0, 23.0, 23.0)  # the template's qr box: the code with a quiet zone

TITLE_CX, TITLE_Y, TITLE_SIZE = 105.0, 11.5, 5.6  # centre of the title line, em in mm
TITLE_RULE_Y = (17.0, 17.8)  # the double rule under the title
TITLE_RULE_HALF = 30.0
SEAL_CX, SEAL_CY, SEAL_RX, SEAL_RY = 105.0, 11.5, 13.0, 8.8  # 全国统一发票监制章

HEAD_LABEL_X = 141.0  # 发票号码： / 开票日期：
HEAD_VALUE_X = 159.0  # where the number and the date start
NUMBER_Y = 9.5  # centre of the 发票号码 line
DATE_Y = 16.5

# -- the ruled table ----------------------------------------------------------------------------

FRAME_X0, FRAME_X1 = 8.0, 202.0
FRAME_Y0, FRAME_Y1 = 24.0, 122.0
PARTY_Y1 = 48.0  # bottom of the buyer / seller band
ITEMS_Y1 = 94.0  # bottom of the item table (the 合计 row is its last line)
TOTAL_Y1 = 102.0  # bottom of the 价税合计 row; 备注 below

HEAD_W = 6.0  # the narrow columns holding 购买方信息 / 销售方信息 / 备注, stacked vertically
BUYER_HEAD_X0, BUYER_HEAD_X1 = FRAME_X0, FRAME_X0 + HEAD_W
SELLER_HEAD_X0, SELLER_HEAD_X1 = 105.0, 105.0 + HEAD_W
PARTY_LABEL_DX = 1.5  # labels start this far right of the head column

NAME_Y = 31.0  # centres of the 名称 and the 统一社会信用代码/纳税人识别号 lines
TAX_ID_Y = 40.0
NAME_LABEL = "名称："
TAX_ID_LABEL = "统一社会信用代码/纳税人识别号："
NAME_VALUE_DX = 13.0  # value start, right of the head column (label 8.7 mm + a 2.8 mm gap)
TAX_ID_VALUE_DX = 49.5  # (label 45 mm + a 3 mm gap)

ITEM_HEAD_Y = 51.5
ITEM_FIRST_Y = 57.0
ITEM_PITCH = 4.5
MAX_ITEMS = 5
SUM_Y = 90.0  # centre of the 合计 row
# (label, x0, x1) of the item table's columns (no rules between them).
ITEM_COLUMNS = (
    ("项目名称", 8.0, 52.0),
    ("规格型号", 52.0, 80.0),
    ("单位", 80.0, 93.0),
    ("数量", 93.0, 113.0),
    ("单价", 113.0, 137.0),
    ("金额", 137.0, 163.0),
    ("税率/征收率", 163.0, 180.0),
    ("税额", 180.0, 202.0),
)
COL_NAME, COL_SPEC, COL_UNIT, COL_QTY, COL_PRICE, COL_AMOUNT, COL_RATE, COL_TAX = range(8)

TOTAL_Y = 98.0  # centre of the 价税合计 row
WORDS_LABEL_X1 = 48.0  # the rule closing the 价税合计（大写） cell
WORDS_X = 51.0  # where ⊗ + the capitals start
SMALL_LABEL_X = 146.0  # （小写）
SMALL_VALUE_X = 161.0  # ¥ + the total

REMARK_X, REMARK_Y = 17.0, 106.0

DRAWER_LABEL_X, DRAWER_Y = 20.0, 127.5  # 开票人： below the table

# -- print --------------------------------------------------------------------------------------

FRAME_T = 0.5  # outer frame (mm)
RULE_T = 0.3  # inner rules
LABEL_SIZE = 2.9  # em (mm) of the form's labels
VALUE_SIZE = 3.3  # em of the header values, names, tax ids and totals
ITEM_SIZE = 2.8  # em of item lines and the remark

# Field name -> value area (x0, y0, x1, y1); the template's boxes are these.
VALUE_AREAS: dict[str, tuple[float, float, float, float]] = {
    "invoice_number": (157.5, 6.5, 203.5, 12.5),
    "issue_date": (157.5, 13.5, 197.5, 19.5),
    "buyer_name": (BUYER_HEAD_X1 + NAME_VALUE_DX - 1.5, 28.0, SELLER_HEAD_X0 - 0.5, 34.0),
    "buyer_tax_id": (BUYER_HEAD_X1 + TAX_ID_VALUE_DX - 1.0, 37.0, SELLER_HEAD_X0 - 0.5, 43.0),
    "seller_name": (SELLER_HEAD_X1 + NAME_VALUE_DX - 1.5, 28.0, FRAME_X1 - 0.5, 34.0),
    "seller_tax_id": (SELLER_HEAD_X1 + TAX_ID_VALUE_DX - 1.0, 37.0, FRAME_X1 - 0.5, 43.0),
    "amount": (137.0, 87.0, 163.0, 93.0),
    "tax": (180.0, 87.0, 202.0, 93.0),
    "total_in_words": (WORDS_X - 1.0, 95.0, 142.0, 101.0),
    "total": (SMALL_VALUE_X - 1.5, 95.0, FRAME_X1 - 0.5, 101.0),
}


def item_y(k: int) -> float:
    """Centre of item line ``k`` (0-based)."""
    return ITEM_FIRST_Y + ITEM_PITCH * k
