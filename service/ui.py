"""The template editor at ``/ui``: plain HTML/JS/CSS from ``service/static`` (no build step) and
the JSON endpoints it calls.

* ``GET /ui`` — the editor page; ``/ui/static/*`` its script and style.
* ``GET /ui/api/templates/{name}`` — a template as the YAML's mapping, with its reference image.
* ``POST /ui/api/reference`` — a sample document (multipart ``file``) -> its first page as a
  reference image, the page size in mm and, with ``propose=true``, fields proposed from its
  printed labels (full-page OCR: seconds).
* ``POST /ui/api/try`` — ``{template, reference, scan}`` -> the scan's fields read with the
  in-memory template (extraction runs in this process, in a thread, with its own extractor).
* ``POST /ui/api/save`` — ``{template, reference, overwrite}`` -> ``NAME.yaml`` and ``NAME.png``
  in the templates folder, after the same schema and checks as any template. Names are
  ``[a-z][a-z0-9_]*``; nothing else reaches the file system.

Images travel as ``data:`` URLs in JSON: one format for the canvas, uploads and saves.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import tempfile
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from litestar import MediaType, Response, get, post
from litestar.datastructures import State, UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException
from litestar.params import Body
from litestar.static_files import create_static_files_router
from pydantic import ValidationError

from extractor.authoring.check import overlaps, static_problems
from extractor.authoring.yamlio import dump_template, template_data, write_template_yaml
from extractor.errors import RoiError, TemplateNotFoundError
from extractor.templates import _NAME_RE, Template, TemplateStore, _describe

STATIC_DIR = Path(__file__).resolve().parent / "static"
_WORK_DIR = Path(tempfile.gettempdir()) / "roi-ui"
_lock = threading.Lock()
_extractor: Any = None


def _fail(status: int, detail: str) -> HTTPException:
    return HTTPException(status_code=status, detail=detail)


def _png_data_url(image: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", image)
    if not ok:
        raise _fail(500, "cannot encode the reference image")
    return "data:image/png;base64," + base64.b64encode(buf.tobytes()).decode()


def _decode_data_url(value: Any, what: str) -> bytes:
    if not isinstance(value, str) or not value.startswith("data:") or "," not in value:
        raise _fail(400, f"{what}: expected a data: URL")
    head, _, payload = value.partition(",")
    if not head.endswith(";base64"):
        raise _fail(400, f"{what}: expected a base64 data: URL")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _fail(400, f"{what}: not valid base64") from None


def _reference_png(value: Any) -> bytes:
    """A reference image from the client, checked to decode, as PNG bytes."""
    data = _decode_data_url(value, "reference")
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise _fail(400, "reference: not a PNG or JPEG image")
    ok, buf = cv2.imencode(".png", image)
    return buf.tobytes() if ok else data


def _validated(data: Any, reference_name: str | None) -> Template:
    """The client's template mapping through the schema (and the checks `check` makes that do
    not need a scan). Problems: 422 with the schema's message."""
    if not isinstance(data, dict):
        raise _fail(400, "template: expected a JSON object")
    data = dict(data)
    if reference_name is not None:
        data["reference_image"] = reference_name
    try:
        template = Template.model_validate(data)
    except ValidationError as exc:
        raise _fail(422, f"template: {_describe(exc, data)}") from None
    return template


def _materialise(template: Template, png: bytes) -> Template:
    """The template with its reference image on disk (a content-addressed scratch folder), so
    that registration can read it."""
    digest = hashlib.sha256(png).hexdigest()[:20]
    folder = _WORK_DIR / digest
    folder.mkdir(parents=True, exist_ok=True)
    image = folder / "reference.png"
    if not image.is_file():
        tmp = folder / f".reference.{threading.get_ident()}.png"
        tmp.write_bytes(png)
        tmp.replace(image)
    updated = template.model_copy(update={"reference_image": image.name})
    return updated.model_copy(update={"source_path": folder / f"{template.name}.yaml"})


def _get_extractor() -> Any:
    global _extractor
    if _extractor is None:
        from extractor.pipeline import Extractor

        # every box read, those of the fields the QR code states too: the editor tries boxes
        _extractor = Extractor(fallback="never", check_print=True)
    return _extractor


def _try(template: Template, scan: bytes) -> dict[str, Any]:
    with _lock:
        result = _get_extractor().extract(scan, template, pages=[1], name="scan")
    page = result.pages[0]
    return {
        "status": page.status,
        "matched": page.matched,
        "match_score": page.match_score,
        "message": page.message,
        "fields": {k: v.model_dump(mode="json") for k, v in page.fields.items()},
    }


