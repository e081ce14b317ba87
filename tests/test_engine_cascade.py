"""The CPU cascade (PP-OCRv6 tiny, then small where tiny is unsure) on real fixture crops."""

import json
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.crops import crop_fields
from extractor.engines import Recognition, Recognizer
from extractor.engines.cascade import MIN_CHAR_CONFIDENCE, CascadeRecognizer, ppocr_engine
from extractor.engines.ppocr import PPOCRRecognizer
from extractor.fields import check_value, resolve_allowlist, value_start
from extractor.registration import register
from extractor.templates import TemplateStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


class Counting:
    """A real engine, with a count of the crops it was given (``free``: those without an
    allowlist, the names)."""

    def __init__(self, engine: Recognizer) -> None:
        self.engine, self.name, self.seen, self.free = engine, engine.name, 0, 0
        self.characters = getattr(engine, "characters", None)

    def recognize(
        self, crops: Sequence[np.ndarray], allowlists: Sequence[str | None]
    ) -> list[Recognition]:
        self.seen += len(crops)
        self.free += sum(allowed is None for allowed in allowlists)
        return self.engine.recognize(crops, allowlists)


@pytest.fixture(scope="module")
def small() -> PPOCRRecognizer:
    return PPOCRRecognizer(threads=1)


@pytest.fixture(scope="module")
def tiny() -> PPOCRRecognizer:
    # as the shipped cascade builds it: tiny on ONNX Runtime whatever runs small
    return PPOCRRecognizer(model="PP-OCRv6-tiny", threads=1, cpu_runtime="onnxruntime")


def page_crops(name: str) -> tuple[list[np.ndarray], list[str | None], list[str], dict]:
    template = TemplateStore().get("vat_invoice")
    path = FIXTURES / name
    image = cv2.imread(str(path))
    crops = crop_fields(image, register(image, template).homography, template)
    truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return (
        [c.image for c in crops],
        [resolve_allowlist(c.spec.allowlist, c.spec.kind) for c in crops],
        [c.field for c in crops],
        truth["pages"][0]["fields"],
    )


@pytest.mark.parametrize("name", ["clean/vat_invoice_0001.jpg", "medium/vat_invoice_0029.jpg"])
def test_cascade_reads_every_field_right_and_spares_the_small_model(
    small: PPOCRRecognizer, tiny: PPOCRRecognizer, name: str
) -> None:
    images, allowlists, fields, expected = page_crops(name)
    fast, full = Counting(tiny), Counting(small)
    reads = CascadeRecognizer(fast, full).recognize(images, allowlists)
    template = TemplateStore().get("vat_invoice")
    specs = {spec.name: spec for spec in template.fields}
    for field, read in zip(fields, reads, strict=True):
        assert check_value(specs[field], read.text).value == expected[field], field
    narrow = sum(a is not None for a in allowlists)
    # tiny saw exactly the allowlisted crops; small saw the names and only some of the rest
    assert fast.seen == narrow
    assert len(images) - narrow <= full.seen < len(images)


def test_names_skip_the_tiny_model(small: PPOCRRecognizer, tiny: PPOCRRecognizer) -> None:
    images, _, fields, _ = page_crops("clean/vat_invoice_0001.jpg")
    name = images[fields.index("buyer_name")]
    fast, full = Counting(tiny), Counting(small)
    (read,) = CascadeRecognizer(fast, full).recognize([name], [None])
    assert (fast.seen, full.seen) == (0, 1)
    assert read == small.recognize([name], [None])[0]


def test_a_doubtful_currency_sign_alone_is_not_read_again(
    small: PPOCRRecognizer, tiny: PPOCRRecognizer
) -> None:
    """Tiny is seldom sure of the ¥ before an amount, which normalisation drops anyway: an amount
    whose digits it is sure of is kept, not read again by the small model."""
    images, allowlists, fields, expected = page_crops("clean/vat_invoice_0001.jpg")
    i = fields.index("amount")
    (first,) = tiny.recognize([images[i]], [allowlists[i]])
    assert first.text.startswith("¥")
    assert first.char_confidences[0] < MIN_CHAR_CONFIDENCE <= min(first.char_confidences[1:])
    fast, full = Counting(tiny), Counting(small)
    (read,) = CascadeRecognizer(fast, full).recognize([images[i]], [allowlists[i]])
    assert (fast.seen, full.seen) == (1, 0)
    assert read.text == first.text and read.text[1:] == expected["amount"]


