"""Fonts the generator draws with, found on the system (Debian's fonts-arphic-*, fonts-wqy-*,
fonts-dejavu-core). ``make fonts`` installs them when missing."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PIL import ImageFont

_FONT_DIRS = (
    Path("/usr/share/fonts"),
    Path("/usr/local/share/fonts"),
    Path.home() / ".fonts",
    Path.home() / ".local/share/fonts",
)

# name -> (file name, index in the collection, Debian package)
FONTS: dict[str, tuple[str, int, str]] = {
    "kai": ("ukai.ttc", 0, "fonts-arphic-ukai"),  # AR PL UKai CN: the form's 楷体 labels
    "ming": ("uming.ttc", 0, "fonts-arphic-uming"),  # AR PL UMing CN: printed data (宋体-like)
    "hei": ("wqy-zenhei.ttc", 0, "fonts-wqy-zenhei"),  # WenQuanYi Zen Hei: seals, other pages
    "microhei": ("wqy-microhei.ttc", 0, "fonts-wqy-microhei"),
    "mono": ("DejaVuSansMono.ttf", 0, "fonts-dejavu-core"),  # printed digits
    "mono_bold": ("DejaVuSansMono-Bold.ttf", 0, "fonts-dejavu-core"),
    "sans": ("DejaVuSans.ttf", 0, "fonts-dejavu-core"),
    "sans_condensed": ("DejaVuSansCondensed.ttf", 0, "fonts-dejavu-core"),
}


class FontMissingError(RuntimeError):
    pass


@cache
def font_path(name: str) -> Path:
    file_name, _, package = FONTS[name]
    for root in _FONT_DIRS:
        if root.is_dir():
            for path in sorted(root.rglob(file_name)):
                return path
    raise FontMissingError(
        f"font {file_name!r} not found under {', '.join(map(str, _FONT_DIRS))}; "
        f"install the Debian package {package} (or run `make fonts`)"
    )


@cache
def font(name: str, size_px: float) -> ImageFont.FreeTypeFont:
    """The font ``name`` (a key of :data:`FONTS`) at an em size of ``size_px`` pixels."""
    _, index, _ = FONTS[name]
    return ImageFont.truetype(str(font_path(name)), size=max(1.0, round(size_px, 2)), index=index)
