"""The same batch on Ray (extra ``distributed``): Ray Data over the file list, an actor pool of
extractors, outcomes streamed back to the driver, which alone writes outputs and manifest.

Workers open the files by path, so on a multi-node cluster the inputs must be on storage every
node mounts at the same path, and roi must be installed on every node.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from extractor.batch.inputs import Document
from extractor.batch.worker import BatchWorker, Outcome
from extractor.errors import RoiError

if TYPE_CHECKING:
    from extractor.parties import Parties
    from extractor.pipeline import FallbackMode


class RayExtractor:
    """A Ray Data actor: one engine per actor, a batch of tasks in, their outcomes out."""

    def __init__(
        self,
        engine: str,
        dpi: int,
        threads: int,
        provider: str | None,
        fallback: FallbackMode = "auto",
        parties: Parties | None = None,
        check_print: bool = False,
        learn_parties: bool = False,
    ) -> None:
        self.worker = BatchWorker(
            engine, dpi, threads, provider, fallback, parties, check_print, learn_parties
        )

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[str]]:
        outcomes: dict[str, list[str]] = {"key": [], "sha256": [], "outcome": []}
        for key, name, sha, template in zip(
            batch["key"], batch["name"], batch["sha256"], batch["template"], strict=True
        ):
            task = {
                "path": str(key),
                "name": str(name),
                "sha256": str(sha),
                "template": str(template),
            }
            outcomes["key"].append(str(key))
            outcomes["sha256"].append(str(sha))
            outcomes["outcome"].append(json.dumps(self.worker.process(task)))
        return outcomes


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise RoiError(
            "--ray needs Ray Data: pip install 'roi[distributed]' (or 'ray[data]')"
        ) from exc
    return ray


def run_ray(
    docs: Sequence[Document],
    template: str,
    *,
    engine: str,
    dpi: int,
    workers: int,
    address: str | None,
    fallback: FallbackMode = "auto",
    provider: str | None = None,
    parties: Parties | None = None,
    check_print: bool = False,
    learn_parties: bool = False,
) -> Iterator[tuple[Document, Outcome]]:
    """Yield ``(document, outcome)`` as Ray finishes documents.

    ``address`` None starts a local Ray instance sized to ``workers``; otherwise it connects
    (``auto``, ``ray://host:10001`` or ``host:6379``). ``provider`` None: ONNX Runtime's CUDA
    provider when the cluster has GPUs (ppocr engine), else the CPU.
    """
    if not docs:
        return
    ray = _ray()
    started = False
    if not ray.is_initialized():
        init: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if address is None:
            init["num_cpus"] = max(workers, os.cpu_count() or 1)
        else:
            init["address"] = address
        try:
            ray.init(**init)
        except Exception as exc:
            raise RoiError(f"cannot start or reach Ray ({address or 'local'}): {exc}") from exc
        started = True
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        gpus = float(ray.cluster_resources().get("GPU", 0))
        if provider is None and gpus >= 1 and engine == "ppocr":
            provider = "cuda"
        on_gpu = provider in ("cuda", "tensorrt")
        items = [
            {"key": d.key, "name": d.path, "sha256": d.sha256, "template": template} for d in docs
        ]
        by_key = {(d.key, d.sha256): d for d in docs}
        ds = ray.data.from_items(items, override_num_blocks=len(items))
        ds = ds.map_batches(
            RayExtractor,
            fn_constructor_kwargs={
                "engine": engine,
                "dpi": dpi,
                "threads": 1,
                "provider": provider,
                "fallback": fallback,
                "parties": parties,
                "check_print": check_print,
                "learn_parties": learn_parties,
            },
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=1,
            num_gpus=1 if on_gpu else 0,
        )
        for row in ds.iter_rows():
            yield by_key[(row["key"], row["sha256"])], json.loads(row["outcome"])
    finally:
        if started:
            ray.shutdown()
