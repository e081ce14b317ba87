"""The HTTP API (Litestar). All decoding and extraction happens in the worker pool's processes;
the event loop only reads request bodies, sniffs the first bytes and moves bytes around.

Every error is JSON: ``{"error": "<slug>", "detail": "<what happened, for a person>"}``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from litestar import Litestar, MediaType, Request, Response, get, post
from litestar.datastructures import State, UploadFile
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.params import Parameter
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from extractor.engines import ENGINES
from extractor.errors import InputError, RoiError, TemplateError, TemplateNotFoundError
from extractor.loading import sniff
from extractor.result import DocumentResult
from extractor.templates import AUTO, TemplateStore
from service.metrics import Metrics
from service.pool import PoolError, WorkerPool
from service.settings import Settings
from service.ui import UI_ROUTES
from service.worker import JobSpec, error_payload

log = logging.getLogger("roi.service")

MULTIPART_OVERHEAD = 64 * 1024
"""Allowance for multipart headers and boundaries on top of the document size limit."""
MAX_PAGE_SPAN = 10_000

_SLUGS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "queue_full",
    500: "internal_error",
    503: "unavailable",
    504: "timeout",
}


class ApiError(Exception):
    def __init__(
        self, status: int, error: str, detail: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.headers = headers or {}


def _error_response(
    status: int, error: str, detail: str, headers: dict[str, str] | None = None
) -> Response[dict[str, str]]:
    return Response(
        {"error": error, "detail": detail},
        status_code=status,
        media_type=MediaType.JSON,
        headers=headers or {},
    )


def _handle_api_error(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    assert isinstance(exc, ApiError | PoolError)
    headers = dict(getattr(exc, "headers", {}) or {})
    retry_after = getattr(exc, "retry_after", None)
    if retry_after:
        headers["Retry-After"] = str(retry_after)
    return _error_response(exc.status, exc.error, exc.detail, headers)


def _handle_http_exception(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[dict[str, str]]:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    detail = str(exc.detail or "")
    if status == 413:
        limit = request.app.state.settings.max_body_mb
        detail = f"the request body is over the limit of {limit:g} MB"
    elif isinstance(exc, ValidationException) and isinstance(exc.extra, list):
        problems = [
            f"{e.get('key')}: {e.get('message')}" if e.get("key") else str(e.get("message"))
            for e in exc.extra
            if isinstance(e, dict)
        ]
        if problems:
            detail = "invalid request: " + "; ".join(problems)
    elif status == 404 and detail.strip(". ").lower() in ("", "not found"):
        detail = f"no such endpoint: {request.method} {request.url.path}"
    headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"}
    return _error_response(status, _SLUGS.get(status, "error"), detail, headers)


def _handle_unexpected(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    log.exception("unhandled error in a request", exc_info=exc)
    return _error_response(
        500, "internal_error", f"the server failed unexpectedly ({type(exc).__name__})"
    )


# -- request options ---------------------------------------------------------------------------

_PAGES_RE = re.compile(r"^\s*\d+\s*(-\s*\d+\s*)?(,\s*\d+\s*(-\s*\d+\s*)?)*$")


def parse_pages(text: str | None) -> list[int] | None:
    """``"1,3-4"`` -> ``[1, 3, 4]`` (1-based, sorted, unique); None or blank -> None."""
    if text is None or not text.strip():
        return None
    if not _PAGES_RE.match(text):
        raise ApiError(
            400, "bad_request", f"pages: {text!r} is not a page list like '1,3-4' (1-based)"
        )
    pages: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        a = int(first)
        b = int(last) if last.strip() else a
        if a < 1 or b < a:
            raise ApiError(
                400, "bad_request", f"pages: {part.strip()!r} is not a valid range (1-based)"
            )
        if b - a + len(pages) > MAX_PAGE_SPAN:
            raise ApiError(400, "bad_request", f"pages: more than {MAX_PAGE_SPAN} pages asked for")
        pages.update(range(a, b + 1))
    return sorted(pages)


class JsonDocument(BaseModel):
    """A document sent as JSON, as cloud OCR APIs take one: its bytes in base64 (standard or
    URL-safe alphabet, line breaks allowed, or a ``data:`` URL) and, optionally, its name."""

    model_config = ConfigDict(extra="ignore")

    file: str = Field(description="the document (PDF, PNG, JPEG...) in base64, or a data: URL")
    name: str | None = Field(default=None, description="the file name to report")

    def decoded(self) -> bytes:
        text = self.file.partition(",")[2] if self.file.startswith("data:") else self.file
        text = "".join(text.split())
        altchars = b"-_" if "-" in text or "_" in text else None
        try:
            return base64.b64decode(text + "=" * (-len(text) % 4), altchars, validate=True)
        except binascii.Error as exc:
            raise ApiError(400, "bad_request", f"file: not base64 ({exc})") from None


JSON_SHAPE = '{"file": "<the document in base64>", "name": "<file name, optional>"}'


def _base64_size(size: int) -> int:
    return 4 * -(-size // 3)


async def _read_document(request: Request[Any, Any, Any], limit: int) -> tuple[bytes, str | None]:
    """The document's bytes and file name: from a multipart ``file`` part, a JSON body
    (:class:`JsonDocument`) or the raw body. Over ``limit`` bytes is a 413, counted as the body
    arrives (a JSON body's base64 a third more)."""
    media_type, _ = request.content_type
    if media_type == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ApiError(
                400,
                "bad_request",
                "multipart requests carry the document in a part named 'file'",
            )
        data = await upload.read()
        name = upload.filename
        await upload.close()
    elif media_type == "application/json":
        body = await _read_body(request, _base64_size(limit) + MULTIPART_OVERHEAD, limit)
        data, name = await asyncio.to_thread(_json_document, body)
    else:
        data, name = await _read_body(request, limit, limit), None
    if len(data) > limit:
        raise _too_large(limit)
    return data, name


async def _read_body(request: Request[Any, Any, Any], most: int, limit: int) -> bytes:
    """The request's body, refused (413, the document's ``limit`` named) once past ``most``
    bytes: by its Content-Length before reading, else as the bytes arrive."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > most:
        raise _too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _json_document(body: bytes) -> tuple[bytes, str | None]:
    try:
        document = JsonDocument.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        problem = f"{where}: {first['msg']}" if where else first["msg"]
        raise ApiError(400, "bad_request", f"a JSON body is {JSON_SHAPE}: {problem}") from None
    return document.decoded(), document.name


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "too_large", f"the document is over the limit of {limit / 1048576:g} MB")


# -- routes --------------------------------------------------------------------------------------


@post(
    "/extract",
    summary="Extract a template's fields from one document",
    description=(
        "The document (PDF, OFD, PNG, JPEG, TIFF, HEIC, WebP or AVIF, judged by its content) is "
        "the multipart part `file`, a JSON body " + JSON_SHAPE + " (application/json), or the "
        "raw request body with its own content type. Returns one "
        "result per page. `fallback`: `auto` (default) runs full-page OCR when a page does not "
        "match its template or a required field fails validation, `always` runs it on every "
        "page, `never` keeps to the template path; each field's `source` says which path "
        "produced it."
    ),
    status_code=200,
    tags=["extract"],
)
async def extract(
    request: Request[Any, Any, State],
    state: State,
    template: Annotated[
        str,
        Parameter(description="Template name (GET /templates), or auto to pick one per page."),
    ],
    pages: Annotated[
        str | None, Parameter(description="1-based pages, e.g. '1,3-4'; all when omitted.")
    ] = None,
    engine: Annotated[
        str | None, Parameter(description="Must be the engine the service runs.")
    ] = None,
    fallback: Annotated[
        Literal["auto", "never", "always"],
        Parameter(description="When full-page OCR may run: auto, never or always."),
    ] = "auto",
    name: Annotated[
        str | None, Parameter(description="File name to report for a raw body.")
    ] = None,
    debug_sleep_s: Annotated[float, Parameter(include_in_schema=False)] = 0.0,
) -> DocumentResult:
    settings: Settings = state.settings
    pool: WorkerPool = state.pool
    page_list = parse_pages(pages)
    if engine is not None and engine != settings.engine:
        if engine not in ENGINES:
            raise ApiError(
                400, "bad_request", f"engine: unknown {engine!r} (known: {', '.join(ENGINES)})"
            )
        raise ApiError(
            400,
            "engine_unavailable",
            f"engine {engine!r} is not loaded by this service (it runs {settings.engine!r})",
        )
    if debug_sleep_s and not settings.debug:
        raise ApiError(400, "bad_request", "debug_sleep_s needs the service's debug mode")
    if template != AUTO:
        try:
            await asyncio.to_thread(state.templates.get, template)
        except TemplateNotFoundError as exc:
            raise ApiError(404, "unknown_template", str(exc)) from None
    data, file_name = await _read_document(request, settings.max_body_bytes)
    try:
        sniff(data)  # the first KiB only: cheap enough for the event loop
    except InputError as exc:
        status, payload = error_payload(exc)
        raise ApiError(status, payload["error"], payload["detail"]) from None
    spec = JobSpec(
        id=pool.new_id(),
        data=data,
        template=template,
        name=name or file_name or "<body>",
        pages=page_list,
        engine=settings.engine,
        fallback=fallback,
        debug_sleep_s=debug_sleep_s,
    )
    del data
    status, payload = await pool.submit(spec)
    if status != 200:
        raise ApiError(status, payload.get("error", "error"), payload.get("detail", ""))
    metrics: Metrics = state.metrics
    for page in payload.get("pages", []):
        metrics.pages.labels(page.get("status", "unknown")).inc()
        if any(f.get("source") == "fallback" for f in page.get("fields", {}).values()):
            metrics.fallback_pages.inc()
    return DocumentResult.model_validate(payload)


@get("/templates", summary="Names and versions of the templates", tags=["templates"])
async def list_templates(state: State) -> list[dict[str, Any]]:
    templates = await asyncio.to_thread(_loadable_templates, state.templates)
    return [
        {"name": t.name, "version": t.version, "title": t.title, "fields": len(t.fields)}
        for t in templates
    ]


def _loadable_templates(store: TemplateStore) -> list[Any]:
    """Every template that loads; a broken file is logged and left out, not a 500 for all."""
    out = []
    for name in store.names():
        try:
            out.append(store.get(name))
        except TemplateError as exc:
            log.warning("template %r left out of GET /templates: %s", name, exc)
    return out


@get("/templates/{template_name:str}", summary="One template, as JSON", tags=["templates"])
async def show_template(state: State, template_name: str) -> dict[str, Any]:
    try:
        template = await asyncio.to_thread(state.templates.get, template_name)
    except TemplateNotFoundError as exc:
        raise ApiError(404, "unknown_template", str(exc)) from None
    return template.model_dump(mode="json")


@get("/health", summary="Alive (the API process answers)", tags=["ops"])
async def health(state: State) -> dict[str, Any]:
    pool: WorkerPool = state.pool
    body: dict[str, Any] = {
        "status": "ok",
        "workers": pool.size,
        "workers_ready": pool.ready_count,
        "queue_depth": pool.queue_depth,
        "inflight": pool.inflight,
        "restarts": pool.restarts,
    }
    if pool.load_errors:  # the API answers, but workers cannot load: say why, for operators
        body["status"] = "degraded"
        body["worker_load_errors"] = {str(s): e for s, e in sorted(pool.load_errors.items())}
    fullpage = pool.fullpage  # the fallback's full-page OCR, shared by the workers
    if fullpage is not None:
        body["fallback_process"] = {"alive": fullpage.alive, "restarts": fullpage.restarts}
    if state.settings.expose_worker_pids:
        body["worker_processes"] = pool.snapshot()
        if fullpage is not None:
            body["fallback_process"]["pid"] = fullpage.pid
    return body


@get("/ready", summary="Every worker has loaded its models", tags=["ops"])
async def ready(state: State) -> Response[dict[str, Any]]:
    pool: WorkerPool = state.pool
    ready, workers_ready = pool.ready, pool.ready_count  # one moment's (no await between)
    if ready:
        body = {"ready": True, "workers": pool.size, "workers_ready": workers_ready}
        return Response(body, media_type=MediaType.JSON)
    return Response(
        {
            "error": "not_ready",
            "detail": f"{workers_ready} of {pool.size} workers have loaded their models"
            + (
                f"; failing to load: {next(iter(pool.load_errors.values()))}"
                if pool.load_errors
                else ""
            ),
        },
        status_code=503,
        media_type=MediaType.JSON,
        headers={"Retry-After": str(state.settings.retry_after_s)},
    )


@get("/metrics", summary="Prometheus metrics", tags=["ops"], include_in_schema=False)
async def metrics(state: State) -> Response[bytes]:
    m: Metrics = state.metrics
    return Response(m.render(), media_type=m.content_type)


# -- request metrics (ASGI middleware, so that errors raised before the handler count too) ------


def _metrics_middleware(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/extract":
            await app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, capture)
        finally:
            m: Metrics = scope["app"].state.metrics
            m.requests.labels(str(status)).inc()
            outcome = "ok" if status < 400 else "client_error" if status < 500 else "server_error"
            m.latency.labels(outcome).observe(time.perf_counter() - start)

    return middleware


# -- the app -------------------------------------------------------------------------------------


def create_app(
    settings: Settings | None = None, templates: TemplateStore | None = None
) -> Litestar:
    """The API with its worker pool started and stopped by the app's lifespan."""
    settings = settings or Settings.load()
    store = templates or TemplateStore()
    metrics_ = Metrics()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        settings.log()
        pool = WorkerPool(
            settings, on_batch=metrics_.observe_batch, on_restart=metrics_.restarts.inc
        )
        metrics_.bind(
            lambda: pool.queue_depth, lambda: pool.inflight, lambda: pool.ready_count, pool.size
        )
        app.state.pool = pool
        await pool.start()
        try:
            yield
        finally:
            log.info("shutting down: finishing queued and in-flight requests")
            await pool.close()

    return Litestar(
        route_handlers=[
            extract,
            list_templates,
            show_template,
            health,
            ready,
            metrics,
            *UI_ROUTES,  # the template editor at /ui (service/ui.py)
        ],
        lifespan=[lifespan],
        state=State({"settings": settings, "templates": store, "metrics": metrics_}),
        # a JSON body's base64 (_read_document counts each kind of body against its own limit)
        request_max_body_size=_base64_size(settings.max_body_bytes) + MULTIPART_OVERHEAD,
        middleware=[_metrics_middleware],
        exception_handlers={
            ApiError: _handle_api_error,
            PoolError: _handle_api_error,
            HTTPException: _handle_http_exception,
            RoiError: _handle_roi_error,
            Exception: _handle_unexpected,
        },
        openapi_config=OpenAPIConfig(
            title="roi",
            version="0.1.0",
            description="Key fields out of scanned invoices, ROI-first.",
            path="/schema",
        ),
        debug=False,
    )


def _handle_roi_error(_: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, str]]:
    status, payload = error_payload(exc)
    return _error_response(status, payload["error"], payload["detail"])
