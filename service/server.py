"""Running the service: ``roi serve`` and ``python -m service`` both end up here."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from service.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` flags; each overrides its ``ROI_*`` environment variable."""
    a = parser.add_argument
    a("--host", help="address to listen on (default 127.0.0.1; ROI_HOST)")
    a("--port", type=int, help="port (default 8000; ROI_PORT)")
    a("--workers", type=int, help="worker processes on CPU (default: one per core)")
    a("--device", dest="devices", help="'cpu' (default) or CUDA devices, e.g. cuda:0,cuda:1")
    a("--workers-per-device", type=int, help="worker processes per CUDA device (default 1)")
    a(
        "--gpu-provider",
        choices=("cuda", "tensorrt"),
        help="ONNX Runtime provider on the CUDA devices (default cuda; ROI_GPU_PROVIDER)",
    )
    a("--trt-cache-dir", help="where TensorRT engines are kept (default ~/.cache/roi/trt)")
    a(
        "--fallback-process",
        choices=("worker", "shared"),
        help="the fallback's full-page OCR in each worker, or in one process the CPU workers "
        "share (less memory, fallback pages read one at a time; default worker); "
        "ROI_FALLBACK_PROCESS",
    )
    a("--threads-per-worker", type=int, help="ONNX Runtime threads per worker (default: auto)")
    a("--engine", help="recognition engine every worker loads (default ppocr)")
    a("--parties", help="CSV of known parties (tax_id, name) to check names against; ROI_PARTIES")
    a(
        "--check-print",
        action="store_true",
        default=None,
        help="read the print of fields the QR code states too (slower); ROI_CHECK_PRINT",
    )
    a(
        "--learn-parties",
        action="store_true",
        default=None,
        help="each worker registers the parties it reads in two requests; ROI_LEARN_PARTIES",
    )
    a("--max-body-mb", type=float, help="largest accepted document, MB (default 20)")
    a("--max-pages", type=int, help="most pages per document (default 50)")
    a("--queue-size", type=int, help="requests waiting for a worker before 429 (default 256)")
    a("--request-timeout-s", type=float, help="kill a worker stuck this long (default 60)")
    a("--batch-max-size", type=int, help="requests merged into one recognition batch (default 8)")
    a("--batch-max-wait-ms", type=float, help="wait for more requests before a batch (default 2)")
    a("--log-level", help="critical|error|warning|info|debug (default info)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    names = [
        "host", "port", "workers", "devices", "workers_per_device", "gpu_provider",
        "trt_cache_dir", "fallback_process", "threads_per_worker", "engine", "parties",
        "check_print", "learn_parties", "max_body_mb", "max_pages", "queue_size",
        "request_timeout_s", "batch_max_size", "batch_max_wait_ms", "log_level",
    ]  # fmt: skip
    return Settings.load(**{n: getattr(args, n, None) for n in names})


def serve(settings: Settings) -> None:
    """Run the API with uvicorn (one API process; the pool's workers do the extraction)."""
    import uvicorn

    from service.app import create_app

    level = getattr(logging, settings.log_level.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        lifespan="on",
        timeout_graceful_shutdown=int(settings.shutdown_timeout_s) or None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service", description="Run the roi API.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    serve(settings)
    return 0
