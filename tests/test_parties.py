"""The party registry: its CSV, the checks of names against tax ids, and the cascade sparing the
small model the names it confirms (real models on real fixture pages)."""

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from test_engine_cascade import Counting

from extractor import parties as registry_sources
from extractor.cross_check import check_parties
from extractor.engines.cascade import CascadeRecognizer
from extractor.engines.ppocr import PPOCRRecognizer
from extractor.fields import uscc_check_char
from extractor.fields.taxid import org_check_char
from extractor.parties import (
    Parties,
    PartiesError,
    PartyLearner,
    learn_parties,
    load_parties,
)
from extractor.pipeline import Extractor
from extractor.result import FieldResult
from extractor.synth.content import party
from extractor.synth.generate import Document, make_document
from extractor.synth.names import REGIONS
from extractor.templates import TemplateStore, parse_template

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAGE = FIXTURES / "clean" / "vat_invoice_0001.jpg"


def uscc(body: str) -> str:
    """A USCC from its first 16 characters: its organisation code's check, then its own."""
    body = body[:16] + org_check_char(body[8:16])
    return body + uscc_check_char(body)


BUYER_ID, SELLER_ID = uscc("91310000MA1FL0XXA"), uscc("91440300MA5ABCDE1")


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def truth() -> dict[str, str]:
    return json.loads(PAGE.with_suffix(".json").read_text(encoding="utf-8"))["pages"][0]["fields"]


# -- the CSV ------------------------------------------------------------------------------------


def test_a_registry_reads_excels_csv_in_either_encoding(tmp_path: Path) -> None:
    text = f"名称,纳税人识别号,地址\n上海某某科技有限公司,{BUYER_ID.lower()},上海\n\n"
    for encoding in ("utf-8-sig", "gb18030"):
        parties = load_parties(write(tmp_path / f"{encoding}.csv", text, encoding))
        assert len(parties) == 1
        assert parties.name_for(BUYER_ID) == "上海某某科技有限公司"
        assert parties.tax_id_for("上海某某科技有限公司") == BUYER_ID


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,company\n", "header row must name a tax id column"),
        (f"tax_id,name\n{BUYER_ID[:-1]}{'1' if BUYER_ID[-1] != '1' else '2'},甲公司\n", "line 2"),
        (f"tax_id,name\n{BUYER_ID},甲公司\n{BUYER_ID},乙公司\n", "line 3: tax id"),
        (f"tax_id,name\n{BUYER_ID},\n", "needs both a tax id and a name"),
        ("tax_id,name\n", "no parties"),
    ],
)
def test_a_bad_registry_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(PartiesError, match=message):
        load_parties(write(tmp_path / "parties.csv", text))


def test_a_missing_registry_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(PartiesError, match="nowhere\\.csv"):
        load_parties(tmp_path / "nowhere.csv")
    with pytest.raises(PartiesError, match="nowhere\\.csv"):
        Extractor(engine=Counting(PPOCRRecognizer(threads=1)), parties=tmp_path / "nowhere.csv")


def test_a_name_registered_twice_is_not_looked_up_by_name() -> None:
    parties = Parties({BUYER_ID: "甲公司", SELLER_ID: "甲公司"})
    assert parties.name_for(SELLER_ID) == "甲公司"
    assert parties.tax_id_for("甲公司") is None


def test_a_template_pairs_only_a_name_with_a_tax_id() -> None:
    text = (FIXTURES.parent / "templates" / "vat_invoice.yaml").read_text(encoding="utf-8")
    bad = text.replace(
        "{name: buyer_name, tax_id: buyer_tax_id,", "{name: buyer_name, tax_id: tax,"
    )
    assert bad != text
    with pytest.raises(Exception, match="'tax' is not a field of kind tax_id"):
        parse_template(bad, Path("vat_invoice.yaml"))


# -- the checks ---------------------------------------------------------------------------------


def field(value: str | None, *errors: str) -> FieldResult:
    return FieldResult(
        value=value, raw=value or "", confidence=0.9, valid=not errors, errors=list(errors)
    )


def check(parties: Parties, **fields: FieldResult) -> dict[str, FieldResult]:
    page = {
        "buyer_name": field("上海某某科技有限公司"),
        "buyer_tax_id": field(BUYER_ID),
        "seller_name": field("深圳某某电子有限公司"),
        "seller_tax_id": field(SELLER_ID),
    } | fields
    check_parties(TemplateStore().get("vat_invoice"), parties, page)
    return page


