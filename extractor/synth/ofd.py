"""A born-digital PDF written again as an OFD package (GB/T 33190-2016), as the tax platform
issues a 数电票 in both formats: the form's ruling and labels on a template page, the data as
text objects on the page itself, each character placed by ``DeltaX`` (runs of equal steps
written ``g N d``), the QR code's modules as filled paths, the supervision seal as a PNG image
resource. ``ctm``: each text object's size given halved and its ``CTM`` scaling it back by 2,
as some issuers write text.

Used to make OFD fixtures and tests (:mod:`extractor.ofd` reads them); not a general PDF to OFD
converter.
"""

from __future__ import annotations

import io
import itertools
import zipfile
from collections.abc import Iterator
from xml.sax.saxutils import escape, quoteattr

import pymupdf

MM_PER_PT = 25.4 / 72
NS = 'xmlns:ofd="http://www.ofdspec.org/2016"'
DATA_COLOR = 0  # sRGB int of the data's black text; any other colour is the form's
FONT_ID = 0  # the one font every text object names


def ofd_from_pdf(pdf: bytes, *, ctm: bool = False) -> bytes:
    """The PDF ``pdf`` as an OFD package, page for page."""
    files: dict[str, bytes] = {}
    ids = iter(range(1, 1_000_000))
    media: list[str] = []
    pages, templates = [], []
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        width, height = doc[0].rect.width * MM_PER_PT, doc[0].rect.height * MM_PER_PT
        for n, page in enumerate(doc):
            form, data = _paths(page, ids), []
            for span in _spans(page):
                text = _text_object(span, next(ids), ctm)
                (data if span["color"] == DATA_COLOR else form).append(text)
            for xref, smask, rect in _images(page):
                media_id = next(ids)
                name = f"image_{len(media)}.png"
                files[f"Doc_0/Res/{name}"] = _png(doc, xref, smask)
                media.append(
                    f'<ofd:MultiMedia ID="{media_id}" Type="Image" Format="PNG">'
                    f"<ofd:MediaFile>{name}</ofd:MediaFile></ofd:MultiMedia>"
                )
                form.append(
                    f'<ofd:ImageObject ID="{next(ids)}" ResourceID="{media_id}" '
                    f'Boundary="{_box(rect)}" CTM="{_n(rect.width * MM_PER_PT)} 0 0 '
                    f'{_n(rect.height * MM_PER_PT)} 0 0"/>'
                )
            template_id = next(ids)
            templates.append(
                f'<ofd:TemplatePage ID="{template_id}" BaseLoc="Tpls/Tpl_{n}/Content.xml"/>'
            )
            files[f"Doc_0/Tpls/Tpl_{n}/Content.xml"] = _page_xml("", form, next(ids))
            template = f'<ofd:Template TemplateID="{template_id}" ZOrder="Background"/>'
            files[f"Doc_0/Pages/Page_{n}/Content.xml"] = _page_xml(template, data, next(ids))
            pages.append(f'<ofd:Page ID="{next(ids)}" BaseLoc="Pages/Page_{n}/Content.xml"/>')
    files["OFD.xml"] = _xml(
        f'<ofd:OFD {NS} Version="1.0" DocType="OFD"><ofd:DocBody><ofd:DocInfo>'
        "<ofd:DocID>roi-synth</ofd:DocID><ofd:Creator>roi</ofd:Creator></ofd:DocInfo>"
        "<ofd:DocRoot>Doc_0/Document.xml</ofd:DocRoot></ofd:DocBody></ofd:OFD>"
    )
    files["Doc_0/PublicRes.xml"] = _xml(
        f'<ofd:Res {NS} BaseLoc="Res"><ofd:Fonts><ofd:Font ID="{FONT_ID}" FontName="宋体" '
        'FamilyName="宋体"/></ofd:Fonts></ofd:Res>'
    )
    files["Doc_0/DocumentRes.xml"] = _xml(
        f'<ofd:Res {NS} BaseLoc="Res"><ofd:MultiMedias>{"".join(media)}</ofd:MultiMedias></ofd:Res>'
    )
    files["Doc_0/Document.xml"] = _xml(
        f"<ofd:Document {NS}><ofd:CommonData><ofd:MaxUnitID>{next(ids)}</ofd:MaxUnitID>"
        f"<ofd:PageArea><ofd:PhysicalBox>0 0 {_n(width)} {_n(height)}</ofd:PhysicalBox>"
        "</ofd:PageArea><ofd:PublicRes>PublicRes.xml</ofd:PublicRes>"
        f"<ofd:DocumentRes>DocumentRes.xml</ofd:DocumentRes>{''.join(templates)}"
        f"</ofd:CommonData><ofd:Pages>{''.join(pages)}</ofd:Pages></ofd:Document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        for name, content in files.items():  # dated alike: the same package on every run
            entry = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            package.writestr(entry, content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _spans(page: pymupdf.Page) -> list[dict]:
    blocks = page.get_text("rawdict")["blocks"]
    return [s for b in blocks if b["type"] == 0 for line in b["lines"] for s in line["spans"]]


def _text_object(span: dict, object_id: int, ctm: bool) -> str:
    chars = list(span["chars"])
    x0, y0 = span["bbox"][0], span["bbox"][1]
    first = chars[0]["origin"]
    steps = [(b["origin"][0] - a["origin"][0]) * MM_PER_PT for a, b in itertools.pairwise(chars)]
    scale = 2.0 if ctm else 1.0
    size = span["size"] * MM_PER_PT / scale
    x, y = (first[0] - x0) * MM_PER_PT / scale, (first[1] - y0) * MM_PER_PT / scale
    delta = _deltas([s / scale for s in steps])
    r, g, b = (span["color"] >> 16) & 255, (span["color"] >> 8) & 255, span["color"] & 255
    text = "".join(c["c"] for c in chars)
    return (
        f'<ofd:TextObject ID="{object_id}" Boundary="{_box(pymupdf.Rect(span["bbox"]))}" '
        f'Font="{FONT_ID}" Size="{_n(size)}"'
        + (f' CTM="{_n(scale)} 0 0 {_n(scale)} 0 0"' if ctm else "")
        + f'><ofd:FillColor Value="{r} {g} {b}"/><ofd:TextCode X="{_n(x)}" Y="{_n(y)}"'
        + (f" DeltaX={quoteattr(delta)}" if delta else "")
        + f">{escape(text)}</ofd:TextCode></ofd:TextObject>"
    )


def _deltas(steps: list[float]) -> str:
    """Steps as ``DeltaX`` writes them: a run of three or more equal ones as ``g N d``."""
    out, i = [], 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and _n(steps[j + 1]) == _n(steps[i]):
            j += 1
        run = j - i + 1
        out.append(f"g {run} {_n(steps[i])}" if run >= 3 else " ".join([_n(steps[i])] * run))
        i = j + 1
    return " ".join(out)


def _paths(page: pymupdf.Page, ids: Iterator[int]) -> list[str]:
    """The page's drawings as path objects (page mm, boundary the whole page)."""
    out = []
    box = f"0 0 {_n(page.rect.width * MM_PER_PT)} {_n(page.rect.height * MM_PER_PT)}"
    for drawing in page.get_drawings():
        commands = []
        for item in drawing["items"]:
            if item[0] == "l":
                commands += ["M", *_pt(item[1]), "L", *_pt(item[2])]
            elif item[0] == "re":
                r = item[1]
                corners = [(r.x0, r.y0), (r.x1, r.y0), (r.x1, r.y1), (r.x0, r.y1)]
                commands += ["M", *_pt(corners[0])]
                for corner in corners[1:]:
                    commands += ["L", *_pt(corner)]
                commands.append("C")
            elif item[0] == "c":
                commands += ["M", *_pt(item[1]), "B", *_pt(item[2]), *_pt(item[3]), *_pt(item[4])]
        if not commands:
            continue
        kind = drawing.get("type") or "s"
        stroke = drawing.get("color") if "s" in kind else None
        fill = drawing.get("fill") if "f" in kind else None
        width = (drawing.get("width") or 0.0) * MM_PER_PT
        out.append(
            f'<ofd:PathObject ID="{next(ids)}" Boundary="{box}" LineWidth="{_n(width)}" '
            f'Stroke="{"true" if stroke else "false"}" Fill="{"true" if fill else "false"}">'
            + (f'<ofd:StrokeColor Value="{_rgb(stroke)}"/>' if stroke else "")
            + (f'<ofd:FillColor Value="{_rgb(fill)}"/>' if fill else "")
            + f"<ofd:AbbreviatedData>{' '.join(commands)}</ofd:AbbreviatedData></ofd:PathObject>"
        )
    return out


def _images(page: pymupdf.Page) -> list[tuple[int, int, pymupdf.Rect]]:
    """Each image placed on ``page``: its xref, its soft mask's (0: none) and where it lies."""
    return [
        (image[0], image[1], rect)
        for image in page.get_images(full=True)
        for rect in page.get_image_rects(image[0])
    ]


def _png(doc: pymupdf.Document, xref: int, smask: int) -> bytes:
    """The image ``xref`` as PNG, its soft mask ``smask`` as its alpha."""
    pix = pymupdf.Pixmap(doc, xref)
    if smask:
        pix = pymupdf.Pixmap(pix, pymupdf.Pixmap(doc, smask))
    return pix.tobytes("png")


def _page_xml(template: str, objects: list[str], layer_id: int) -> bytes:
    return _xml(
        f"<ofd:Page {NS}>{template}<ofd:Content>"
        f'<ofd:Layer ID="{layer_id}" Type="Body">{"".join(objects)}</ofd:Layer>'
        "</ofd:Content></ofd:Page>"
    )


def _xml(body: str) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>' + body).encode("utf-8")


def _box(rect: pymupdf.Rect) -> str:
    return " ".join(_n(v * MM_PER_PT) for v in (rect.x0, rect.y0, rect.width, rect.height))


def _pt(point: object) -> list[str]:
    x, y = point  # type: ignore[misc]
    return [_n(x * MM_PER_PT), _n(y * MM_PER_PT)]


def _rgb(color: tuple[float, ...]) -> str:
    return " ".join(str(round(v * 255)) for v in color[:3])


def _n(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"
