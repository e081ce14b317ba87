"""extractor.memory: freed heap pages go back to the system (glibc, Linux)."""

import subprocess
import sys
import textwrap

import pytest

# Run in a fresh interpreter: RSS of the test process itself depends on everything before it.
SCRIPT = textwrap.dedent(
    """
    from extractor import memory

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


MAPPED = textwrap.dedent(
    """
    from extractor import memory

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    def churn():  # ~200 MB in 2 MB buffers, all freed but the last one
        blocks = [bytearray(2 << 20) for _ in range(100)]
        del blocks[:-1]
        return blocks

    start = rss_mb()
    del churn()[:]  # freeing mapped 2 MB buffers raises glibc's dynamic threshold over them
    with memory.large_buffers_mapped():
        kept = churn()
        inside = rss_mb()
    del kept
    kept = churn()  # after the block, 2 MB buffers come from the heap: the freed ones stay
    print(start, inside, rss_mb())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_large_buffers_are_handed_back_on_free_only_inside_the_block() -> None:
    out = subprocess.run(
        [sys.executable, "-c", MAPPED], capture_output=True, text=True, check=True
    ).stdout
    start, inside, after = map(int, out.split())
    assert inside < start + 30  # each freed buffer went back at once
    assert after > start + 150  # without the block they would have stayed, as they do here
