"""OFD documents (GB/T 33190-2016, the 数电票's other format) drawn as PDF, so that an OFD invoice
takes the born-digital PDF path: its text is read from the text layer, and its image, when
something asks for one, is rendered.

An OFD is a ZIP package: ``OFD.xml`` names each document's root (``Document.xml``), which lists
its pages and template pages, each a ``Content.xml`` of layers holding text, path and image
objects positioned in millimetres. Each page is drawn onto a PDF page of its physical size: its
template pages first, then its own layers; text at each character's position (``TextCode``'s
``X``/``Y`` and ``DeltaX``/``DeltaY``) in PyMuPDF's built-in CJK font (its glyphs are not the
document's, but the text and where it lies are), paths as strokes and fills, images from the
package's resources. Signatures (the seal, kept in ``Signs/``) and annotations are not drawn:
the fields are not in them.

Only what is needed to read an invoice is drawn; an object that cannot be drawn is left out,
and a package that is not an OFD's raises :class:`~extractor.errors.CorruptInputError`.
"""

from __future__ import annotations

import io
import itertools
import math
import posixpath
import re
import zipfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from xml.etree import ElementTree

from extractor.errors import CorruptInputError, TooLargeInputError

if TYPE_CHECKING:
    import pymupdf

PT_PER_MM = 72 / 25.4
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""An entry larger than this once inflated is refused (a ZIP bomb), whatever it holds."""
CJK_FONT = "china-s"  # PyMuPDF's built-in Droid Sans Fallback
LATIN_FONT = "helv"
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")

Matrix = tuple[float, float, float, float, float, float]  # a b c d e f: x' = a x + c y + e
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def ofd_to_pdf(data: bytes, max_pages: int, pages: Collection[int] | None = None) -> bytes:
    """The first document of the OFD package ``data`` drawn as a PDF, page for page; with
    ``pages`` (zero-based indexes), the others left blank at their size."""
    import pymupdf

    package = _Package(data)
    root = package.xml("OFD.xml")
    doc_root = _first(root, "DocBody/DocRoot")
    if doc_root is None or not (doc_root.text or "").strip():
        raise CorruptInputError("the OFD package's OFD.xml names no document (DocBody/DocRoot)")
    document = _Document(package, _resolve("", doc_root.text.strip()))
    if not document.pages:
        raise CorruptInputError("the OFD document has no pages")
    if len(document.pages) > max_pages:
        raise TooLargeInputError(
            f"the OFD has {len(document.pages)} pages, over the limit of {max_pages}"
        )
    pdf = pymupdf.open()
    for number, page_path in enumerate(document.pages, start=1):
        if pages is not None and number - 1 not in pages:
            pdf.new_page(
                width=document.page_box[2] * PT_PER_MM, height=document.page_box[3] * PT_PER_MM
            )
            continue
        content = package.xml(page_path)
        box = _box(_first(content, "Area/PhysicalBox")) or document.page_box
        if not (0 < box[2] < 10_000 and 0 < box[3] < 10_000):
            raise CorruptInputError(f"the OFD's page {number} is {box[2]} x {box[3]} mm")
        page = pdf.new_page(width=box[2] * PT_PER_MM, height=box[3] * PT_PER_MM)
        painter = _Painter(page, document, (box[0], box[1]))
        templates = [t for t in _children(content, "Template") if t.get("TemplateID")]
        behind = [t for t in templates if t.get("ZOrder", "Background") != "Foreground"]
        for template in [*behind, None, *(t for t in templates if t not in behind)]:
            if template is None:  # the page's own content, between its templates
                painter.content(content)
            elif (path := document.templates.get(template.get("TemplateID", ""))) is not None:
                painter.content(package.xml(path))
    return pdf.tobytes(garbage=3, deflate=True)


class _Package:
    """The ZIP archive, its XML entries parsed, its entries' sizes checked."""

    def __init__(self, data: bytes) -> None:
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError) as exc:
            raise CorruptInputError(
                f"the OFD package is not a readable ZIP archive: {exc}"
            ) from exc
        self.names = {name.lstrip("/"): name for name in self.zip.namelist()}

    def read(self, path: str) -> bytes:
        name = self.names.get(path.lstrip("/"))
        if name is None:
            raise CorruptInputError(f"the OFD package has no {path}")
        info = self.zip.getinfo(name)
        if info.file_size > MAX_ENTRY_BYTES:
            raise TooLargeInputError(
                f"the OFD package's {path} is {info.file_size:,} bytes inflated, over the limit "
                f"of {MAX_ENTRY_BYTES:,}"
            )
        try:
            return self.zip.read(name)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
            # RuntimeError: an encrypted entry, or (NotImplementedError) an unknown method
            raise CorruptInputError(f"the OFD package's {path} cannot be read: {exc}") from exc

    def xml(self, path: str) -> ElementTree.Element:
        try:
            return ElementTree.fromstring(self.read(path))
        except ElementTree.ParseError as exc:
            raise CorruptInputError(f"the OFD package's {path} is not XML: {exc}") from exc


