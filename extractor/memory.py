"""Keep a long-lived worker's resident memory from creeping (glibc's malloc, Linux only).

A worker allocates and frees large buffers all day (documents, page images, crops, model
outputs) from two threads. glibc's malloc gives each thread its own arenas and returns freed
memory to the system only from the top of each heap, so RSS creeps up with fragmentation
although nothing leaks. Two calls keep it flat: at start, at most two arenas; after each batch,
``malloc_trim(0)``, which hands free pages back (measured in docs/reliability.md). Full-page OCR,
the one step that allocates hundreds of MB at once, runs inside :func:`large_buffers_mapped`.
Elsewhere (musl, macOS) all of them are no-ops.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Iterator

M_ARENA_MAX = -8  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_CEILING = 32 << 20
"""The highest mmap threshold glibc's own dynamic adjustment reaches on 64-bit systems
(``DEFAULT_MMAP_THRESHOLD_MAX``): where it stands in a worker that has handled a few pages."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only; musl has no malloc_trim
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(count: int = 2) -> bool:
    """At most ``count`` malloc arenas in this process; True when glibc took it."""
    libc = _libc()
    return bool(libc and libc.mallopt(M_ARENA_MAX, count))


def trim() -> bool:
    """Return free heap pages to the system; True when glibc released some."""
    libc = _libc()
    return bool(libc and libc.malloc_trim(0))


@contextlib.contextmanager
def large_buffers_mapped(threshold: int = 1 << 20) -> Iterator[None]:
    """Inside the block, every allocation of ``threshold`` bytes or more is a mapping of its own
    that goes back to the system the moment it is freed, instead of a piece of the heap.

    Full-page OCR allocates activations of every size, hundreds of MB in all; on a heap already
    holding a page's worth of freed buffers they fragment it and the worker's peak RSS grows
    with them. Measured on the fixtures' fallback pages, one thread: peak RSS per page 672 ->
    480 MB, and full-page OCR no slower (1919 vs 1878 ms of CPU per page). Not for the ROI path:
    there the same threshold costs ~30% more CPU per page (fresh mappings are faulted in page by
    page), so on leaving, the threshold goes back to :data:`MMAP_THRESHOLD_CEILING` (setting it
    once turns glibc's dynamic adjustment off for good; at the ceiling the ROI path measured as
    fast as with it) and free pages are handed back. The threshold is process-wide: another
    thread's allocations meanwhile are mapped too, which costs time, never memory."""
    libc = _libc()
    if libc is None:
        yield
        return
    libc.malloc_trim(0)
    libc.mallopt(M_MMAP_THRESHOLD, threshold)
    try:
        yield
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_CEILING)
        libc.malloc_trim(0)
