"""The service end to end: the real server as a subprocess on a free loopback port, called with
httpx. Two servers: ``main`` (2 workers, batching, their fallback in a shared process) and
``tight`` (1 worker, queue of 1, short timeout; its fallback its own) for backpressure, hung
workers and graceful shutdown."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_parties import recurring_invoices

ROOT = Path(__file__).resolve().parent.parent
PARTY_PAGE = ROOT / "fixtures" / "clean" / "vat_invoice_0001.jpg"
FORM = ROOT / "templates" / "vat_invoice.png"
START_TIMEOUT_S = 90
CALL_TIMEOUT_S = 60


class Server:
    def __init__(self, name: str, env: dict[str, str], tmp: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"{name}.log"
        full_env = {**os.environ, "ROI_HOST": "127.0.0.1", "ROI_PORT": str(self.port), **env}
        full_env["ROI_EXPOSE_WORKER_PIDS"] = "1"
        full_env["ROI_DEBUG"] = "1"
        full_env["PYTHONUNBUFFERED"] = "1"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service"],
                cwd=ROOT,
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(base_url=self.url, timeout=CALL_TIMEOUT_S)
        self.worker_pids: set[int] = set()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.client.get("/ready", timeout=2).status_code == 200:
                    self.worker_pids |= set(self.pids())
                    self.worker_pids |= {self.fallback_pid()} - {None}
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        pytest.fail(f"server not ready after {timeout} s:\n{self.log_tail()}")

    def health(self) -> dict[str, Any]:
        return self.client.get("/health", timeout=5).json()

    def pids(self) -> list[int]:
        return [w["pid"] for w in self.health()["worker_processes"] if w["pid"]]

    def fallback_pid(self) -> int | None:
        """The pid of the full-page OCR process the workers share, if they share one."""
        return self.health().get("fallback_process", {}).get("pid")

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        for pid in self.worker_pids:  # workers exit with the server; make sure of it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "ROI_WORKERS": "2",
        "ROI_BATCH_MAX_SIZE": "4",
        "ROI_BATCH_MAX_WAIT_MS": "5",
        "ROI_QUEUE_SIZE": "64",
        "ROI_REQUEST_TIMEOUT_S": "30",
        "ROI_MAX_BODY_MB": "2",
        "ROI_MAX_PAGES": "3",
        "ROI_FALLBACK_PROCESS": "shared",  # the workers' fallback pages read in one process
    }
    server = Server("main", env, tmp_path_factory.mktemp("service"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("service")
    buyer = _truth_values(json.loads(PARTY_PAGE.with_suffix(".json").read_text()))
    registry = tmp / "parties.csv"  # the page's buyer, registered a character off its print
    registry.write_text(f"tax_id,name\n{buyer['buyer_tax_id']},{buyer['buyer_name'][:-1]}赟\n")
    env = {
        "ROI_WORKERS": "1",
        "ROI_BATCH_MAX_SIZE": "1",
        "ROI_QUEUE_SIZE": "1",
        "ROI_REQUEST_TIMEOUT_S": "3",
        "ROI_SHUTDOWN_TIMEOUT_S": "20",
        "ROI_PARTIES": str(registry),
        "ROI_CHECK_PRINT": "1",
        "ROI_LEARN_PARTIES": "1",
    }
    server = Server("tight", env, tmp)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


# -- documents -----------------------------------------------------------------------------------


def _repo_fixtures() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for truth in sorted((ROOT / "fixtures").glob("**/*.json")):
        for ext in (".jpg", ".png", ".pdf", ".tif", ".tiff"):
            doc = truth.with_suffix(ext)
            if doc.is_file():
                with contextlib.suppress(OSError, ValueError):
                    found.append((doc, json.loads(truth.read_text(encoding="utf-8"))))
                break
    clean = [f for f in found if "clean" in f[0].parts and len(f[1].get("pages", [])) == 1]
    return clean


@pytest.fixture(scope="module")
def invoices(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, dict[str, Any]]]:
    """Clean single-page invoice scans with their truth: fixtures/, or made here if absent."""
    found = _repo_fixtures()
    if found:
        return found[:4]
    try:
        import cv2

        from extractor.synth.generate import generate_invoice
    except Exception as exc:  # the generator is another package's; it may be mid-change
        pytest.skip(f"no fixtures under fixtures/ and the generator is unavailable: {exc}")
    out = tmp_path_factory.mktemp("invoices")
    made = []
    for seed in range(1, 5):
        image, truth = generate_invoice(seed, "clean")
        path = out / f"vat_invoice_{seed:04d}.jpg"
        cv2.imwrite(str(path), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
        made.append((path, truth))
    return made


def _truth_values(truth: dict[str, Any]) -> dict[str, str | None]:
    fields = truth["pages"][0]["fields"]
    return {k: (v.get("value") if isinstance(v, dict) else v) for k, v in fields.items()}


def _values(result: dict[str, Any], page: int = 0) -> dict[str, str | None]:
    return {k: f["value"] for k, f in result["pages"][page]["fields"].items()}


def _pdf(pages: int) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page(width=683, height=397)
    return doc.tobytes()


def _assert_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert body["error"] and body["detail"]
    assert "Traceback" not in response.text
    return body


# -- basics --------------------------------------------------------------------------------------


def test_health_ready_and_pids(main: Server) -> None:
    health = main.health()
    assert health["status"] == "ok"
    assert health["workers"] == 2 and health["workers_ready"] == 2
    assert len(main.pids()) == 2
    assert main.client.get("/ready").json() == {"ready": True, "workers": 2, "workers_ready": 2}
    # the two workers share one process for the fallback's full-page OCR (fallback_process)
    assert health["fallback_process"]["alive"] is True
    assert main.fallback_pid() not in main.pids()


def test_templates(main: Server) -> None:
    listed = main.client.get("/templates").json()
    assert "vat_invoice" in [t["name"] for t in listed]
    one = main.client.get("/templates/vat_invoice").json()
    assert one["name"] == "vat_invoice" and one["fields"]
    _assert_error(main.client.get("/templates/nope"), 404)
    for evil in ("..%2F..%2Fetc%2Fpasswd", "..", "%2e%2e", "vat_invoice.yaml", "VAT_INVOICE"):
        assert main.client.get(f"/templates/{evil}").status_code == 404, evil


def test_openapi_schema(main: Server) -> None:
    schema = main.client.get("/schema/openapi.json").json()
    assert "/extract" in schema["paths"] and "/templates/{template_name}" in schema["paths"]


def test_extract_blank_form_multipart_and_raw(main: Server) -> None:
    data = FORM.read_bytes()
    multipart = main.client.post(
        "/extract",
        params={"template": "vat_invoice", "fallback": "never"},
        files={"file": ("form.png", data)},
    )
    assert multipart.status_code == 200, multipart.text
    result = multipart.json()
    assert result["file"] == "form.png" and result["template"] == "vat_invoice"
    assert result["engine"] == "ppocr"
    assert [p["page"] for p in result["pages"]] == [1]
    assert result["pages"][0]["matched"] is True
    raw = main.client.post(
        "/extract",
        params={"template": "vat_invoice", "name": "scan-42.png", "fallback": "never"},
        content=data,
        headers={"content-type": "image/png"},
    )
    assert raw.status_code == 200, raw.text
    assert raw.json()["file"] == "scan-42.png"
    assert _values(raw.json()) == _values(result)


def test_extract_a_document_sent_as_json(main: Server) -> None:
    """As cloud OCR APIs take one: base64 in a JSON body (standard, URL-safe without padding, a
    data: URL with line breaks), read as the same bytes sent raw; what is not such a body is a
    400 that shows the shape, what it decodes to is judged as any document."""
    data = FORM.read_bytes()
    params = {"template": "vat_invoice", "fallback": "never"}
    raw = main.client.post("/extract", params=params, content=data)
    assert raw.status_code == 200, raw.text
    for encoded in (
        base64.b64encode(data).decode(),
        base64.urlsafe_b64encode(data).decode().rstrip("="),
        "data:image/png;base64," + base64.encodebytes(data).decode(),
    ):
        sent = main.client.post("/extract", params=params, json={"file": encoded, "name": "f.png"})
        assert sent.status_code == 200, sent.text
        assert sent.json()["file"] == "f.png" and _values(sent.json()) == _values(raw.json())
    for body, says in (
        (b"{not json", "a JSON body is {"),
        (b'{"name": "x.pdf"}', "file: Field required"),
        (b'{"file": "%%%%"}', "file: not base64"),
    ):
        r = main.client.post(
            "/extract", params=params, content=body, headers={"content-type": "application/json"}
        )
        assert says in _assert_error(r, 400)["detail"]
    text = base64.b64encode(b"hello, this is text, not a document").decode()
    _assert_error(main.client.post("/extract", params=params, json={"file": text}), 415)
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * (3 * 1024 * 1024)).decode()
    too_large = _assert_error(main.client.post("/extract", params=params, json={"file": big}), 413)
    assert "2 MB" in too_large["detail"]


def test_extract_fixture_matches_truth_and_in_process(
    main: Server, invoices: list[tuple[Path, dict[str, Any]]]
) -> None:
    from extractor.pipeline import Extractor

    doc, truth = invoices[0]
    response = main.client.post(
        "/extract", params={"template": "vat_invoice"}, files={"file": (doc.name, doc.read_bytes())}
    )
    assert response.status_code == 200, response.text
    got = _values(response.json())
    expected = _truth_values(truth)
    local = _values(json.loads(Extractor().extract(doc, "vat_invoice").model_dump_json()))
    assert got == local  # the service returns exactly what the library does
    right = [k for k, v in expected.items() if got.get(k) == v]
    assert len(right) >= 0.8 * len(expected), {k: (got.get(k), v) for k, v in expected.items()}


def test_extract_multipage_matches_in_process(main: Server) -> None:
    docs = sorted((ROOT / "fixtures" / "multipage").glob("*.pdf")) + sorted(
        (ROOT / "fixtures" / "multipage").glob("*.tif")
    )
    if not docs:
        pytest.skip("no multi-page fixtures under fixtures/multipage")
    from extractor.pipeline import Extractor

    extractor = Extractor()
    for doc in docs[:2]:
        r = main.client.post("/extract?template=vat_invoice", content=doc.read_bytes())
        if r.status_code == 422:  # over the test server's 3-page limit
            assert "pages" in r.json()["detail"]
            continue
        assert r.status_code == 200, r.text
        local = json.loads(extractor.extract(doc, "vat_invoice").model_dump_json())
        got = r.json()
        assert [(p["page"], p["status"]) for p in got["pages"]] == [
            (p["page"], p["status"]) for p in local["pages"]
        ]
        for i in range(len(got["pages"])):
            if got["pages"][i]["fields"]:
                assert _values(got, i) == _values(local, i)


def test_invoices_photographed_together_are_each_answered(main: Server) -> None:
    """The worker reads a page's other forms with it (test_pipeline has the library's side)."""
    import cv2
    import numpy as np

    from extractor.pipeline import Extractor

    a = cv2.imread(str(PARTY_PAGE))
    b = cv2.resize(cv2.imread(str(ROOT / "fixtures/light/vat_invoice_0015.jpg")), a.shape[1::-1])
    page = np.full((a.shape[0], 2 * a.shape[1] + 60, 3), 255, np.uint8)
    page[:, : a.shape[1]], page[:, a.shape[1] + 60 :] = a, b
    data = cv2.imencode(".jpg", page)[1].tobytes()
    r = main.client.post("/extract?template=vat_invoice&fallback=never", content=data)
    assert r.status_code == 200, r.text
    got = r.json()["pages"]
    local = json.loads(Extractor(fallback="never").extract(data, "vat_invoice").model_dump_json())
    assert [(p["page"], p["form"], p["status"]) for p in got] == [(1, 1, "ok"), (1, 2, "ok")]
    assert [_values({"pages": got}, i) for i in (0, 1)] == [_values(local, i) for i in (0, 1)]


def test_invoices_merged_on_one_sheet_are_each_answered_from_the_text_layer(main: Server) -> None:
    """A PDF of four 数电票 merged onto one A4 page: the worker answers each form, read from the
    text layer (test_textlayer has the library's side)."""
    from test_textlayer import merged_sheet

    sheet, pdfs, _ = merged_sheet(4)
    r = main.client.post("/extract?template=vat_invoice_digital", content=sheet)
    assert r.status_code == 200, r.text
    got = r.json()["pages"]
    assert [(p["page"], p["form"], p["status"], p["registration"]) for p in got] == [
        (1, n, "ok", "text_layer") for n in (1, 2, 3, 4)
    ]
    for i, path in enumerate(pdfs):
        truth = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        assert _values({"pages": got}, i) == truth["pages"][0]["fields"]


def test_an_ofd_invoice_is_answered_from_its_text(main: Server) -> None:
    """An OFD (the 数电票's other format) sent as it is: read from its text, no OCR."""
    ofd = ROOT / "fixtures/digital/ofd/vat_invoice_digital_0013.ofd"
    r = main.client.post("/extract?template=auto", content=ofd.read_bytes())
    assert r.status_code == 200, r.text
    (page,) = r.json()["pages"]
    truth = json.loads(ofd.with_suffix(".json").read_text(encoding="utf-8"))
    assert (page["template"], page["registration"], page["status"]) == (
        "vat_invoice_digital",
        "text_layer",
        "ok",
    )
    assert _values({"pages": [page]}) == truth["pages"][0]["fields"]


# -- errors --------------------------------------------------------------------------------------


def test_error_unknown_template_and_traversal(main: Server) -> None:
    data = FORM.read_bytes()
    for name in ("nope", "../templates/vat_invoice", "/etc/passwd", "vat_invoice/../x", ""):
        r = main.client.post("/extract", params={"template": name}, content=data)
        assert r.status_code in (400, 404), (name, r.text)
        _assert_error(r, r.status_code)
    body = _assert_error(main.client.post("/extract?template=nope", content=data), 404)
    assert "nope" in body["detail"]


def test_error_unsupported_type_by_content(main: Server) -> None:
    r = main.client.post(
        "/extract?template=vat_invoice",
        files={"file": ("invoice.pdf", b"hello, this is text, not a PDF", "application/pdf")},
    )
    _assert_error(r, 415)
    r = main.client.post(
        "/extract?template=vat_invoice", content=b"GIF89a" + b"\0" * 100,
        headers={"content-type": "image/png"},
    )  # fmt: skip
    _assert_error(r, 415)


def test_error_corrupt_and_empty(main: Server) -> None:
    corrupt = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    _assert_error(main.client.post("/extract?template=vat_invoice", content=corrupt), 422)
    truncated = FORM.read_bytes()[:3000]
    _assert_error(main.client.post("/extract?template=vat_invoice", content=truncated), 422)
    _assert_error(main.client.post("/extract?template=vat_invoice", content=b""), 422)
    broken_pdf = b"%PDF-1.7\n" + b"garbage " * 200
    _assert_error(main.client.post("/extract?template=vat_invoice", content=broken_pdf), 422)


def test_error_too_large_while_reading(main: Server) -> None:
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * (3 * 1024 * 1024)
    body = _assert_error(main.client.post("/extract?template=vat_invoice", content=big), 413)
    assert "2 MB" in body["detail"]
    r = main.client.post(
        "/extract?template=vat_invoice", files={"file": ("big.png", big, "image/png")}
    )
    _assert_error(r, 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is counted as bytes arrive
        yield big[:1024]
        for start in range(1024, len(big), 256 * 1024):
            yield big[start : start + 256 * 1024]

    _assert_error(main.client.post("/extract?template=vat_invoice", content=chunks()), 413)


def test_error_too_many_pages_and_page_options(main: Server) -> None:
    body = _assert_error(main.client.post("/extract?template=vat_invoice", content=_pdf(4)), 422)
    assert "pages" in body["detail"]
    three = _pdf(3)
    ok = main.client.post("/extract?template=vat_invoice&fallback=never&pages=1,3", content=three)
    assert ok.status_code == 200, ok.text
    assert [p["page"] for p in ok.json()["pages"]] == [1, 3]
    assert all(p["status"] == "unmatched" for p in ok.json()["pages"])  # blank pages
    _assert_error(
        main.client.post("/extract?template=vat_invoice&fallback=never&pages=2-5", content=three),
        422,
    )
    for bad in ("0", "a", "3-1", "1,,2", "-1"):
        r = main.client.post("/extract", params={"template": "vat_invoice", "pages": bad},
                             content=three)  # fmt: skip
        _assert_error(r, 400)


def test_error_bad_options(main: Server) -> None:
    data = FORM.read_bytes()
    body = _assert_error(
        main.client.post("/extract?template=vat_invoice&fallback=x", content=data), 400
    )
    assert "fallback" in body["detail"]
    _assert_error(main.client.post("/extract?template=vat_invoice&engine=nope", content=data), 400)
    _assert_error(
        main.client.post("/extract?template=vat_invoice&engine=easyocr", content=data), 400
    )
    _assert_error(main.client.post("/extract", content=data), 400)  # template missing
    r = main.client.post("/extract?template=vat_invoice", files={"other": ("a.png", data)})
    _assert_error(r, 400)
    for fallback in ("auto", "never", "always"):
        r = main.client.post(f"/extract?template=vat_invoice&fallback={fallback}", content=data)
        assert r.status_code == 200, r.text
    _assert_error(main.client.get("/nowhere"), 404)
    _assert_error(main.client.get("/extract"), 405)


# -- load and faults -----------------------------------------------------------------------------


async def _post_many(url: str, docs: list[tuple[str, bytes]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(docs))
    async with httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT_S, limits=limits) as client:
        return await asyncio.gather(
            *(
                client.post(
                    "/extract", params={"template": "vat_invoice", "name": name}, content=data
                )
                for name, data in docs
            )
        )


def _load_docs(n: int, invoices: list[tuple[Path, dict[str, Any]]]) -> list[tuple[str, bytes]]:
    sources = [p for p, _ in invoices] or [FORM]
    return [(f"{i}-{sources[i % len(sources)].name}", sources[i % len(sources)].read_bytes())
            for i in range(n)]  # fmt: skip


def test_32_concurrent_requests_all_correct(
    main: Server, invoices: list[tuple[Path, dict[str, Any]]]
) -> None:
    docs = _load_docs(32, invoices)
    expected: dict[bytes, dict[str, str | None]] = {}
    for _, data in docs:
        if data not in expected:
            r = main.client.post("/extract?template=vat_invoice&fallback=never", content=data)
            assert r.status_code == 200, r.text
            expected[data] = _values(r.json())
    responses = asyncio.run(_post_many(main.url, docs))
    assert [r.status_code for r in responses] == [200] * 32, [r.text for r in responses][:3]
    for (name, data), r in zip(docs, responses, strict=True):
        assert r.json()["file"] == name
        assert _values(r.json()) == expected[data]
    metrics = main.client.get("/metrics").text
    assert "roi_batch_requests_bucket" in metrics
    merged = [line for line in metrics.splitlines() if line.startswith("roi_batch_requests_sum")]
    count = [line for line in metrics.splitlines() if line.startswith("roi_batch_requests_count")]
    assert float(merged[0].split()[-1]) > float(count[0].split()[-1])  # some batches had > 1


def test_killed_worker_loses_no_request_and_pool_recovers(
    main: Server, invoices: list[tuple[Path, dict[str, Any]]]
) -> None:
    docs = _load_docs(16, invoices)
    victim = 0

    async def scenario() -> list[httpx.Response]:
        task = asyncio.ensure_future(_post_many(main.url, docs))
        deadline = time.monotonic() + 20
        while main.health()["inflight"] < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        nonlocal victim
        workers = main.health()["worker_processes"]
        victim = max(workers, key=lambda w: w["inflight"])["pid"]  # the busiest one
        os.kill(victim, signal.SIGKILL)
        return await asyncio.wait_for(task, CALL_TIMEOUT_S * 2)

    responses = asyncio.run(scenario())
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {200, 503}, [
        r.text for r in responses if r.status_code not in (200, 503)
    ]
    for r in responses:
        if r.status_code == 503:
            assert int(r.headers["retry-after"]) >= 1
            _assert_error(r, 503)
    assert statuses.count(200) >= len(docs) - 4, statuses
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if main.client.get("/ready").status_code == 200:
            break
        time.sleep(0.2)
    assert main.client.get("/ready").status_code == 200
    pids = main.pids()
    main.worker_pids |= set(pids)
    assert len(pids) == 2 and victim not in pids
    log = main.log_path.read_text(errors="replace")
    gone = re.search(rf"pid {victim}\) is gone: .* (\d+) request\(s\) in it", log)
    assert gone and int(gone.group(1)) >= 1, main.log_tail()  # requests really were in it
    assert main.health()["restarts"] >= 1
    assert "roi_worker_restarts_total 1.0" in main.client.get("/metrics").text
    again = main.client.post("/extract?template=vat_invoice&fallback=never", content=docs[0][1])
    assert again.status_code == 200


def test_a_killed_fallback_process_is_started_again(main: Server) -> None:
    """The workers' shared full-page OCR dies: the pool starts it again and the pages that need
    the fallback are read as before (in-process, the same fields)."""
    from extractor.pipeline import Extractor

    page = ROOT / "fixtures/heavy/vat_invoice_0037.jpg"  # its invoice code: by the fallback
    killed = main.fallback_pid()
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        process = main.health()["fallback_process"]
        if process["alive"] and process["pid"] != killed:
            break
        time.sleep(0.1)
    assert process["pid"] != killed and process["restarts"] >= 1, process
    main.worker_pids.add(process["pid"])
    r = main.client.post("/extract?template=vat_invoice", content=page.read_bytes())
    assert r.status_code == 200, r.text
    got = r.json()["pages"][0]["fields"]
    assert "fallback" in {f["source"] for f in got.values()}
    local = json.loads(Extractor().extract(page, "vat_invoice").model_dump_json())
    assert _values(r.json()) == _values(local)
    assert "full-page OCR process died" in main.log_path.read_text(errors="replace")


def test_metrics(main: Server) -> None:
    text = main.client.get("/metrics").text
    for name in (
        "roi_requests_total",
        "roi_request_duration_seconds_bucket",
        "roi_queue_depth",
        "roi_inflight",
        "roi_batch_pages_bucket",
        "roi_worker_restarts_total",
        "roi_workers_ready",
        "roi_fallback_pages_total",
    ):
        assert name in text, name
    assert 'roi_requests_total{status="200"}' in text
    assert 'roi_requests_total{status="413"}' in text


def test_queue_full_gives_429_with_retry_after(tight: Server) -> None:
    # tight: 1 worker holding up to batch_max_size + 1 = 2 requests, and a queue of 1.
    data = FORM.read_bytes()

    async def scenario() -> tuple[list[httpx.Response], list[httpx.Response]]:
        async with httpx.AsyncClient(base_url=tight.url, timeout=CALL_TIMEOUT_S) as client:

            def post(query: str = "") -> asyncio.Future[httpx.Response]:
                url = "/extract?template=vat_invoice&fallback=never" + query
                return asyncio.ensure_future(client.post(url, content=data))

            accepted = [post("&debug_sleep_s=1.5")]
            await _until(lambda: tight.health()["inflight"] == 1)
            accepted.append(post())
            await _until(lambda: tight.health()["inflight"] == 2)
            accepted.append(post())
            await _until(lambda: tight.health()["queue_depth"] == 1)
            rejected = await asyncio.gather(*(post() for _ in range(3)))
            return list(await asyncio.gather(*accepted)), list(rejected)

    accepted, rejected = asyncio.run(scenario())
    assert [r.status_code for r in accepted] == [200, 200, 200]
    for r in rejected:
        body = _assert_error(r, 429)
        assert body["error"] == "queue_full"
        assert int(r.headers["retry-after"]) >= 1


async def _until(check: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


def test_hung_worker_gives_504_and_is_replaced(tight: Server) -> None:
    data = FORM.read_bytes()
    before = tight.pids()
    start = time.monotonic()
    r = tight.client.post(
        "/extract?template=vat_invoice&fallback=never&debug_sleep_s=30", content=data
    )
    elapsed = time.monotonic() - start
    body = _assert_error(r, 504)
    assert body["error"] == "worker_timeout"
    assert elapsed < 10
    deadline = time.monotonic() + 30
    while tight.client.get("/ready").status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = tight.pids()
    tight.worker_pids |= set(after)
    assert len(after) == 1 and after != before
    ok = tight.client.post("/extract?template=vat_invoice&fallback=never", content=data)
    assert ok.status_code == 200


def test_the_party_registry_reaches_every_worker(tight: Server) -> None:
    """``ROI_PARTIES``: the worker (a replacement too: after the hung-worker test) gives the
    registered buyer name, saying how the print read."""
    response = tight.client.post(
        "/extract?template=vat_invoice&fallback=never", content=PARTY_PAGE.read_bytes()
    )
    assert response.status_code == 200, response.text
    buyer = response.json()["pages"][0]["fields"]["buyer_name"]
    print_read = _truth_values(json.loads(PARTY_PAGE.with_suffix(".json").read_text()))
    assert buyer["value"] == print_read["buyer_name"][:-1] + "赟" and buyer["valid"]
    assert buyer["note"].endswith(f"read as {print_read['buyer_name']!r}")


def test_check_print_reaches_every_worker(main: Server, tight: Server) -> None:
    """``ROI_CHECK_PRINT``: the worker (a replacement too) reads the print of the fields the
    QR code states; by default (``main``) they are taken from the code unread."""
    data = PARTY_PAGE.read_bytes()
    for server, source in ((main, "qr"), (tight, "roi")):
        response = server.client.post("/extract?template=vat_invoice&fallback=never", content=data)
        assert response.status_code == 200, response.text
        assert response.json()["pages"][0]["fields"]["invoice_code"]["source"] == source


def test_a_worker_learns_the_parties_when_told_to(main: Server, tight: Server) -> None:
    """``ROI_LEARN_PARTIES`` (``tight``, one worker): after two requests read the same seller,
    a third printing its name a character off is given the learned name; ``main`` does not
    learn: each request stands alone."""
    docs, seller, altered = recurring_invoices("service: recurring parties", 20261205, (4, 5), True)
    for server, expected in ((tight, seller), (main, altered)):
        for doc in docs:
            response = server.client.post(
                "/extract?template=vat_invoice&fallback=never", content=doc.jpeg
            )
            assert response.status_code == 200, response.text
        name = response.json()["pages"][0]["fields"]["seller_name"]
        assert name["value"] == expected and name["valid"], name
        assert (name["note"] or "").startswith("the learned party registry") == (server is tight)


def test_graceful_shutdown_finishes_in_flight(tight: Server) -> None:
    data = FORM.read_bytes()

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(base_url=tight.url, timeout=CALL_TIMEOUT_S) as client:
            pending = asyncio.ensure_future(
                client.post(
                    "/extract?template=vat_invoice&fallback=never&debug_sleep_s=1", content=data
                )
            )
            await _until(lambda: tight.health()["inflight"] == 1)
            tight.proc.send_signal(signal.SIGTERM)
            return await pending

    r = asyncio.run(scenario())
    assert r.status_code == 200, r.text
    # uvicorn re-raises the SIGTERM it handled once it has shut down cleanly
    assert tight.proc.wait(30) in (0, -signal.SIGTERM)
    # (not checked through the log: Litestar logs through a queue thread that an exit can cut)
    for pid in tight.worker_pids:
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of someone else still answers kill(0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


# -- workers that cannot load ---------------------------------------------------------------------


def test_workers_that_cannot_load_are_reported(tmp_path: Path) -> None:
    """A GPU device where ONNX Runtime has no CUDA provider: the API answers, says why the
    workers fail (``/health`` degraded, ``/ready`` 503 naming the provider) and refuses work
    with 503 ``workers_failing`` rather than "models are loading" forever."""
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA provider: the workers would load")
    server = Server("no-cuda", {"ROI_WORKERS": "1", "ROI_DEVICES": "cuda:0"}, tmp_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        health: dict[str, Any] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                health = server.health()
                if health.get("worker_load_errors"):
                    break
            time.sleep(0.2)
        assert health["status"] == "degraded" and health["workers_ready"] == 0, health
        assert "CUDAExecutionProvider is not available" in health["worker_load_errors"]["0"]
        ready = _assert_error(server.client.get("/ready"), 503)
        assert "roi[gpu]" in ready["detail"]
        r = server.client.post("/extract?template=vat_invoice", content=FORM.read_bytes())
        assert _assert_error(r, 503)["error"] == "workers_failing"
        assert r.headers["retry-after"]
    finally:
        server.stop()
