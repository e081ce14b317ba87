"""Full-page OCR in a process of its own (extractor.fullpage_server), as a service pool shares it:
real pages, the real RapidOCR models, a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from extractor.errors import EngineError
from extractor.fullpage_server import FullPageServer, RemoteFullPageOCR
from extractor.pipeline import Extractor

ROOT = Path(__file__).resolve().parent.parent
FALLBACK_PAGE = ROOT / "fixtures/heavy/vat_invoice_0037.jpg"
"""A phone photo whose invoice code only the fallback reads (docs/accuracy.md)."""


@pytest.fixture(scope="module")
def server() -> Iterator[FullPageServer]:
    server = FullPageServer("cpu", threads=1)
    server.start()
    try:
        yield server
    finally:
        server.close()


def _fields(document: object) -> list[tuple[str, str | None, str, bool]]:
    page = json.loads(document.model_dump_json())["pages"][0]  # type: ignore[attr-defined]
    return [(k, f["value"], f["source"], f["valid"]) for k, f in page["fields"].items()]


def test_a_page_read_in_the_shared_process_is_the_page_read_in_this_one(
    server: FullPageServer,
) -> None:
    """The fallback sends the rows in doubt (views) and its test of which lines to read (keep)
    to the other process; what comes back makes the same fields as full-page OCR here."""
    remote = RemoteFullPageOCR(server.address)
    try:
        shared = Extractor(threads=1, fullpage=remote).extract(FALLBACK_PAGE, "vat_invoice")
        assert remote.setting == Extractor(threads=1).fullpage_ocr().setting
    finally:
        remote.close()
    own = Extractor(threads=1).extract(FALLBACK_PAGE, "vat_invoice")
    assert _fields(shared) == _fields(own)
    assert any(source == "fallback" for _, _, source, _ in _fields(shared))


def test_a_glance_in_the_shared_process_is_the_glance_in_this_one(
    server: FullPageServer,
) -> None:
    """A page no frame registered on is glanced at for its form's labels there too: the scanned
    cover letter of fixture 0046 shows none and is not read whole, an invoice shows them."""
    from extractor.fallback import LabelStarts
    from extractor.loading import iter_pages

    own = Extractor(threads=1)
    template = own.templates.get("vat_invoice")
    forms = [(template, own.reference_labels(template))]
    letter, invoice, _ = iter_pages((ROOT / "fixtures/multipage/vat_invoice_0046.pdf").read_bytes())
    remote = RemoteFullPageOCR(server.address)
    try:
        shown = [remote.shows(p.image, LabelStarts(forms)) for p in (letter, invoice)]
        assert shown == [False, True]
    finally:
        remote.close()
    ocr = own.fullpage_ocr()
    assert [ocr.shows(p.image, LabelStarts(forms)) for p in (letter, invoice)] == [False, True]


def test_a_worker_outlives_the_process_dying(server: FullPageServer) -> None:
    """Killed, the process is started again by its owner; a client reconnects and reads on.
    While it is down, a page fails with an EngineError that says so (no hang)."""
    page = cv2.imread(str(ROOT / "fixtures/clean/vat_invoice_0001.jpg"))
    remote = RemoteFullPageOCR(server.address, wait_s=1.0)
    try:
        before = remote(page)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while server.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(EngineError, match="full-page OCR process"):
            remote(page)
        while not server.check():  # the first death is started again at once
            assert time.monotonic() < deadline
            time.sleep(0.05)
        remote.wait_s = 60.0
        after = remote(page)
    finally:
        remote.close()
    assert server.restarts == 1 and server.alive
    assert [line.text for line in after] == [line.text for line in before]
    assert all(np.array_equal(a.quad, b.quad) for a, b in zip(after, before, strict=True))


def test_a_page_whose_fallback_cannot_run_keeps_what_its_boxes_read() -> None:
    """Nothing listens where the fallback's pages are sent: a registered page keeps its ROI
    fields (those in doubt flagged) and says why; a page only the fallback could read fails."""
    gone = RemoteFullPageOCR(FullPageServer().address, wait_s=0.3)  # never started
    extractor = Extractor(threads=1, fullpage=gone)
    page = extractor.extract(FALLBACK_PAGE, "vat_invoice").pages[0]
    own = Extractor(threads=1, fallback="never").extract(FALLBACK_PAGE, "vat_invoice").pages[0]
    assert page.status == "needs_review" and page.registration == "frame"
    assert "the fallback could not run (the full-page OCR process did not answer" in page.message
    assert {k: (f.value, f.valid, f.source) for k, f in page.fields.items()} == {
        k: (f.value, f.valid, f.source) for k, f in own.fields.items()
    }
    blank = np.full((1300, 2000, 3), 255, np.uint8)
    png = cv2.imencode(".png", blank)[1].tobytes()
    with pytest.raises(EngineError, match=r"did not answer within 0\.3 s"):
        extractor.extract(png, "vat_invoice")


def test_the_process_ends_with_the_one_that_started_it(tmp_path: Path) -> None:
    """A pool killed outright (no chance to close it) leaves no full-page OCR behind."""
    script = (
        "import time\n"
        "from extractor.fullpage_server import FullPageServer\n"
        "s = FullPageServer('cpu', 1)\n"
        "s.start()\n"
        "print(s.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        assert _alive(pid)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        owner.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended; its parent (init here) reaps it
