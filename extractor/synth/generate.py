"""Documents with ground truth: single-page JPEGs, multi-page PDFs and TIFFs, the fixture set.

``generate_invoice(seed, level)`` is deterministic: the invoice's content depends on ``seed``
alone, its print (data offset, seals) on ``seed`` and the level's offset range, its scan on
``seed`` and ``level``.
"""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
import pymupdf
from PIL import Image

from extractor.synth import names
from extractor.synth.content import (
    Party,
    as_electronic,
    as_red_letter,
    as_special,
    as_tax_exempt,
    make_invoice,
    party,
)
from extractor.synth.degrade import LEVELS, MIXED_LEVELS, Scan, degrade
from extractor.synth.pages import cover_letter, delivery_note, goods_list
from extractor.synth.readme import README, digital_section, level_table
from extractor.synth.render import Pins, RenderedPage, render_invoice
from extractor.synth.sheet import degrade_on

TEMPLATE = "vat_invoice"
CLEAN_DPI = 200
DPI_CHOICES = (150, 150, 180, 200, 200, 240, 300)  # light/medium/heavy scans
# Largest data-layer offset from the form, +-(x, y) mm, by level.
DATA_OFFSET_MM = {
    "clean": (3.0, 1.2),
    "light": (3.0, 1.2),
    "medium": (4.0, 1.8),
    "heavy": (5.0, 2.2),
}
DATA_OFFSET_MM |= {mixed: DATA_OFFSET_MM[draws] for mixed, (draws, _) in MIXED_LEVELS.items()}
DEFAULT_COUNTS = {"clean": 14, "light": 12, "medium": 10, "heavy": 8, "multipage": 3, "geometry": 8}
# Files are numbered across the set in this order; a level added later goes last, so that no
# document already committed changes its number (and seed).
NUMBERING_ORDER = ("clean", "light", "medium", "heavy", "multipage", "geometry")
MULTIPAGE_KINDS = ("pdf_invoice_and_note", "pdf_letter_and_invoices", "tiff_two_invoices")
DIGITAL_FOLDER = "digital"  # the 数电票 set (template vat_invoice_digital)
DIGITAL_PREFIX = "digital_"  # counts keys of the 数电票 set: digital_pdf, digital_clean, ...
MM_PER_PT = 25.4 / 72


@dataclass
class Document:
    """One generated page: the scan (image and JPEG bytes) and its ground truth."""

    image: np.ndarray
    jpeg: bytes
    truth: dict[str, object]
    dpi: float


def _check_template(template: str) -> None:
    if template != TEMPLATE:
        raise ValueError(f"the generator draws the {TEMPLATE!r} form only, not {template!r}")


def dpi_for(seed: int, level: str) -> int:
    return (
        CLEAN_DPI if level == "clean" else random.Random(f"dpi:{seed}:{level}").choice(DPI_CHOICES)
    )


def _degradations(scan: Scan, dpi: float, page: RenderedPage) -> dict[str, object]:
    out: dict[str, object] = {"dpi": dpi}
    if "data_offset_mm" in page.info:
        out["data_offset_mm"] = page.info["data_offset_mm"]
    out.update(scan.params)
    h, w = scan.image.shape[:2]
    out["image_size_px"] = [w, h]
    out["page_to_image"] = [[round(float(v), 6) for v in row] for row in scan.page_to_image]
    return out