REGISTRY = Parties({BUYER_ID: "上海某某科技有限公司", SELLER_ID: "深圳某某电子有限公司"})


def test_a_name_read_as_registered_confirms_a_doubtful_pair() -> None:
    doubt = "uncertain character '某' (0.55)"
    page = check(
        REGISTRY,
        buyer_name=field("上海某某科技有限公司", doubt),
        buyer_tax_id=field(BUYER_ID, "low recognition confidence (0.52)"),
    )
    for name in ("buyer_name", "buyer_tax_id"):
        assert page[name].valid and page[name].note == "confirmed by the party registry"
    assert page["seller_name"].note is None  # valid already: nothing to say


def test_names_are_compared_whatever_their_width_and_spaces() -> None:
    """A reading with half-width ``(福州)`` or a space is the registered ``（福州）``: the pair is
    confirmed, the name given as registered; looked up by name the same way."""
    registered = "达航丰工汽车销售服务（福州）有限公司"
    parties = Parties({BUYER_ID: registered, SELLER_ID: "深圳某某电子有限公司"})
    read = "达航丰工汽车销售服务 (福州) 有限公司"
    page = check(
        parties,
        buyer_name=field(read, "uncertain character '丰' (0.55)"),
        buyer_tax_id=field(BUYER_ID, "low recognition confidence (0.52)"),
    )
    buyer = page["buyer_name"]
    assert (buyer.value, buyer.valid) == (registered, True)
    assert buyer.note == f"the party registry's name for tax id {BUYER_ID}: read as {read!r}"
    assert page["buyer_tax_id"].valid  # confirmed with it, though only in doubt
    assert parties.tax_id_for(read) == BUYER_ID


def test_a_name_two_characters_off_takes_the_registered_name() -> None:
    page = check(
        REGISTRY, buyer_name=field("上海某其科技有限公可", "uncertain character '其' (0.6)")
    )
    buyer = page["buyer_name"]
    assert (buyer.value, buyer.valid, buyer.errors) == ("上海某某科技有限公司", True, [])
    assert buyer.note == (
        f"the party registry's name for tax id {BUYER_ID}: read as '上海某其科技有限公可'"
    )


def test_a_name_read_with_the_next_line_glued_on_takes_the_registered_name() -> None:
    glued = "上海某某科技有限公司通店管15373949"
    page = check(REGISTRY, buyer_name=field(glued, "holds a long number"))
    assert page["buyer_name"].value == "上海某某科技有限公司" and page["buyer_name"].valid
    short = Parties({BUYER_ID: "张三", SELLER_ID: "深圳某某电子有限公司"})
    assert not check(short, buyer_name=field("张三丰"))["buyer_name"].valid  # too short to tell


def test_another_name_for_a_registered_tax_id_is_flagged() -> None:
    page = check(REGISTRY, buyer_name=field("北京另一家公司有限公司"))
    check_parties(TemplateStore().get("vat_invoice"), REGISTRY, page)  # again, after a fallback
    buyer = page["buyer_name"]
    assert buyer.value == "北京另一家公司有限公司" and not buyer.valid
    assert buyer.errors == [f"the party registry names {BUYER_ID} '上海某某科技有限公司'"]


def test_a_short_name_is_never_taken_for_another() -> None:
    parties = Parties({BUYER_ID: "张三", SELLER_ID: "深圳某某电子有限公司"})
    page = check(parties, buyer_name=field("李四"))
    assert page["buyer_name"].value == "李四" and not page["buyer_name"].valid


def test_a_tax_id_one_character_off_the_registered_names_takes_it() -> None:
    slipped = BUYER_ID[:5] + ("8" if BUYER_ID[5] != "8" else "9") + BUYER_ID[6:]
    page = check(REGISTRY, buyer_tax_id=field(slipped, "check character mismatch"))
    assert page["buyer_tax_id"].value == BUYER_ID and page["buyer_tax_id"].valid
    page = check(
        REGISTRY,
        buyer_name=field("上海某某科技有限公司", "uncertain character '某' (0.55)"),
        buyer_tax_id=field(slipped, "check character mismatch"),
    )
    assert page["buyer_tax_id"].value == BUYER_ID and page["buyer_name"].valid  # the pair
    other = uscc("91110000MA0000001")
    page = check(REGISTRY, buyer_tax_id=field(other))
    assert not page["buyer_tax_id"].valid
    assert page["buyer_tax_id"].errors == [
        f"the party registry gives '上海某某科技有限公司' the tax id {BUYER_ID}"
    ]


