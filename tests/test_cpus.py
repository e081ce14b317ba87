"""Threads follow the CPUs a process may run on, not the machine's count."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from extractor import cpus
from extractor.cpus import cpu_quota

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


def _cgroup(tmp_path: Path, membership: str, files: dict[str, str]) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    proc = tmp_path / "proc_self_cgroup"
    proc.write_text(membership)
    return root, proc


def test_a_cgroup_v2_quota_is_the_tightest_on_the_path(tmp_path: Path) -> None:
    """Docker's ``--cpus 1.5`` and a Kubernetes limit are a CFS quota, not a cpuset: the
    affinity still counts every CPU of the node. The quota of the process's cgroup and of each
    cgroup above it bound it (a pod's limit sits one level above its container's)."""
    root, proc = _cgroup(
        tmp_path,
        "0::/kubepods/pod1/ctr\n",
        {
            "kubepods/cpu.max": "max 100000\n",
            "kubepods/pod1/cpu.max": "250000 100000\n",
            "kubepods/pod1/ctr/cpu.max": "400000 100000\n",
        },
    )
    assert cpu_quota(root, proc) == 2.5


def test_no_quota_is_none(tmp_path: Path) -> None:
    root, proc = _cgroup(tmp_path, "0::/\n", {"cpu.max": "max 100000\n"})
    assert cpu_quota(root, proc) is None
    assert cpu_quota(root, tmp_path / "missing") is None  # no /proc/self/cgroup: no cgroups


def test_a_cgroup_v1_quota_in_a_container_namespace(tmp_path: Path) -> None:
    """cgroup v1 with cpu and cpuacct mounted together, the process's path the host's (a
    container without a cgroup namespace): its mount is the container's own cgroup."""
    root, proc = _cgroup(
        tmp_path,
        "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
        {
            "cpu,cpuacct/cpu.cfs_quota_us": "50000\n",
            "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            "memory/cpu.cfs_quota_us": "10000\n",  # another controller's files are not read
        },
    )
    assert cpu_quota(root, proc) == 0.5
    unlimited, proc = _cgroup(
        tmp_path / "u",
        "1:cpu:/\n",
        {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"},
    )
    assert cpu_quota(unlimited, proc) is None


def test_usable_cpus_is_the_quota_rounded_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod limited to 1.5 CPUs gets one thread and one worker, not one per node CPU; half a
    CPU still gets one."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for quota, expected in (("150000", 1), ("50000", 1), ("100000000", affinity)):
        root, proc = _cgroup(tmp_path / quota, "0::/\n", {"cpu.max": f"{quota} 100000\n"})
        monkeypatch.setattr(cpus, "CGROUP_ROOT", root)
        monkeypatch.setattr(cpus, "PROC_CGROUP", proc)
        assert cpus.usable_cpus() == expected


def test_a_cgroup_v1_cpu_controller_listed_after_cpuacct(tmp_path: Path) -> None:
    """/proc/self/cgroup may list the joint controller as ``cpuacct,cpu`` while it is mounted
    as ``cpu,cpuacct`` with ``cpu`` a link to it: the quota is read there."""
    root, proc = _cgroup(
        tmp_path,
        "3:cpuacct,cpu:/\n",
        {"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"},
    )
    assert cpu_quota(root, proc) == 3.0
