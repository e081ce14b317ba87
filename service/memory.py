"""Keep a long-lived worker's resident memory from creeping (glibc's malloc, Linux only).

A worker allocates and frees large buffers all day (documents, page images, crops, model
outputs) from two threads. glibc's malloc gives each thread its own arenas and returns freed
memory to the system only from the top of each heap, so RSS creeps up with fragmentation
although nothing leaks. Two calls keep it flat: at start, at most two arenas; after each batch,
``malloc_trim(0)``, which hands free pages back (measured in docs/reliability.md). Elsewhere
(musl, macOS) both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

M_ARENA_MAX = -8  # mallopt parameter, from glibc's malloc.h


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