def test_parties_not_registered_are_left_as_read() -> None:
    page = check(Parties({uscc("91110000MA0000001"): "别的公司有限公司"}))
    assert all(f.valid and f.note is None for f in page.values())


# -- on real pages, real models -----------------------------------------------------------------


@pytest.fixture(scope="module")
def engines() -> tuple[Counting, Counting]:
    return (
        Counting(PPOCRRecognizer(model="PP-OCRv6-tiny", threads=1, cpu_runtime="onnxruntime")),
        Counting(PPOCRRecognizer(threads=1)),
    )


def registry(tmp_path: Path, **names: str) -> Path:
    fields = truth() | names
    rows = [(fields[f"{side}_tax_id"], fields[f"{side}_name"]) for side in ("buyer", "seller")]
    return write(tmp_path / "parties.csv", "tax_id,name\n" + "".join(f"{t},{n}\n" for t, n in rows))


def extract(engines: tuple[Counting, Counting], parties: Path | None) -> tuple[dict, int]:
    tiny, small = engines
    extractor = Extractor(engine=CascadeRecognizer(tiny, small), fallback="never", parties=parties)
    before = small.seen
    fields = extractor.extract(PAGE, "vat_invoice").pages[0].fields
    return {name: f.value for name, f in fields.items()}, small.seen - before


def test_registered_names_read_by_tiny_spare_the_small_model(
    engines: tuple[Counting, Counting], tmp_path: Path
) -> None:
    without, small_without = extract(engines, None)
    assert without == truth()
    values, small_with = extract(engines, registry(tmp_path))
    assert values == without
    assert small_with == small_without - 2  # the two names: tiny read them as registered


def test_a_name_tiny_reads_close_to_the_registered_one_is_not_read_again(
    engines: tuple[Counting, Counting], tmp_path: Path
) -> None:
    """The registry gives a name read close to its own the registered one whoever reads it: a
    character tiny lacks (赟) costs no second reading."""
    _, small_without = extract(engines, None)
    changed = truth()["buyer_name"][:-1] + "赟"  # 赟: not among tiny's characters
    values, small_with = extract(engines, registry(tmp_path, buyer_name=changed))
    assert small_with == small_without - 2
    assert values["buyer_name"] == changed


def test_a_name_far_from_the_registered_one_goes_to_the_small_model(
    engines: tuple[Counting, Counting], tmp_path: Path
) -> None:
    _, small_without = extract(engines, None)
    other = "郑州辰盛润禾物业管理有限责任公司"
    tiny, small = engines
    extractor = Extractor(
        engine=CascadeRecognizer(tiny, small),
        fallback="never",
        parties=registry(tmp_path, buyer_name=other),
    )
    before = small.seen
    buyer = extractor.extract(PAGE, "vat_invoice").pages[0].fields["buyer_name"]
    assert small.seen - before == small_without - 1  # the seller's name only was spared
    assert buyer.value == truth()["buyer_name"] and not buyer.valid  # as printed, flagged
    assert buyer.errors == [f"the party registry names {truth()['buyer_tax_id']} {other!r}"]


def test_tiny_reads_only_the_names_whose_tax_id_it_read_as_registered(
    engines: tuple[Counting, Counting], tmp_path: Path
) -> None:
    """A registry that holds the buyer alone: tiny reads the buyer's name, not the seller's (it
    could not be confirmed); the small model reads the seller's name only."""
    tiny, small = engines
    fields = truth()
    only_buyer = write(
        tmp_path / "buyer.csv", f"tax_id,name\n{fields['buyer_tax_id']},{fields['buyer_name']}\n"
    )
    extractor = Extractor(
        engine=CascadeRecognizer(tiny, small), fallback="never", parties=only_buyer
    )
    tiny_before, small_before = tiny.free, small.free
    values = {n: f.value for n, f in extractor.extract(PAGE, "vat_invoice").pages[0].fields.items()}
    assert values == fields
    assert (tiny.free - tiny_before, small.free - small_before) == (1, 1)


