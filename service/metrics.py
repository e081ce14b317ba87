"""Prometheus metrics of one app instance (its own registry, so apps in one process don't clash)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30, 60, 120)
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "roi_requests", "POST /extract requests by HTTP status.", ["status"], registry=r
        )
        self.latency = Histogram(
            "roi_request_duration_seconds",
            "POST /extract latency, body read to response, by outcome.",
            ["outcome"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.pages = Counter(
            "roi_pages", "Pages extracted, by page status and field source.", ["status"], registry=r
        )
        self.fallback_pages = Counter(
            "roi_fallback_pages",
            "Pages with at least one field read by the fallback path (full-page OCR).",
            registry=r,
        )
        self.batch_requests = Histogram(
            "roi_batch_requests",
            "Requests merged into one worker batch.",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.batch_pages = Histogram(
            "roi_batch_pages", "Pages in one worker batch.", buckets=BATCH_BUCKETS, registry=r
        )
        self.batch_crops = Histogram(
            "roi_batch_crops",
            "Crops in one recognition call.",
            buckets=(1, 8, 16, 32, 64, 128, 256, 512, 1024),
            registry=r,
        )
        self.restarts = Counter(
            "roi_worker_restarts", "Workers replaced after dying or hanging.", registry=r
        )
        self.queue_depth = Gauge("roi_queue_depth", "Requests waiting for a worker.", registry=r)
        self.inflight = Gauge("roi_inflight", "Requests inside workers.", registry=r)
        self.workers_ready = Gauge("roi_workers_ready", "Workers with models loaded.", registry=r)
        self.workers = Gauge("roi_workers", "Configured worker processes.", registry=r)

    def bind(
        self,
        queue_depth: Callable[[], float],
        inflight: Callable[[], float],
        ready: Callable[[], float],
        size: int,
    ) -> None:
        self.queue_depth.set_function(queue_depth)
        self.inflight.set_function(inflight)
        self.workers_ready.set_function(ready)
        self.workers.set(size)

    def observe_batch(self, stats: dict[str, Any]) -> None:
        self.batch_requests.observe(stats.get("requests", 0))
        self.batch_pages.observe(stats.get("pages", 0))
        self.batch_crops.observe(stats.get("crops", 0))

    def render(self) -> bytes:
        return generate_latest(self.registry)
