"""The CPUs this process may run on: its affinity, bounded by its cgroup's CPU quota."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity (``taskset``, a container's cpuset) where
    the OS tells it, else every CPU the machine has; at most its cgroup's CPU quota (Docker's
    ``--cpus``, a Kubernetes CPU limit), rounded down, at least 1. ONNX Runtime's default thread
    count and ``os.cpu_count()`` count every CPU of the machine: a process pinned to one ran
    the small model on a 320 px crop in 110 ms with the default's two threads on it, 58 ms with
    one; and a pod limited to 2 CPUs on a 64-core node would start 64 workers, each with the
    models loaded, and be throttled."""
    try:
        cpus = len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity on this OS (macOS, Windows)
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return cpus if quota is None else max(1, min(cpus, math.floor(quota)))


def cpu_quota(root: Path | None = None, proc_cgroup: Path | None = None) -> float | None:
    """CPUs' worth of time this process's cgroup may use (quota / period), the tightest along
    its path up to the hierarchy's root, from cgroup v2's ``cpu.max`` or v1's
    ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``; None where there is no quota or no cgroup
    to read (another OS, an unreadable file). ``root``: where the hierarchies are mounted
    (:data:`CGROUP_ROOT`); ``proc_cgroup``: the process's cgroups (:data:`PROC_CGROUP`)."""
    root = root or CGROUP_ROOT
    try:
        lines = (proc_cgroup or PROC_CGROUP).read_text().splitlines()
    except OSError:
        return None
    quotas: list[float] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2: one unified hierarchy
            quotas += _quotas(root, path, _v2_quota)
            quotas += _quotas(root / "unified", path, _v2_quota)  # v2 beside v1 (hybrid)
        elif "cpu" in controllers.split(","):  # v1: cpu, or cpu and cpuacct mounted together
            for mount in dict.fromkeys((root / controllers, root / "cpu")):  # "cpu": a link
                quotas += _quotas(mount, path, _v1_quota)
    return min(quotas, default=None)


def _quotas(mount: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    """The quotas set on ``path``'s cgroup and every cgroup above it under ``mount`` (where the
    process's path is not under the mount, as in a container whose namespace shows the host's
    path, the mount's own is the container's cgroup)."""
    found = [read(d) for d in [*_up(mount, path), mount] if d.is_dir()]
    return [quota for quota in found if quota is not None]


def _up(mount: Path, path: str) -> list[Path]:
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return [mount.joinpath(*parts[:n]) for n in range(len(parts), 0, -1)]


def _v2_quota(directory: Path) -> float | None:
    """``cpu.max``: ``max 100000`` (no quota) or ``200000 100000`` (2 CPUs)."""
    fields = _read(directory / "cpu.max").split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(directory: Path) -> float | None:
    """``cpu.cfs_quota_us`` (-1: no quota) over ``cpu.cfs_period_us``."""
    return _ratio(_read(directory / "cpu.cfs_quota_us"), _read(directory / "cpu.cfs_period_us"))


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _read(file: Path) -> str:
    try:
        return file.read_text().strip()
    except OSError:
        return ""