def test_unsure_tiny_reads_are_read_again(small: PPOCRRecognizer, tiny: PPOCRRecognizer) -> None:
    """On a blurred phone photo some tiny reads are unsure: exactly those (and the names) go to
    the small model, and its reads are what the cascade returns for them. A doubtful leading ¥
    or ⊗ alone does not make a read unsure (normalisation drops it)."""
    images, allowlists, _, _ = page_crops("heavy/vat_invoice_0040.jpg")
    narrow = [i for i, a in enumerate(allowlists) if a is not None]
    first = tiny.recognize([images[i] for i in narrow], [allowlists[i] for i in narrow])
    unsure = [
        i
        for i, r in zip(narrow, first, strict=True)
        if min(r.char_confidences[value_start(r.text) :], default=0) < MIN_CHAR_CONFIDENCE
    ]
    assert unsure and len(unsure) < len(narrow)
    fast, full = Counting(tiny), Counting(small)
    reads = CascadeRecognizer(fast, full).recognize(images, allowlists)
    assert full.seen == len(images) - len(narrow) + len(unsure)
    for i in unsure:
        alone = small.recognize([images[i]], [allowlists[i]])[0]
        assert reads[i].text == alone.text
        assert reads[i].confidence == pytest.approx(alone.confidence, abs=1e-4)


def test_the_cpu_default_is_the_cascade(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(ppocr_engine(threads=1), CascadeRecognizer)
    assert isinstance(ppocr_engine(threads=1, cascade=False), PPOCRRecognizer)
    # another model, a model file of one's own, or the switch: the small model alone
    assert isinstance(
        ppocr_engine(threads=1, model_path=str(PPOCRRecognizer().model_path)), PPOCRRecognizer
    )
    monkeypatch.setenv("ROI_PPOCR_CASCADE", "0")
    assert isinstance(ppocr_engine(threads=1), PPOCRRecognizer)
    assert isinstance(ppocr_engine(threads=1, cascade=True), CascadeRecognizer)


def test_tiny_can_read_every_character_a_template_allows(tiny: PPOCRRecognizer) -> None:
    """The cascade trusts tiny on allowlisted fields: a character allowed there but missing from
    tiny's list could only ever be read as another one."""
    known = set(tiny.characters)
    for template in TemplateStore().all():
        for spec in template.fields:
            allowed = resolve_allowlist(spec.allowlist, spec.kind)
            if allowed is not None:
                assert set(allowed) <= known, (template.name, spec.name, set(allowed) - known)


def test_an_allowlist_tiny_cannot_read_goes_to_small(
    small: PPOCRRecognizer, tiny: PPOCRRecognizer
) -> None:
    images, _, fields, _ = page_crops("clean/vat_invoice_0001.jpg")
    crop = images[fields.index("invoice_number")]
    missing = next(ch for ch in small.characters[1:] if ch not in set(tiny.characters))
    fast, full = Counting(tiny), Counting(small)
    cascade = CascadeRecognizer(fast, full)
    cascade.recognize([crop, crop], ["0123456789", "0123456789" + missing])
    assert (fast.seen, full.seen) == (1, 1)


def test_first_reads_the_caller_confirms_are_not_read_again(
    small: PPOCRRecognizer, tiny: PPOCRRecognizer
) -> None:
    """The caller's ``confirmed`` gets tiny's readings (None for the names, not read yet) and
    names those other readings confirm: the unsure ones among them are kept as tiny read them,
    the other unsure ones are read again by the small model."""
    images, allowlists, _, _ = page_crops("heavy/vat_invoice_0040.jpg")
    first = [
        tiny.recognize([c], [a])[0] if a else None for c, a in zip(images, allowlists, strict=True)
    ]
    unsure = [
        i
        for i, r in enumerate(first)
        if r is not None and min(r.char_confidences[value_start(r.text) :], default=0) < 0.95
    ]
    assert len(unsure) >= 2
    keep = unsure[: len(unsure) // 2]
    given: list[list[Recognition | None]] = []

    def confirmed(reads: Sequence[Recognition | None]) -> list[int]:
        given.append(list(reads))
        return keep

    fast, full = Counting(tiny), Counting(small)
    reads = CascadeRecognizer(fast, full).recognize(images, allowlists, confirmed=confirmed)
    assert len(given) == 1 and [r is None for r in given[0]] == [r is None for r in first]
    assert [r.text for r in given[0] if r is not None] == [r.text for r in first if r]
    names = sum(a is None for a in allowlists)
    assert full.seen == names + len(unsure) - len(keep)
    for i in keep:
        assert reads[i] == given[0][i]
    # nothing to confirm when every tiny reading is sure (a name, read by small only, is not
    # tiny's to confirm): the caller is not asked
    clean, clean_allow, clean_fields, _ = page_crops("clean/vat_invoice_0001.jpg")
    narrow = [(c, a) for c, a in zip(clean, clean_allow, strict=True) if a is not None]
    sure = [
        (c, a)
        for (c, a), r in zip(narrow, tiny.recognize(*zip(*narrow, strict=True)), strict=True)
        if min(r.char_confidences[value_start(r.text) :], default=0) >= 0.95
    ]
    sure.append((clean[clean_fields.index("buyer_name")], None))
    given.clear()
    CascadeRecognizer(tiny, small).recognize(*zip(*sure, strict=True), confirmed=confirmed)
    assert given == []
