"""Text drawn again over itself, taken out of a PDF's text layer.

Some PDF writers embolden text by printing it two or three times a fraction of a point apart:
the page shows one bold line, its text layer holds the line as many times (a name read from it
is the name glued to itself, and no check of a name can tell). MuPDF merges a glyph drawn twice
within one line of its text; a line drawn again is a line of its own, and it is split into
words wherever the writer switched fonts (``2022年02月27日`` as ``2022``, ``年``, ``02``...), so
that the copies' words need not read alike. Duplicates are therefore found glyph by glyph.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from extractor.boxes import Box, smaller_share

OVERPRINT_SHARE = 0.5
"""A glyph whose box lies over more than this share of the box of a glyph of the same character
already kept (or of its own, the smaller) is that glyph drawn again."""
RawWord = tuple[Any, ...]
"""A word as PyMuPDF's ``get_text("words")`` gives it: x0, y0, x1, y1, text, block, line, word."""


def without_overprints(words: Sequence[RawWord], rawdict: dict[str, Any]) -> list[RawWord]:
    """``words`` with the glyphs drawn again over a glyph kept taken out of them, each word left
    with none dropped, each shortened to its glyphs kept (text and box). ``rawdict``: the same
    text page's ``rawdict``, whose lines' glyphs make the words."""
    glyphs = _word_glyphs(rawdict)
    kept: dict[str, list[Box]] = {}
    out: list[RawWord] = []
    for word in words:
        x0, y0, x1, y1, text, block, line, number = word[:8]
        own = glyphs.get((block, line, number))
        if own is None or "".join(c for c, _ in own) != text:
            out.append(word)  # not the word its line's glyphs make: left as it came
            continue
        fresh = [(c, box) for c, box in own if not _drawn_again(c, box, kept)]
        for c, box in fresh:
            kept.setdefault(c, []).append(box)
        if len(fresh) == len(own):
            out.append(word)
        elif fresh:
            boxes = [box for _, box in fresh]
            x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
            x1, y1 = max(b[2] for b in boxes), max(b[3] for b in boxes)
            out.append((x0, y0, x1, y1, "".join(c for c, _ in fresh), *word[5:]))
    return out


def _drawn_again(c: str, box: Box, kept: dict[str, list[Box]]) -> bool:
    return any(smaller_share(box, other) > OVERPRINT_SHARE for other in kept.get(c, ()))


def _word_glyphs(rawdict: dict[str, Any]) -> dict[tuple[int, int, int], list[tuple[str, Box]]]:
    """Each word's glyphs (character, box) by its (block, line, word) numbers, the line's glyphs
    split as MuPDF splits them into words (``TextPage.extractWORDS``): at white space and at
    the directional marks, a word starting with no zero width joiner."""
    found: dict[tuple[int, int, int], list[tuple[str, Box]]] = {}
    for block in rawdict.get("blocks", ()):
        for line_number, line in enumerate(block.get("lines", ())):
            for word_number, glyphs in enumerate(_split(line)):
                found[(block["number"], line_number, word_number)] = glyphs
    return found


def _split(line: dict[str, Any]) -> Iterator[list[tuple[str, Box]]]:
    word: list[tuple[str, Box]] = []
    for span in line["spans"]:
        for char in span["chars"]:
            c = char["c"]
            code = ord(c)
            if code <= 32 or code == 160 or 0x202A <= code <= 0x202E:
                if word:
                    yield word
                word = []
            elif word or code != 0x200D:
                word.append((c, tuple(char["bbox"])))
    if word:
        yield word