def make_document(
    seed: int,
    level: str,
    template: str = TEMPLATE,
    dpi: float | None = None,
    parties: tuple[Party, Party] | None = None,
    red_letter: bool = False,
    tax_exempt: bool = False,
    form_ink: str = "brown",
    pins: Pins | None = None,
    electronic: bool = False,
    a4: bool = False,
    data_ink: tuple[int, int, int] | None = None,
    special: bool = False,
) -> Document:
    """An invoice page scanned at ``level``; ``dpi`` overrides the seed's choice. A mixed level
    (``geometry``) draws everything as the level it mixes (``heavy``): same print, same geometry.
    ``parties``: the buyer and the seller, instead of the seed's. ``red_letter``: the red-letter
    invoice that cancels the seed's (:func:`~extractor.synth.content.as_red_letter`).
    ``tax_exempt``: the seed's sale exempt from tax (:func:`~.content.as_tax_exempt`).
    ``form_ink``: the form's colour (:data:`~extractor.synth.form.FORM_INKS`). ``pins``: the
    data printed dot by dot by that dot-matrix head (:class:`~extractor.synth.render.Pins`).
    ``electronic``: the seed's invoice as a 增值税电子普通发票 (its PDF's image, printed or shown,
    at ``level``: :func:`~extractor.synth.content.as_electronic`); ``a4``: that PDF printed at
    the top of an A4 sheet, the sheet scanned or photographed whole
    (:func:`~extractor.synth.sheet.on_a4`). ``data_ink``: the data printed in that ink (BGR)
    by a dot-matrix head, as the copies of a multi-part form show it (blue, violet).
    ``special``: the seed's invoice as a 增值税专用发票 on the paper form (a 10-digit code, no
    check code: :func:`~extractor.synth.content.as_special`)."""
    _check_template(template)
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (one of {', '.join(LEVELS)})")
    if a4 and not electronic:
        raise ValueError("a4 needs electronic: the paper form is printed on its own paper")
    if special and electronic:
        raise ValueError("special is the paper 专票: the electronic form is the 普票's")
    draws, _ = MIXED_LEVELS.get(level, (level, level))
    dpi = dpi if dpi is not None else dpi_for(seed, draws)
    inv = make_invoice(random.Random(seed))
    if parties is not None:
        inv = replace(inv, buyer=parties[0], seller=parties[1])
    if electronic:
        inv = as_electronic(inv)
    if special:
        inv = as_special(inv)
    if tax_exempt:
        inv = as_tax_exempt(inv)
    if red_letter:
        inv = as_red_letter(inv)
    page = render_invoice(
        inv,
        dpi,
        random.Random(f"render:{seed}"),
        offset_mm=DATA_OFFSET_MM[level],
        form_ink=form_ink,
        pins=pins,
        electronic=electronic,
        data_ink=data_ink,
    )
    scan = degrade_on(page, level, random.Random(f"scan:{seed}:{draws}"), a4)
    truth: dict[str, object] = {
        "template": template,
        "seed": seed,
        "level": level,
        "degradations": _degradations(scan, dpi, page),
        "pages": [
            {
                "page": 0,
                "template": template,
                "fields": inv.fields(),
                "print": page.info,
                "extra": inv.extra(),
            }
        ],
    }
    return Document(scan.image, scan.jpeg, truth, dpi)


def generate_invoice(
    seed: int, level: str, template: str = TEMPLATE
) -> tuple[np.ndarray, dict[str, object]]:
    """A scanned invoice (BGR uint8) and its ground truth (the JSON written beside it, less "file").

    ``level`` is one of clean, light, medium, heavy. Same arguments, same pixels.
    """
    doc = make_document(seed, level, template)
    return doc.image, doc.truth


# -- multi-page documents ----------------------------------------------------------------------


def make_other_page(kind: str, seed: int, level: str) -> Document:
    """A page that travels with invoices but is none (``delivery_note``, ``cover_letter``,
    ``goods_list``: :mod:`extractor.synth.pages`), scanned at ``level``; its truth names no
    template."""
    makers: dict[str, Callable[[int, float], tuple[RenderedPage, dict[str, object]]]] = {
        "delivery_note": delivery_note,
        "cover_letter": cover_letter,
        "goods_list": goods_list,
    }
    make = makers[kind]
    dpi = 150
    page, info = make(seed, dpi)
    scan = degrade(page, level, random.Random(f"scan:{seed}:{level}:{kind}"))
    truth = {
        "template": None,
        "fields": {},
        "seed": seed,
        "level": level,
        "kind": kind,
        "degradations": _degradations(scan, dpi, page),
        "content": info,
    }
    return Document(scan.image, scan.jpeg, truth, dpi)