class _Document:
    """A document's pages, template pages and resources (their entries' paths)."""

    def __init__(self, package: _Package, path: str) -> None:
        self.package = package
        xml = package.xml(path)
        here = _dir(path)
        common = _first(xml, "CommonData")
        self.page_box = _box(_first(common, "PageArea/PhysicalBox")) or (0.0, 0.0, 210.0, 297.0)
        self.templates = {
            t.get("ID", ""): _resolve(here, t.get("BaseLoc", ""))
            for t in _children(common, "TemplatePage")
        }
        self.pages = [
            _resolve(here, p.get("BaseLoc", "")) for p in _children(_first(xml, "Pages"), "Page")
        ]
        self.media: dict[str, str] = {}
        for tag in ("PublicRes", "DocumentRes"):
            for res in _children(common, tag):
                self._resources(_resolve(here, (res.text or "").strip()))

    def _resources(self, path: str) -> None:
        try:
            res = self.package.xml(path)
        except CorruptInputError:
            return  # a missing resource file: its images are not drawn
        base = _resolve(_dir(path), res.get("BaseLoc", ""))
        for media in res.iter():
            if _local(media.tag) == "MultiMedia":
                file = _first(media, "MediaFile")
                if file is not None and file.text:
                    self.media[media.get("ID", "")] = _resolve(base, file.text.strip())


@dataclass
class _Painter:
    """Draws a page's (or a template page's) objects onto a PDF page."""

    page: pymupdf.Page
    document: _Document
    origin: tuple[float, float]  # the physical box's corner, mm
    text: pymupdf.Shape | None = None
    """The content's text, committed in one go (a commit per character cost ~2 ms)."""

    def content(self, xml: ElementTree.Element) -> None:
        """The objects of a page's or a template page's ``Content``, text over the rest."""
        self.text = self.page.new_shape()
        for element in _objects(_first(xml, "Content")):
            kind = _local(element.tag)
            try:
                if kind == "TextObject":
                    self._text(element)
                elif kind == "PathObject":
                    self._path(element)
                elif kind == "ImageObject":
                    self._image(element)
            except (ValueError, RuntimeError, CorruptInputError):
                continue  # an object that cannot be drawn is left out
        self.text.commit()

    def _frame(self, element: ElementTree.Element) -> Matrix:
        """Object space -> page mm: the object's CTM, then its boundary's corner."""
        x, y, _, _ = _box(element.get("Boundary")) or (0.0, 0.0, 0.0, 0.0)
        ctm = _matrix(element.get("CTM"))
        return _then(ctm, (1.0, 0.0, 0.0, 1.0, x - self.origin[0], y - self.origin[1]))

    def _text(self, element: ElementTree.Element) -> None:
        frame = self._frame(element)
        size = float(element.get("Size", "3.5")) * _scale(frame)
        color = _color(_first(element, "FillColor"), (0, 0, 0))
        for code in _children(element, "TextCode"):
            text = code.text or ""
            x, y = float(code.get("X", "0")), float(code.get("Y", "0"))
            dx, dy = _deltas(code.get("DeltaX")), _deltas(code.get("DeltaY"))
            for i, char in enumerate(text):
                if not char.isspace():
                    px, py = _apply(frame, x, y)
                    self.text.insert_text(  # type: ignore[union-attr]
                        (px * PT_PER_MM, py * PT_PER_MM),
                        char,
                        fontname=LATIN_FONT if char.isascii() else CJK_FONT,
                        fontsize=size * PT_PER_MM,
                        color=color,
                    )
                x += dx[i] if i < len(dx) else size * (0.5 if char.isascii() else 1.0)
                y += dy[i] if i < len(dy) else 0.0

    def _path(self, element: ElementTree.Element) -> None:
        data = _first(element, "AbbreviatedData")
        if data is None or not data.text:
            return
        frame = self._frame(element)
        shape = self.page.new_shape()
        for start, points in _segments(data.text):
            mm = [_apply(frame, px, py) for px, py in [start, *points]]
            for a, b in itertools.pairwise((x * PT_PER_MM, y * PT_PER_MM) for x, y in mm):
                shape.draw_line(a, b)
        stroke = element.get("Stroke", "true") != "false"
        fill = element.get("Fill", "false") == "true"
        width = float(element.get("LineWidth", "0.353")) * _scale(frame) * PT_PER_MM
        shape.finish(
            color=_color(_first(element, "StrokeColor"), (0, 0, 0)) if stroke else None,
            fill=_color(_first(element, "FillColor"), (0, 0, 0)) if fill else None,
            width=width,
            closePath=False,
        )
        shape.commit()

    def _image(self, element: ElementTree.Element) -> None:
        path = self.document.media.get(element.get("ResourceID", ""))
        if path is None:
            return
        frame = self._frame(element)
        corners = [_apply(frame, u, v) for u, v in ((0, 0), (1, 0), (0, 1), (1, 1))]
        xs, ys = [c[0] * PT_PER_MM for c in corners], [c[1] * PT_PER_MM for c in corners]
        import pymupdf

        rect = pymupdf.Rect(min(xs), min(ys), max(xs), max(ys))
        self.page.insert_image(rect, stream=self.document.package.read(path), keep_proportion=False)


