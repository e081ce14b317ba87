"""Hostile requests through the real server on 127.0.0.1: bombs and broken documents are answered
413/415/422 JSON (never 500, never a hang, no worker lost), template names cannot reach the file
system, YAML is safe-loaded, and a template broken on disk gives a clear error, not half a template.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import test_hostile as h

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ROOT / "fixtures" / "clean" / "vat_invoice_0001.jpg"
CALL_TIMEOUT_S = 60


def _soak_module() -> Any:
    spec = importlib.util.spec_from_file_location("roi_bench_soak", ROOT / "bench" / "soak.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


soak = _soak_module()


@pytest.fixture(scope="module")
def templates_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("templates")
    for name in ("vat_invoice.yaml", "vat_invoice.png"):
        shutil.copy(ROOT / "templates" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def server(templates_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    env = {
        "ROI_WORKERS": "1",
        "ROI_MAX_BODY_MB": "4",
        "ROI_MAX_PAGES": "5",
        "ROI_REQUEST_TIMEOUT_S": "30",
        "ROI_TEMPLATES_DIR": str(templates_dir),
    }
    log = tmp_path_factory.mktemp("hostile-api") / "server.log"
    with soak.running_server(env, log) as s:
        yield s


@pytest.fixture(scope="module")
def client(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=CALL_TIMEOUT_S) as c:
        yield c


def _json_error(r: httpx.Response, *statuses: int) -> dict[str, Any]:
    assert r.status_code in statuses, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json"), r.headers
    body = r.json()
    assert set(body) == {"error", "detail"} and body["error"] and body["detail"], body
    assert "Traceback" not in r.text
    return body


HOSTILE_OVER_HTTP = {
    "png_60000x60000_header": (h.png_header_bomb, 422, "document_too_large"),
    "jpeg_60000x60000_junk_before_sof": (
        lambda: h.jpeg_header_bomb(junk=True),
        422,
        "document_too_large",
    ),
    "tiff_60000x60000_header": (lambda: h.tiff([(60000, 60000)]), 422, "document_too_large"),
    "tiff_300_deflated_2000x2000_pages": (
        lambda: h.tiff([(2000, 2000)] * 300, deflate=True),
        422,
        "document_too_large",
    ),
    "pdf_mediabox_1e6_pt": (lambda: h.pdf_page("0 0 1000000 1000000"), 422, "document_too_large"),
    "pdf_page_count_2e9": (lambda: h.pdf_page(count=2_000_000_000), 422, "corrupt_document"),
    "pdf_kids_cycle": (h.pdf_kids_cycle, 422, "corrupt_document"),
    "pdf_encrypted_user_password": (
        lambda: h.pdf_encrypted("secret"),
        422,
        "unreadable_document",
    ),
    "pdf_6_pages_over_limit_5": (lambda: h.pdf_blank(6), 422, "document_too_large"),
    "zero_bytes": (lambda: b"", 422, "corrupt_document"),
    "heic_truncated": (lambda: h.photo("HEIF")[:300], 422, "corrupt_document"),
    "webp_16384x16384_canvas": (h.webp_header_bomb, 422, "document_too_large"),
    "text_named_pdf": (lambda: b"just text", 415, "unsupported_media_type"),
    "ofd_package_naming_no_document": (
        lambda: h.zipped("OFD.xml", "Doc_0/Doc.xml"),
        422,
        "corrupt_document",
    ),
    "png_over_body_limit": (lambda: b"\x89PNG\r\n\x1a\n" + b"\0" * (5 << 20), 413, "too_large"),
}


def test_hostile_documents_answered_with_json_4xx(server: Any, client: httpx.Client) -> None:
    answers: dict[str, tuple[int, str, float]] = {}
    for name, (build, status, error) in HOSTILE_OVER_HTTP.items():
        start = time.monotonic()
        r = client.post(
            "/extract",
            params={"template": "vat_invoice", "fallback": "never", "name": name},
            files={"file": (f"{name}.pdf", build())},
        )
        elapsed = time.monotonic() - start
        body = _json_error(r, status)
        assert body["error"] == error, (name, body)
        assert elapsed < 20, (name, elapsed)
        answers[name] = (r.status_code, body["error"], elapsed)
    health = client.get("/health").json()
    assert health["restarts"] == 0 and health["workers_ready"] == 1, health  # no worker lost
    ok = client.post("/extract?template=vat_invoice&fallback=never", content=CLEAN.read_bytes())
    assert ok.status_code == 200, ok.text


EVIL_NAMES = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%252e%252e%252fetc%252fpasswd",
    "..\\..\\etc\\passwd",
    "/etc/passwd",
    "%2Fetc%2Fpasswd",
    "vat_invoice%00.yaml",
    "vat_invoice.yaml",
    "./vat_invoice",
    "VAT_INVOICE",
    "vat_invoice/",
    "a" * 5000,
    "~root",
    "$(id)",
]


def _raw_get(server: Any, path: str) -> tuple[int, bytes]:
    """GET ``path`` byte for byte (httpx would remove dot segments before sending)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        sock.sendall(head.encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def test_template_names_never_reach_the_file_system(server: Any, client: httpx.Client) -> None:
    for evil in EVIL_NAMES:
        path = client.build_request("GET", f"/templates/{evil}").url.path
        if path.rstrip("/") == "/templates/vat_invoice":
            continue  # ./vat_invoice, vat_invoice/: the same name after normalising, harmless
        r = client.get(f"/templates/{evil}")
        assert r.status_code in (404, 400), (evil, r.status_code, r.text[:200])
        assert "root:" not in r.text
        r = client.post(
            "/extract",
            params={"template": evil.replace("%", "%25") if "%" in evil else evil},
            content=CLEAN.read_bytes(),
        )
        body = _json_error(r, 400, 404)
        assert "root:" not in r.text, evil
        assert body["error"] in ("unknown_template", "bad_request", "not_found"), (evil, body)
    for raw in ("/templates/../../etc/passwd", "/templates/..%2f..%2fetc%2fpasswd",
                "/templates/%2e%2e/%2e%2e/etc/passwd", "/templates/./../templates/x"):  # fmt: skip
        status, data = _raw_get(server, raw)
        assert status in (400, 404), (raw, data[:300])
        assert b"root:" not in data


def test_yaml_is_safe_loaded(client: httpx.Client, templates_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = templates_dir / "evil.yaml"
    evil.write_text(f'!!python/object/apply:os.system ["touch {marker}"]\n', encoding="utf-8")
    try:
        r = client.get("/templates/evil")
        body = _json_error(r, 500)
        assert body["error"] == "template_error" and "evil.yaml" in body["detail"], body
        r = client.post("/extract?template=evil&fallback=never", content=CLEAN.read_bytes())
        assert _json_error(r, 500)["error"] == "template_error"
        listed = client.get("/templates")  # one broken file does not take the list down
        assert listed.status_code == 200, listed.text
        assert [t["name"] for t in listed.json()] == ["vat_invoice"]
        assert not marker.exists()
    finally:
        evil.unlink()


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def test_template_broken_on_disk_is_refused_then_healed(
    client: httpx.Client, templates_dir: Path
) -> None:
    good = (ROOT / "templates" / "vat_invoice.yaml").read_text(encoding="utf-8")
    good = good.replace("name: vat_invoice\n", "name: edited\n", 1)
    path = templates_dir / "edited.yaml"
    data = CLEAN.read_bytes()
    _replace(path, good)
    try:
        first = client.post("/extract?template=edited&fallback=never", content=data)
        assert first.status_code == 200, first.text
        fields = set(first.json()["pages"][0]["fields"])
        assert client.get("/templates/edited").json()["name"] == "edited"

        # Broken YAML (an edit saved half-way through a list): refused with the file named.
        _replace(path, good[: good.index("fields:")] + "fields:\n  - name: [unclosed\n")
        for r in (
            client.get("/templates/edited"),
            client.post("/extract?template=edited&fallback=never", content=data),
        ):
            body = _json_error(r, 500)
            assert body["error"] == "template_error" and "edited.yaml" in body["detail"], body

        # Valid YAML that breaks the schema (a rule naming a field that is gone): refused too.
        cut = good.index("  - name: buyer_name")
        rules = good.index("rules:")
        _replace(path, good[:cut] + good[rules:])
        body = _json_error(client.get("/templates/edited"), 500)
        assert "unknown fields" in body["detail"], body

        # Fixed again: served in full, by the API process and by the worker.
        _replace(path, good)
        again = client.post("/extract?template=edited&fallback=never", content=data)
        assert again.status_code == 200, again.text
        assert set(again.json()["pages"][0]["fields"]) == fields
    finally:
        path.unlink(missing_ok=True)
