"""Ideographs spelled as radicals or compatibility forms, spelled back as the ideographs shown.

Many PDF producers write a font's ToUnicode map from the font's own character map, taking the
lowest code point that maps to each glyph. Where a font draws the Kangxi radical ``⼀``
(U+2F00) and the ideograph ``一`` (U+4E00) with one glyph, as many CJK fonts do, the text layer
of an invoice that shows ``一`` says ``⼀``; likewise ``⽇``, ``⼈``, ``⼤``, ``⼯``, ``⾦`` and
the simplified forms of the CJK Radicals Supplement (``⻓`` for 长, ``⻔`` for 门, ``⻋`` for 车).
The text looks right and compares wrong: a date ``2025年01月02⽇`` is no date, a name
``⼤连⻓城⼯程有限公司`` is not the buyer's. Recognisers too: PP-OCRv6 small's character list
holds 郎 and 凉 twice, once as the CJK compatibility ideograph.

:func:`unify_radicals` maps them back: the Kangxi radicals and the CJK compatibility ideographs
by their Unicode compatibility decomposition (NFKC, applied to those characters only: full-width
brackets in a name stay as printed), and the supplement's simplified radicals, which have none,
by :data:`SIMPLIFIED_RADICALS` (Unicode's EquivalentUnifiedIdeograph.txt, restricted to the
radicals fonts draw as the whole character, not as a component such as ⺮ or ⻌).
"""

from __future__ import annotations

import unicodedata

SIMPLIFIED_RADICALS: dict[str, str] = dict(
    zip(
        "⺠⺦⻁⻄⻅⻆⻉⻋⻓⻔⻘⻙⻚⻛⻜⻝⻢⻤⻥⻦⻧⻨⻩⻪⻬⻮⻰",
        "民丬虎西见角贝车长门青韦页风飞食马鬼鱼鸟卤麦黄黾齐齿龙",
        strict=True,
    )
)
"""Radicals of the CJK Radicals Supplement without a decomposition -> the ideograph."""


def _compatibility(ch: str) -> bool:
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x2FDF  # CJK Radicals Supplement, Kangxi Radicals
        or 0xF900 <= code <= 0xFAFF  # CJK Compatibility Ideographs
        or 0x2F800 <= code <= 0x2FA1F  # ... Supplement
    )


def unify_radicals(text: str) -> str:
    """``text`` with each radical or compatibility ideograph that stands for a unified ideograph
    replaced by it; everything else as it was."""
    if not any(_compatibility(ch) for ch in text):
        return text
    out = []
    for ch in text:
        if _compatibility(ch):
            unified = SIMPLIFIED_RADICALS.get(ch) or unicodedata.normalize("NFKC", ch)
            ch = unified if len(unified) == 1 else ch
        out.append(ch)
    return "".join(out)