def _sample(data: bytes, propose: bool) -> dict[str, Any]:
    from extractor.authoring.propose import load_sample, reference_from_sample

    if propose:
        with _lock:
            image, (w_mm, h_mm), proposals, skew = reference_from_sample(data)
        fields = [p.as_field() for p in proposals]
    else:
        image, (w_mm, h_mm) = load_sample(data)
        fields, skew = [], 0.0
        size = (round(w_mm * 200 / 25.4), round(h_mm * 200 / 25.4))
        if (image.shape[1], image.shape[0]) != size:
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return {
        "reference": _png_data_url(image),
        "page": {"width_mm": w_mm, "height_mm": h_mm},
        "fields": fields,
        "skew_deg": skew,
    }


# -- routes --------------------------------------------------------------------------------------


@get("/ui", include_in_schema=False, media_type=MediaType.HTML)
async def ui_page() -> Response[bytes]:
    html = await asyncio.to_thread((STATIC_DIR / "index.html").read_bytes)
    return Response(html, media_type=MediaType.HTML, headers={"Cache-Control": "no-store"})


@get("/ui/api/templates/{template_name:str}", include_in_schema=False)
async def ui_template(state: State, template_name: str) -> dict[str, Any]:
    store: TemplateStore = state.templates
    try:
        template = await asyncio.to_thread(store.get, template_name)
    except TemplateNotFoundError as exc:
        raise _fail(404, str(exc)) from None
    path = template.reference_image_path
    image = await asyncio.to_thread(cv2.imread, str(path)) if path is not None else None
    return {
        "template": template_data(template),
        "reference": _png_data_url(image) if image is not None else None,
    }


@post("/ui/api/reference", include_in_schema=False, status_code=200)
async def ui_reference(
    data: dict[str, Any] = Body(media_type=RequestEncodingType.MULTI_PART),  # noqa: B008
    propose: bool = False,
) -> dict[str, Any]:
    upload = data.get("file")
    if not isinstance(upload, UploadFile):
        raise _fail(400, "send the sample as the multipart part 'file'")
    content = await upload.read()
    try:
        return await asyncio.to_thread(_sample, content, propose)
    except RoiError as exc:
        raise _fail(422, str(exc)) from None


@post("/ui/api/try", include_in_schema=False, status_code=200)
async def ui_try(data: dict[str, Any]) -> dict[str, Any]:
    png = _reference_png(data.get("reference"))
    scan = _decode_data_url(data.get("scan"), "scan")
    template = _materialise(_validated(data.get("template"), None), png)
    try:
        return await asyncio.to_thread(_try, template, scan)
    except RoiError as exc:
        raise _fail(422, str(exc)) from None


@post("/ui/api/save", include_in_schema=False, status_code=200)
async def ui_save(state: State, data: dict[str, Any]) -> dict[str, Any]:
    store: TemplateStore = state.templates
    raw = data.get("template")
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _fail(422, "template name: use [a-z][a-z0-9_]*, at most 64 characters")
    png = _reference_png(data.get("reference"))
    template = _validated(raw, f"{name}.png")
    problems = static_problems(_materialise(template, png))
    blocking = [str(p) for p in problems if p.where.startswith("field ")]
    if blocking:
        raise _fail(422, "; ".join(blocking))
    warnings = [str(p) for p in problems if not p.where.startswith("field ")]
    folder = store.directory
    yaml_path, png_path = folder / f"{name}.yaml", folder / f"{name}.png"
    if (yaml_path.exists() or png_path.exists()) and not data.get("overwrite"):
        raise _fail(409, f"template {name!r} exists; tick 'overwrite' to replace it")
    text = dump_template(
        template_data(template),
        header=["Made in the roi template editor (roi serve, /ui)."],
    )

    def write() -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = png_path.with_name(f".{png_path.name}.tmp")
        tmp.write_bytes(png)
        tmp.replace(png_path)
        write_template_yaml(yaml_path, text)

    await asyncio.to_thread(write)
    return {
        "saved": name,
        "path": str(yaml_path),
        "fields": len(template.fields),
        "warnings": warnings,
    }


@post("/ui/api/validate", include_in_schema=False, status_code=200)
async def ui_validate(data: dict[str, Any]) -> dict[str, Any]:
    """Schema problems and overlapping boxes, without saving."""
    template = _validated(data.get("template"), None)
    return {"ok": True, "overlaps": [list(o) for o in overlaps(template)]}


UI_ROUTES = [
    ui_page,
    ui_template,
    ui_reference,
    ui_try,
    ui_save,
    ui_validate,
    create_static_files_router(
        path="/ui/static", directories=[STATIC_DIR], include_in_schema=False
    ),
]
