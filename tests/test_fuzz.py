"""Fuzzing the whole extractor with mutated fixture files.

Hypothesis mutates committed documents (a scan JPEG, the blank form PNG, a multi-page PDF and a
TIFF): bit flips, byte overwrites, truncation, and splices of one file's first KiB onto another.
``Extractor(fallback="never").extract(data, "vat_invoice")`` must return a result or raise a
:class:`~extractor.errors.RoiError`: never another exception, a crash or a hang.

Each example runs in one long-lived child process (the engine loads once) with a per-example
time limit; a child that dies or overruns fails the test with the input saved for replay.
``ROI_FUZZ_EXAMPLES`` raises the number of examples (default 150).
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import tempfile
import traceback
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [
    ROOT / "fixtures" / "clean" / "vat_invoice_0001.jpg",
    ROOT / "templates" / "vat_invoice.png",
    ROOT / "fixtures" / "multipage" / "vat_invoice_0045.pdf",
    ROOT / "fixtures" / "multipage" / "vat_invoice_0047.tif",
]
EXAMPLES = int(os.environ.get("ROI_FUZZ_EXAMPLES", "150"))
EXAMPLE_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
MAX_PAGES = 3  # keeps multi-page mutants cheap; the limit itself is part of what is fuzzed


def _child(conn: Connection) -> None:
    """Loads the extractor once, then answers ``bytes -> (outcome, type, message)``."""
    import cv2

    cv2.setNumThreads(1)
    from extractor import loading
    from extractor.errors import RoiError
    from extractor.pipeline import Extractor

    loading.MAX_PAGES = MAX_PAGES
    extractor = Extractor(fallback="never", threads=1)
    conn.send(("ready", "", ""))
    while True:
        try:
            data = conn.recv()
        except EOFError:
            return
        try:
            result = extractor.extract(data, "vat_invoice")
            answer = ("ok", "", str(len(result.pages)))
        except RoiError as exc:
            answer = ("typed", type(exc).__name__, str(exc))
        except BaseException as exc:  # the bug this test looks for
            answer = ("untyped", type(exc).__name__, traceback.format_exc()[-3000:])
        conn.send(answer)


class Child:
    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=_child, args=(child_conn,), daemon=True)
        self.process.start()
        child_conn.close()
        if not self.conn.poll(START_TIMEOUT_S):
            self.close()
            pytest.fail("the fuzz child did not start")
        self.conn.recv()

    def run(self, data: bytes) -> tuple[str, str, str]:
        self.conn.send(data)
        if not self.conn.poll(EXAMPLE_TIMEOUT_S):
            return "hang", "", f"no answer within {EXAMPLE_TIMEOUT_S:g} s"
        try:
            return self.conn.recv()
        except EOFError:
            return "crash", "", f"the child died (exit code {self.process.exitcode})"

    def close(self) -> None:
        self.conn.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    c = Child()
    try:
        yield c
    finally:
        c.close()


SEED_BYTES = [p.read_bytes() for p in SEEDS]


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    data = bytearray(SEED_BYTES[draw(st.integers(0, len(SEED_BYTES) - 1))])
    kind = draw(st.sampled_from(["flip", "overwrite", "truncate", "splice", "mixed"]))
    if kind in ("flip", "mixed"):
        for _ in range(draw(st.integers(1, 32))):
            # Headers are where parsers go wrong: half the flips land in the first KiB.
            limit = 1024 if draw(st.booleans()) else len(data)
            pos = draw(st.integers(0, min(limit, len(data)) - 1))
            data[pos] ^= 1 << draw(st.integers(0, 7))
    if kind in ("overwrite", "mixed"):
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(data) - 1))
            chunk = draw(
                st.one_of(
                    st.binary(min_size=1, max_size=16),
                    st.sampled_from(
                        [b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff"]
                    ),
                )
            )
            data[pos : pos + len(chunk)] = chunk
    if kind in ("truncate", "mixed"):
        data = data[: draw(st.integers(0, len(data)))]
    if kind == "splice":
        other = SEED_BYTES[draw(st.integers(0, len(SEED_BYTES) - 1))]
        head = other[: draw(st.integers(1, 1024))]
        at = draw(st.integers(0, min(len(data), 4096)))
        data = data[:at] + head + data[at + len(head) :]
    return bytes(data)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=os.environ.get("ROI_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=mutants())
def test_mutated_documents_give_a_result_or_a_typed_error(child: Child, data: bytes) -> None:
    outcome, kind, message = child.run(data)
    if outcome not in ("ok", "typed"):
        saved = Path(tempfile.gettempdir()) / f"roi-fuzz-{hashlib.sha256(data).hexdigest()[:16]}"
        saved.write_bytes(data)
        if outcome in ("hang", "crash"):
            child.close()
            child.__init__()  # type: ignore[misc]  # a fresh child for the next examples
        pytest.fail(f"{outcome} {kind}: {message}\n(input saved to {saved})")
    if outcome == "typed":
        assert message, kind


def test_fuzz_child_reports_untyped_errors(child: Child) -> None:
    """The harness itself: a clean document gives a result, garbage a typed error."""
    assert child.run(SEED_BYTES[0])[0] == "ok"
    assert child.run(b"not a document")[:2] == ("typed", "UnsupportedInputError")
