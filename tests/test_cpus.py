"""Threads follow the CPUs a process may run on, not the machine's count."""

import os
import subprocess
import sys

import pytest

PINNED = """
import os
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from extractor.batch.local import threads_per_worker
from extractor.cpus import usable_cpus
from extractor.engines.ppocr import PPOCRRecognizer
session = PPOCRRecognizer(threads=0, cpu_runtime="onnxruntime").session
print(usable_cpus(), threads_per_worker(1), session.get_session_options().intra_op_num_threads)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this OS")
def test_a_process_pinned_to_one_cpu_runs_one_thread() -> None:
    """A worker pinned to one CPU (``taskset``, a container's cpuset): ONNX Runtime's default and
    ``os.cpu_count()`` count the machine's CPUs, and two threads on one ran the small model at
    half its speed. The engine's default threads, a batch worker's share and the CPU count are
    the one CPU it may run on."""
    run = subprocess.run(
        [sys.executable, "-c", PINNED], capture_output=True, text=True, check=True, timeout=300
    )
    assert run.stdout.split() == ["1", "1", "1"], run.stderr