# -- learning a registry ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def result(engines: tuple[Counting, Counting]) -> dict:
    """A real page's result, as `roi extract --json` prints it."""
    extractor = Extractor(engine=CascadeRecognizer(*engines), fallback="never")
    return json.loads(extractor.extract(PAGE, "vat_invoice").model_dump_json())


def renamed(result: dict, name: str) -> dict:
    other = json.loads(json.dumps(result))
    other["pages"][0]["fields"]["buyer_name"]["value"] = name
    return other


def test_parties_read_alike_in_two_documents_are_learned(result: dict, tmp_path: Path) -> None:
    fields = truth()
    learned = learn_parties([result, result], TemplateStore())
    assert learned.names == {
        fields["buyer_tax_id"]: fields["buyer_name"],
        fields["seller_tax_id"]: fields["seller_name"],
    }
    assert learn_parties([result], TemplateStore()).names == {}  # seen once: not yet
    assert learn_parties([result], TemplateStore()).rare == 2
    spaced = renamed(result, " ".join(fields["buyer_name"]))  # the same name, read with spaces
    assert learn_parties([result, spaced], TemplateStore()).names == learned.names
    misread = renamed(result, fields["buyer_name"][:-1] + "赟")
    learned = learn_parties([result, result, result, misread], TemplateStore())
    assert learned.names[fields["buyer_tax_id"]] == fields["buyer_name"]  # outvoted, 3 to 1
    learned = learn_parties([result, result, misread], TemplateStore())
    assert fields["buyer_tax_id"] not in learned.names
    assert learned.conflicts[fields["buyer_tax_id"]] == {
        fields["buyer_name"]: 2,
        fields["buyer_name"][:-1] + "赟": 1,
    }


def test_what_the_registry_gave_and_flagged_fields_are_not_learned(result: dict) -> None:
    given = json.loads(json.dumps(result))
    given["pages"][0]["fields"]["buyer_name"]["note"] = "confirmed by the party registry"
    given["pages"][0]["fields"]["seller_tax_id"]["valid"] = False
    assert learn_parties([given, given], TemplateStore()).names == {}


def test_a_learner_counts_documents_one_at_a_time(result: dict) -> None:
    """``PartyLearner``: what :func:`learn_parties` finds, as the documents come."""
    fields = truth()
    learner = PartyLearner(TemplateStore())
    assert learner.add(result) is False and learner.names == {}  # seen once: not yet
    assert learner.add(result) is True
    assert learner.names == learn_parties([result, result], TemplateStore()).names
    misread = renamed(result, fields["buyer_name"][:-1] + "赟")
    assert learner.add(misread) is True  # 2 to 1: no longer outvoted, dropped
    assert fields["buyer_tax_id"] not in learner.names
    assert learner.learned().conflicts[fields["buyer_tax_id"]] == {
        fields["buyer_name"]: 2,
        fields["buyer_name"][:-1] + "赟": 1,
    }
    assert learner.add(result) is True  # 3 to 1: outvoted (OUTVOTE), learned again
    assert learner.names[fields["buyer_tax_id"]] == fields["buyer_name"]
    assert learner.add(result) is False  # 4 to 1: nothing new


def test_a_learner_past_its_limit_forgets_the_parties_read_once(result: dict) -> None:
    learner = PartyLearner(TemplateStore(), most=2)
    learner.add(result)
    learner.add(result)
    others = json.loads(json.dumps(result))  # two other parties, read once
    for side, body in (("buyer", "91110000MA000010"), ("seller", "91110000MA000020")):
        others["pages"][0]["fields"][f"{side}_tax_id"]["value"] = uscc(body)
    learner.add(others)
    learned = learner.learned()
    assert set(learned.names) == {truth()["buyer_tax_id"], truth()["seller_tax_id"]}
    assert learned.rare == 0  # forgotten, not counted
    learner = PartyLearner(TemplateStore())  # no limit: what `roi parties learn` reports
    for document in (result, result, others):
        learner.add(document)
    assert learner.learned().rare == 2


