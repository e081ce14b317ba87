"""The template editor at /ui on the real server (a subprocess on a free loopback port), driven
by headless Chromium from Debian's packages through Playwright (``make browser`` installs both;
Playwright's own browser downloads are not used). Without Chromium the browser test fails with
what to install: it is not skipped."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from extractor.pipeline import Extractor
from extractor.templates import load_template_file

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ROOT / "fixtures" / "clean"
CHROMIUM = os.environ.get("ROI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 90


def _truth(name: str) -> dict[str, str]:
    data = json.loads((CLEAN / f"{name}.json").read_text(encoding="utf-8"))
    return data["pages"][0]["fields"]


class Server:
    def __init__(self, templates: Path, log_path: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            **os.environ,
            "ROI_HOST": "127.0.0.1",
            "ROI_PORT": str(self.port),
            "ROI_WORKERS": "1",
            "ROI_TEMPLATES_DIR": str(templates),
            "PYTHONUNBUFFERED": "1",
        }
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "service"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(base_url=self.url, timeout=120)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited:\n{self.log_path.read_text(errors='replace')[-3000:]}")
            try:
                if self.client.get("/ready", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        pytest.fail("server not ready")

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def templates_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("templates")
    for name in ("vat_invoice.yaml", "vat_invoice.png"):
        shutil.copy(ROOT / "templates" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def server(templates_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(templates_dir, tmp_path_factory.mktemp("ui") / "server.log")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def _data_url(path: Path, media: str = "image/jpeg") -> str:
    return f"data:{media};base64," + base64.b64encode(path.read_bytes()).decode()


# -- the JSON endpoints --------------------------------------------------------------------------


def test_ui_page_and_static_files(server: Server) -> None:
    page = server.client.get("/ui")
    assert page.status_code == 200 and "roi template editor" in page.text
    assert server.client.get("/ui/static/editor.js").status_code == 200
    assert server.client.get("/ui/static/../app.py").status_code == 404


def test_ui_save_refuses_bad_names_and_invalid_templates(
    server: Server, templates_dir: Path
) -> None:
    loaded = server.client.get("/ui/api/templates/vat_invoice").json()
    template, reference = loaded["template"], loaded["reference"]
    assert reference.startswith("data:image/png;base64,")
    for bad in ("../evil", "Evil", "a/b", "", "x" * 70):
        r = server.client.post(
            "/ui/api/save", json={"template": {**template, "name": bad}, "reference": reference}
        )
        assert r.status_code == 422, (bad, r.text)
    assert not any(p.name.startswith("evil") for p in templates_dir.parent.rglob("*"))
    # the same schema as any template: a box off the page
    broken = json.loads(json.dumps(template))
    broken["name"] = "broken"
    broken["fields"][0]["box"] = [230, 8, 40, 10]
    r = server.client.post("/ui/api/save", json={"template": broken, "reference": reference})
    assert r.status_code == 422 and "outside" in r.json()["detail"]
    # an existing template is replaced only when asked
    r = server.client.post("/ui/api/save", json={"template": template, "reference": reference})
    assert r.status_code == 409
    assert not (templates_dir / "broken.yaml").exists()


def test_ui_try_reads_a_scan_with_the_template_in_memory(server: Server) -> None:
    loaded = server.client.get("/ui/api/templates/vat_invoice").json()
    template = loaded["template"]
    template["fields"] = [f for f in template["fields"] if f["name"] == "invoice_number"]
    template.pop("rules", None)
    template.pop("qr", None)
    template.pop("parties", None)  # pairs fields no longer there (the editor drops them too)
    r = server.client.post(
        "/ui/api/try",
        json={
            "template": template,
            "reference": loaded["reference"],
            "scan": _data_url(CLEAN / "vat_invoice_0002.jpg"),
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["matched"]
    assert body["fields"]["invoice_number"]["value"] == _truth("vat_invoice_0002")["invoice_number"]


# -- the browser ---------------------------------------------------------------------------------


def test_browser_draw_name_save_extract(server: Server, templates_dir: Path) -> None:
    """Open /ui in Chromium, make a template from a sample: draw a box round the invoice number,
    name it, read a second scan with it, save; the saved YAML extracts the field."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: run `make browser`")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: run `make browser` (Debian chromium)")
    sample = CLEAN / "vat_invoice_0001.jpg"
    start = time.perf_counter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1700, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server.url}/ui")
            page.wait_for_selector("#template-select option[value=vat_invoice]", state="attached")
            # a new layout from a sample scan, without proposals: draw the field by hand
            page.uncheck("#propose")
            page.set_input_files("#sample-file", str(sample))
            page.wait_for_function("document.getElementById('status').className === 'ok'")
            width_mm = page.evaluate("roiEditor.base.page.width_mm")
            assert page.evaluate("roiEditor.fields.length") == 0
            box = page.locator("#canvas").bounding_box()
            assert box is not None
            scale = box["width"] / width_mm

            def at(x_mm: float, y_mm: float) -> tuple[float, float]:
                return box["x"] + x_mm * scale, box["y"] + y_mm * scale

            page.mouse.move(*at(170, 8.2))
            page.mouse.down()
            page.mouse.move(*at(190, 12), steps=4)
            page.mouse.move(*at(214, 16.3), steps=4)
            page.mouse.up()
            assert page.evaluate("roiEditor.fields.length") == 1
            drawn = page.evaluate("roiEditor.fields[0].box")
            assert drawn == pytest.approx([170, 8.2, 44, 8.1], abs=0.3)
            page.fill("#field-name", "invoice_no")
            page.fill("#field-label", "发票号码")
            page.select_option("#field-kind", "code")
            page.fill("#field-allowlist", "digits")
            page.fill("#field-regex", r"^\d{8}$")
            # read another scan with the template as drawn
            page.set_input_files("#scan-file", str(CLEAN / "vat_invoice_0002.jpg"))
            page.click("#try")
            want = _truth("vat_invoice_0002")["invoice_number"]
            row = page.locator("#fields tr[data-name=invoice_no] td.value")
            row.wait_for(timeout=60_000)
            page.wait_for_function(
                f"document.querySelector('#fields tr[data-name=invoice_no] td.value')"
                f".textContent === '{want}'",
                timeout=60_000,
            )
            # save
            page.fill("#name", "ui_layout")
            page.click("#save")
            page.wait_for_function(
                "document.getElementById('status').textContent.startsWith('Saved')",
                timeout=30_000,
            )
            # a shipped template loaded and saved under a new name keeps every field's options
            page.select_option("#template-select", "vat_invoice")
            page.click("#load-template")
            page.wait_for_function("roiEditor.fields.length === 12", timeout=30_000)
            page.fill("#name", "ui_vat")
            page.click("#save")
            page.wait_for_function(
                "document.getElementById('status').textContent.startsWith('Saved ui_vat')",
                timeout=30_000,
            )
            # a field renamed: what names it (a party, the name printed in column) follows
            page.click("#fields tr[data-name=seller_tax_id]")
            page.fill("#field-name", "seller_tin")
            page.fill("#name", "ui_vat_renamed")
            page.click("#save")
            page.wait_for_function(
                "document.getElementById('status').textContent.startsWith('Saved ui_vat_renamed')",
                timeout=30_000,
            )
            assert not errors, errors
        finally:
            browser.close()
    browser_s = time.perf_counter() - start
    saved = templates_dir / "ui_layout.yaml"
    assert saved.is_file() and (templates_dir / "ui_layout.png").is_file()
    template = load_template_file(saved)
    assert [f.name for f in template.fields] == ["invoice_no"]
    assert template.field("invoice_no").kind == "code"
    shipped = load_template_file(ROOT / "templates" / "vat_invoice.yaml")
    saved_vat = load_template_file(templates_dir / "ui_vat.yaml")
    assert saved_vat.fields == shipped.fields
    assert saved_vat.parties == shipped.parties  # the editor keeps the pairs its fields hold
    renamed = load_template_file(templates_dir / "ui_vat_renamed.yaml")
    assert renamed.field("seller_name").starts_with == "seller_tin"
    assert renamed.parties[1].tax_id == "seller_tin"
    result = Extractor(fallback="never").extract(CLEAN / "vat_invoice_0003.jpg", template)
    got = result.pages[0].fields["invoice_no"]
    assert got.valid and got.value == _truth("vat_invoice_0003")["invoice_number"]
    print(f"browser session {browser_s:.1f} s")