def _segments(data: str) -> Iterator[tuple[tuple[float, float], list[tuple[float, float]]]]:
    """The path's subpaths as polylines (object space): each from its start through its points.
    Curves are drawn as straight lines to their ends (the form's rules are straight)."""
    tokens = data.split()
    counts = {"S": 2, "M": 2, "L": 2, "Q": 4, "B": 6, "A": 7, "C": 0}
    start: tuple[float, float] | None = None
    points: list[tuple[float, float]] = []
    first: tuple[float, float] | None = None
    i = 0
    while i < len(tokens):
        op = tokens[i]
        n = counts.get(op)
        if n is None:
            i += 1
            continue
        args = [float(t) for t in tokens[i + 1 : i + 1 + n]]
        i += 1 + n
        if op in ("S", "M"):
            if start is not None and points:
                yield start, points
            start, first, points = (args[0], args[1]), (args[0], args[1]), []
        elif op == "C":
            if start is not None and first is not None:
                points.append(first)
        elif start is not None and len(args) >= 2:
            points.append((args[-2], args[-1]))
    if start is not None and points:
        yield start, points


def _deltas(value: str | None) -> list[float]:
    """``DeltaX``/``DeltaY``: numbers, where ``g N d`` stands for N times d."""
    if not value:
        return []
    tokens, out, i = value.split(), [], 0
    while i < len(tokens):
        if tokens[i] == "g" and i + 2 < len(tokens):
            out += [float(tokens[i + 2])] * int(float(tokens[i + 1]))
            i += 3
        else:
            out.append(float(tokens[i]))
            i += 1
    return out


def _objects(parent: ElementTree.Element | None) -> Iterator[ElementTree.Element]:
    """The drawable objects under ``parent`` (layers and page blocks opened, however deeply
    nested), in order."""
    stack = [iter(parent)] if parent is not None else []
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif _local(child.tag) in ("Layer", "PageBlock"):
            stack.append(iter(child))
        else:
            yield child


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(parent: ElementTree.Element | None, name: str) -> list[ElementTree.Element]:
    return [] if parent is None else [c for c in parent if _local(c.tag) == name]


def _first(parent: ElementTree.Element | None, path: str) -> ElementTree.Element | None:
    """The first element along ``path`` (local names, ``/`` between them)."""
    node = parent
    for name in path.split("/"):
        found = _children(node, name)
        if not found:
            return None
        node = found[0]
    return node


def _box(value: ElementTree.Element | str | None) -> tuple[float, float, float, float] | None:
    text = value.text if isinstance(value, ElementTree.Element) else value
    numbers = [float(n) for n in _NUMBER.findall(text or "")]
    return (numbers[0], numbers[1], numbers[2], numbers[3]) if len(numbers) == 4 else None


def _matrix(value: str | None) -> Matrix:
    numbers = [float(n) for n in _NUMBER.findall(value or "")]
    return (
        (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
        if len(numbers) == 6
        else IDENTITY
    )


def _then(first: Matrix, second: Matrix) -> Matrix:
    """``first`` applied, then ``second``."""
    a, b, c, d, e, f = first
    p, q, r, s, t, u = second
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t,
            e * q + f * s + u)  # fmt: skip


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]


def _scale(m: Matrix) -> float:
    return math.sqrt(abs(m[0] * m[3] - m[1] * m[2])) or 1.0


def _color(element: ElementTree.Element | None, default: tuple[int, int, int]) -> tuple[float, ...]:
    numbers = [
        float(n) for n in _NUMBER.findall(element.get("Value", "") if element is not None else "")
    ]
    rgb = numbers[:3] if len(numbers) >= 3 else list(default)
    return tuple(min(max(v / 255, 0.0), 1.0) for v in rgb)


def _dir(path: str) -> str:
    return posixpath.dirname(path.lstrip("/"))


def _resolve(here: str, location: str) -> str:
    """``location`` (a BaseLoc: relative to ``here``, or from the package's root if it starts
    with ``/``) as a path in the package."""
    if location.startswith("/"):
        return posixpath.normpath(location.lstrip("/"))
    return posixpath.normpath(posixpath.join(here, location)) if location else here