def test_a_given_registry_wins_over_what_a_run_learns() -> None:
    given = Parties({BUYER_ID: "上海某某科技有限公司"})
    both = given.with_learned({BUYER_ID: "上海某其科技有限公司", SELLER_ID: "深圳某某电子有限公司"})
    assert both.name_for(BUYER_ID) == "上海某某科技有限公司"
    assert both.name_for(SELLER_ID) == "深圳某某电子有限公司"
    sources = (registry_sources.REGISTRY, registry_sources.LEARNED)
    assert (both.source(BUYER_ID), both.source(SELLER_ID)) == sources
    assert both.tax_id_for("上海某其科技有限公司") is None
    assert given.with_learned({}).name_for(SELLER_ID) is None  # learned again from scratch
    fields = check(
        both,
        buyer_name=field("上海某某科技有限公司", "uncertain character '某' (0.55)"),
        seller_name=field("深圳某某电子有限公可"),
        seller_tax_id=field(SELLER_ID),
    )
    assert fields["buyer_name"].note == "confirmed by the party registry"
    assert fields["seller_name"].value == "深圳某某电子有限公司"
    assert fields["seller_name"].note == (
        f"the learned party registry's name for tax id {SELLER_ID}: read as '深圳某某电子有限公可'"
    )


def recurring_invoices(
    label: str, seed: int, regions: tuple[int, int], altered: bool = False
) -> tuple[list[Document], str, str]:
    """Three clean invoices of one seller to one buyer (the fixtures name others on every
    page), the parties drawn from ``label``, the invoices from ``seed``, ``seed + 1``, ...;
    ``altered``: the last prints the seller's name with one character changed. Returns the
    invoices, the seller's name and the name the last one prints."""
    rng = random.Random(label)
    buyer, seller = party(rng, REGIONS[regions[0]]), party(rng, REGIONS[regions[1]])
    last = seller.name
    if altered:
        last = seller.name[:2] + ("华" if seller.name[2] != "华" else "兴") + seller.name[3:]
    docs = [
        make_document(seed + n, "clean", parties=(buyer, replace(seller, name=name)))
        for n, name in enumerate((seller.name, seller.name, last))
    ]
    return docs, seller.name, last


@pytest.fixture(scope="module")
def recurring() -> list[Document]:
    return recurring_invoices("recurring parties", 20261201, (0, 1))[0]


def test_a_run_learns_the_parties_it_has_read_in_two_documents(
    engines: tuple[Counting, Counting], recurring: list[Document]
) -> None:
    """``learn_parties``: after two documents read the same buyer and seller, the third one's
    names are read by tiny as learned, not by the small model; the values stay the print's."""
    tiny, small = engines
    extractor = Extractor(
        engine=CascadeRecognizer(tiny, small), fallback="never", learn_parties=True
    )
    names_read = []
    for doc in recurring:
        before = tiny.free, small.free
        fields = extractor.extract(doc.jpeg, "vat_invoice").pages[0].fields
        assert {n: f.value for n, f in fields.items()} == doc.truth["pages"][0]["fields"]
        names_read.append((tiny.free - before[0], small.free - before[1]))
    assert names_read == [(0, 2), (0, 2), (2, 0)]  # (by tiny, by small)
    assert fields["buyer_name"].valid and fields["seller_name"].valid
    again = Extractor(engine=CascadeRecognizer(tiny, small), fallback="never")
    before = small.free
    again.extract(recurring[2].jpeg, "vat_invoice")
    assert small.free - before == 2  # without learning: as the first two


def test_roi_parties_learn_writes_a_registry_roi_extract_reads(
    result: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from extractor.cli import main

    jsonl = tmp_path / "results.jsonl"
    jsonl.write_text(json.dumps(result) + "\n" + json.dumps(result) + "\n", encoding="utf-8")
    single = tmp_path / "one.json"
    single.write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "learned.csv"
    args = ["parties", "learn", str(jsonl), str(single), "--min-seen", "3", "-o", str(out)]
    assert main(args) == 0  # three documents: two lines and one file
    assert "2 parties registered" in capsys.readouterr().err
    parties = load_parties(out)
    assert parties.name_for(truth()["buyer_tax_id"]) == truth()["buyer_name"]
    assert main(["parties", "learn", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: not readable as results JSON" in capsys.readouterr().err
