"""service.memory: freed heap pages go back to the system (glibc, Linux)."""

import subprocess
import sys
import textwrap

import pytest

# Run in a fresh interpreter: RSS of the test process itself depends on everything before it.
SCRIPT = textwrap.dedent(
    """
    from service import memory

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    assert memory.limit_arenas()
    blocks = [bytearray(64 * 1024) for _ in range(3000)]  # ~190 MB of heap (under mmap's 128 KB)
    del blocks[:-1]  # the last block keeps the heap's top in use: free() alone cannot shrink it
    freed = rss_mb()
    assert memory.trim()
    print(freed, rss_mb())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_hands_freed_heap_pages_back() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    ).stdout
    freed, trimmed = map(int, out.split())
    assert freed > 150  # freed but still resident: the worker's creep, in small
    assert trimmed < freed - 120