def _page_entry(index: int, doc: Document) -> dict[str, object]:
    truth = doc.truth
    if "pages" in truth:  # an invoice
        page = dict(truth["pages"][0])  # type: ignore[index]
        page.update(
            {
                "page": index,
                "seed": truth["seed"],
                "level": truth["level"],
                "degradations": truth["degradations"],
            }
        )
        return page
    return {"page": index, **truth}


def multipage_documents(kind: str, seed: int) -> list[Document]:
    """The pages of one multi-page fixture; page i's seed is ``seed * 10 + i``."""
    s = [seed * 10 + i for i in range(3)]
    if kind == "pdf_invoice_and_note":
        return [
            make_document(s[0], "light", dpi=180),
            make_other_page("delivery_note", s[1], "light"),
        ]
    if kind == "pdf_letter_and_invoices":
        return [
            make_other_page("cover_letter", s[0], "light"),
            make_document(s[1], "clean"),
            make_document(s[2], "light", dpi=180),
        ]
    if kind == "tiff_two_invoices":
        return [make_document(s[0], "light", dpi=200), make_document(s[1], "light", dpi=200)]
    raise ValueError(f"unknown multi-page kind {kind!r} (one of {', '.join(MULTIPAGE_KINDS)})")


def write_pdf(docs: list[Document], path: Path) -> None:
    """One page per document, each its JPEG at the size it was scanned (mm from dpi)."""
    pdf = pymupdf.open()
    for doc in docs:
        h, w = doc.image.shape[:2]
        page = pdf.new_page(width=w / doc.dpi * 72, height=h / doc.dpi * 72)
        page.insert_image(page.rect, stream=doc.jpeg)
    pdf.set_metadata({"title": path.stem, "producer": "roi synth", "creator": "roi synth"})
    pdf.save(path, garbage=4, deflate=True, no_new_id=True)
    pdf.close()


def write_tiff(docs: list[Document], path: Path, quality: int = 80) -> None:
    """A multi-page greyscale TIFF, JPEG-compressed, with the pages' dpi."""
    images = [Image.fromarray(cv2.cvtColor(d.image, cv2.COLOR_BGR2GRAY)) for d in docs]
    buf = io.BytesIO()
    images[0].save(
        buf,
        format="TIFF",
        save_all=True,
        append_images=images[1:],
        compression="jpeg",
        quality=quality,
        dpi=(docs[0].dpi, docs[0].dpi),
    )
    path.write_bytes(buf.getvalue())


def write_multipage(kind: str, seed: int, path: Path) -> dict[str, object]:
    docs = multipage_documents(kind, seed)
    if path.suffix == ".pdf":
        write_pdf(docs, path)
    else:
        write_tiff(docs, path)
    return {
        "file": path.name,
        "template": TEMPLATE,
        "seed": seed,
        "level": "multipage",
        "kind": kind,
        "degradations": {},
        "pages": [_page_entry(i, d) for i, d in enumerate(docs)],
    }


# -- the fixture set ------------------------------------------------------------------------------


_FLAT_LIST = re.compile(r"\[\n\s+([^\[\]{}]*?)\n\s*\]")


def truth_json(truth: dict[str, object]) -> str:
    """Indented JSON with lists of plain values kept on one line."""
    text = json.dumps(truth, ensure_ascii=False, indent=2)
    return _FLAT_LIST.sub(lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text) + "\n"


def _write_json(path: Path, truth: dict[str, object]) -> None:
    path.write_text(truth_json(truth), encoding="utf-8")


def document_seed(base_seed: int, number: int) -> int:
    return base_seed * 10000 + number


