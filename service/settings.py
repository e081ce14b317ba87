"""The service's one settings object: defaults < ``ROI_*`` environment variables < CLI flags."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from extractor.cpus import usable_cpus
from extractor.engines.openvino_runtime import CpuRuntime

ENV_PREFIX = "ROI_"
log = logging.getLogger("roi.service")


class Settings(BaseModel):
    """Everything the service can be told. Each field can be set as ``ROI_<NAME>`` (upper case)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8000
    workers: Annotated[int, Field(ge=0, le=256)] = 0
    """Worker processes on CPU; 0 means one per usable CPU (``extractor.cpus.usable_cpus``: the
    affinity, at most the cgroup's CPU quota). Ignored for CUDA devices."""
    devices: str = "cpu"
    """``cpu`` or a comma-separated list of CUDA devices, e.g. ``cuda:0,cuda:1``."""
    workers_per_device: Annotated[int, Field(ge=1, le=64)] = 1
    """Worker processes per CUDA device (each pinned with CUDA_VISIBLE_DEVICES)."""
    gpu_provider: Literal["cuda", "tensorrt"] = "cuda"
    """How workers run the recogniser on their CUDA device: ONNX Runtime's CUDA provider, or
    its TensorRT provider (fp16; the engine is built when a worker first starts, minutes, and
    kept in ``trt_cache_dir`` for every later start). With ``tensorrt`` the fallback's full-page
    OCR runs on the GPU too (RapidOCR's TensorRT engines); with ``cuda`` it runs on the CPU."""
    trt_cache_dir: Path | None = None
    """Where TensorRT engines are kept (default ``~/.cache/roi/trt``)."""
    cpu_runtime: CpuRuntime = "auto"
    """What runs the small rec model on CPU workers: ``auto`` takes OpenVINO (bfloat16) where
    the CPU computes in bfloat16 (AMX, AVX-512 BF16), else ONNX Runtime
    (``extractor.engines.openvino_runtime``)."""
    fallback_process: Literal["worker", "shared"] = "worker"
    """Where the fallback's full-page OCR runs: ``worker``, in each worker (loaded by the first
    page that needs it); ``shared``, in one process of its own that the CPU workers send their
    fallback pages to, read one at a time: each worker then stays at the ROI path's size (372-388
    instead of 477-504 MB, every vat_invoice fixture, 2 workers, OpenVINO; a worker that reads
    an unregistered invoice photo whole reaches ~660 MB), for a pool that is short of memory,
    at the cost of throughput where many pages take the fallback (``extractor.fullpage_server``,
    docs/service.md)."""
    threads_per_worker: Annotated[int, Field(ge=0, le=256)] = 0
    """ONNX Runtime / OpenCV threads per worker; 0 means cores / workers (at least 1)."""
    engine: str = "ppocr"
    """The recognition engine every worker loads at start; the only one requests may name."""
    parties: Path | None = None
    """A party registry CSV (``extractor.parties``: tax_id, name) every worker checks names and
    tax ids against; read here first, so a bad file stops the service before it starts."""
    check_print: bool = False
    """Read the print of the fields the QR code states too, and flag a field whose print says
    otherwise; by default they are taken from the code unread (``extractor.pipeline``)."""
    learn_parties: bool = False
    """Each worker registers the parties (tax id and name) it has read valid alike in two
    requests, for the requests after them (``Extractor(learn_parties=True)``): one company's
    invoices name the same parties again and again. Off by default: a response then depends on
    what its worker read before."""
    max_body_mb: Annotated[float, Field(gt=0, le=1024)] = 20
    max_pages: Annotated[int, Field(ge=1, le=10_000)] = 50
    queue_size: Annotated[int, Field(ge=1, le=100_000)] = 256
    """Requests waiting for a worker beyond those already inside the workers."""
    request_timeout_s: Annotated[float, Field(gt=0)] = 60
    """A worker that makes no progress on a batch for this long is killed (the request: 504)."""
    batch_max_size: Annotated[int, Field(ge=1, le=1024)] = 8
    """Most requests a worker merges into one recognition batch."""
    batch_max_wait_ms: Annotated[float, Field(ge=0, le=10_000)] = 2
    """How long a worker waits for more requests before starting a batch."""
    shutdown_timeout_s: Annotated[float, Field(ge=0)] = 60
    """How long a graceful shutdown waits for queued and in-flight requests."""
    retry_after_s: Annotated[int, Field(ge=1)] = 2
    """The Retry-After sent with 429 and 503."""
    log_level: str = "info"
    expose_worker_pids: bool = False
    """List worker pids in GET /health (for tests and operators)."""
    debug: bool = False
    """Accept the ``debug_sleep_s`` option on /extract (simulates a hung worker; tests only)."""

    @field_validator("devices")
    @classmethod
    def _check_devices(cls, value: str) -> str:
        value = value.strip().lower()
        if value == "cpu":
            return value
        for part in value.split(","):
            kind, _, index = part.strip().partition(":")
            if kind != "cuda" or not index.isdigit():
                raise ValueError(f"device {part!r}: expected 'cpu' or 'cuda:N[,cuda:M...]'")
        return ",".join(p.strip() for p in value.split(","))

    @model_validator(mode="after")
    def _check_gpu_provider(self) -> Settings:
        if self.gpu_provider != "cuda" and not self.uses_gpu:
            raise ValueError(
                f"gpu_provider {self.gpu_provider} runs on CUDA devices: set devices "
                "(--device cuda:0) too"
            )
        return self

    @field_validator("cpu_runtime")
    @classmethod
    def _check_cpu_runtime(cls, value: str) -> str:
        from extractor.engines.openvino_runtime import resolve_cpu_runtime
        from extractor.errors import RoiError

        try:
            resolve_cpu_runtime(value)  # openvino asked for but not installed: before any worker
        except RoiError as exc:
            raise ValueError(str(exc)) from exc
        return value

    @field_validator("parties")
    @classmethod
    def _check_parties(cls, value: Path | None) -> Path | None:
        if value is not None:
            from extractor.errors import RoiError
            from extractor.parties import load_parties

            try:
                load_parties(value)
            except RoiError as exc:
                raise ValueError(str(exc)) from exc
        return value

    @field_validator("log_level")
    @classmethod
    def _check_level(cls, value: str) -> str:
        value = value.lower()
        if value not in {"critical", "error", "warning", "info", "debug"}:
            raise ValueError("log_level: one of critical, error, warning, info, debug")
        return value

    # -- derived ------------------------------------------------------------------------------

    @property
    def device_list(self) -> list[str]:
        return self.devices.split(",")

    @model_validator(mode="after")
    def _check_fallback_process(self) -> Settings:
        if self.fallback_process == "shared" and self.uses_gpu:
            raise ValueError(
                "fallback_process shared is for CPU pools: on CUDA devices each worker reads "
                "its own fallback pages (leave fallback_process at worker)"
            )
        return self

    @property
    def fallback_threads(self) -> int:
        """Threads of the shared fallback process: twice a worker's (a worker waiting for it
        leaves its cores idle), at most the machine's cores. Its detector's threads sleep
        rather than spin between tasks, so that they do not take the cores of workers still
        busy: on 2 cores, 2 workers, 15% fewer documents/s (two runs; 22-28% since pages that
        are no invoice are told at a glance, which made the workers' own fallback cheaper) than
        with the fallback in each worker, against 25-31% on one thread and 38% on 2 spinning
        (docs/benchmarks.md)."""
        return max(1, min(usable_cpus(), 2 * self.worker_threads))

    @property
    def uses_gpu(self) -> bool:
        return self.devices != "cpu"

    @property
    def worker_count(self) -> int:
        if self.uses_gpu:
            return len(self.device_list) * self.workers_per_device
        return self.workers or usable_cpus()

    @property
    def worker_threads(self) -> int:
        if self.threads_per_worker:
            return self.threads_per_worker
        return max(1, usable_cpus() // self.worker_count)

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    def device_for(self, slot: int) -> str:
        """The device of worker slot ``slot`` (workers_per_device consecutive slots per GPU)."""
        if not self.uses_gpu:
            return "cpu"
        return self.device_list[(slot // self.workers_per_device) % len(self.device_list)]

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def load(cls, environ: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then ``ROI_*`` variables from ``environ``, then ``overrides`` (not None)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(_problem(e["loc"], e["msg"]) for e in exc.errors())
            raise ValueError(f"invalid service settings: {problems}") from exc

    def describe(self) -> str:
        data = self.model_dump(mode="json")
        data["worker_count"] = self.worker_count
        data["worker_threads"] = self.worker_threads
        return json.dumps(data, sort_keys=True)

    def log(self) -> None:
        log.info("service settings: %s", self.describe())


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    """One validation error as ``setting: what is wrong`` (a check of several settings names
    them itself)."""
    message = message.removeprefix("Value error, ")
    return f"{'.'.join(str(p) for p in loc)}: {message}" if loc else message