def write_received_set(
    out_dir: Path, seed: int, counts: dict[str, int], suppliers: int = 8
) -> list[Path]:
    """The invoices one company received, as a nightly batch sees them: the same buyer on
    every page, the seller one of ``suppliers`` (the first ones most often, as a few suppliers
    bill most), ``counts[level]`` pages at each level, ``<level>/received_NNNN.jpg`` + ``.json``
    numbered across the set (seeds as :func:`write_fixture_set`'s). Returns the paths written."""
    rng = random.Random(f"received:{seed}")
    region = rng.choice(names.REGIONS)
    buyer = party(rng, region)
    pool = [party(rng, rng.choice(names.REGIONS)) for _ in range(suppliers)]
    weights = [1 / (rank + 1) for rank in range(suppliers)]
    written: list[Path] = []
    number = 0
    for level, count in counts.items():
        for _ in range(count):
            number += 1
            (seller,) = rng.choices(pool, weights)
            doc = make_document(document_seed(seed, number), level, parties=(buyer, seller))
            path = Path(out_dir) / level / f"received_{number:04d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(doc.jpeg)
            _write_json(path.with_suffix(".json"), {"file": path.name, **doc.truth})
            written += [path, path.with_suffix(".json")]
    return written


def digital_counts(counts: dict[str, int] | None) -> dict[str, int]:
    """The 数电票 set's counts: its defaults when ``counts`` is None, else the ``digital_*``
    keys of ``counts`` over the defaults, or nothing when it names none."""
    from extractor.synth.digital import DEFAULT_DIGITAL_COUNTS

    if counts is None:
        return dict(DEFAULT_DIGITAL_COUNTS)
    named = {
        k.removeprefix(DIGITAL_PREFIX): v for k, v in counts.items() if k.startswith(DIGITAL_PREFIX)
    }
    return {**DEFAULT_DIGITAL_COUNTS, **named} if named else {}


def write_fixture_set(
    out_dir: Path, seed: int = 2026, counts: dict[str, int] | None = None
) -> list[Path]:
    """Write the fixture set under ``out_dir``; returns the paths written (documents and truths).

    Folders ``clean/ light/ medium/ heavy/ geometry/`` hold ``vat_invoice_NNNN.jpg`` + ``.json``;
    ``multipage/`` holds PDFs and a TIFF. Files are numbered across the set; document number
    ``n`` has seed ``seed * 10000 + n``. ``digital/`` holds the 数电票 set (template
    ``vat_invoice_digital``, :func:`extractor.synth.digital.write_digital_set`), written with the
    default counts or when ``counts`` names a ``digital_*`` key (``digital_pdf=3, digital_clean=2,
    ...``). Also writes ``out_dir/README.md``.
    The CLI wires ``roi synth`` to this: ``write_fixture_set(Path(out), seed=seed)``.
    """
    digital = digital_counts(counts)
    counts = {**DEFAULT_COUNTS, **(counts or {})}
    out_dir = Path(out_dir)
    written: list[Path] = []
    number = 0
    for folder_name in NUMBERING_ORDER:
        folder = out_dir / folder_name
        for i in range(counts.get(folder_name, 0)):
            number += 1
            folder.mkdir(parents=True, exist_ok=True)
            doc_seed = document_seed(seed, number)
            if folder_name == "multipage":
                kind = MULTIPAGE_KINDS[i % len(MULTIPAGE_KINDS)]
                suffix = ".tif" if kind.startswith("tiff") else ".pdf"
                path = folder / f"{TEMPLATE}_{number:04d}{suffix}"
                truth = write_multipage(kind, doc_seed, path)
            else:
                doc = make_document(doc_seed, folder_name)
                path = folder / f"{TEMPLATE}_{number:04d}.jpg"
                path.write_bytes(doc.jpeg)
                truth = {"file": path.name, **doc.truth}
            _write_json(path.with_suffix(".json"), truth)
            written += [path, path.with_suffix(".json")]
    if digital:
        from extractor.synth.digital import write_digital_set

        written += write_digital_set(out_dir / DIGITAL_FOLDER, seed=seed, counts=digital)
    readme = out_dir / "README.md"
    readme.write_text(fixture_readme(seed, counts, digital), encoding="utf-8")
    written.append(readme)
    return written


def fixture_readme(seed: int, counts: dict[str, int], digital: dict[str, int] | None = None) -> str:
    text = README.format(seed=seed, table=level_table(counts, DATA_OFFSET_MM))
    return text + digital_section(seed, digital) if digital else text
