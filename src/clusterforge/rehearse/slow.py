"""The slowed-node drill: one node capped to a fraction of a core must be the culprit of
accept's localization (a bisection of all-reduces over halves of the nodes) and the one
straggler ``diagnose`` names from the rehearsal's Prometheus.

The node is slowed whole: its slurmd (and every job step it forks) and its exporters (the
clock stand-in of :mod:`clusterforge.rehearse.standins` among them) go into one cgroup v1
``cpu`` group capped with the CFS bandwidth controller (quota/period = the share of one
CPU; Linux Documentation/scheduler/sched-bwc.rst).

``diagnose`` judges the emulated GPUs with the rehearsal's tolerance
(:data:`STRAGGLER_DEV`) in place of its defaults (10 % under the peers' median clock, 20 %
off their engine activity), which suit real GPUs of one model: CPU stand-ins on one shared
machine vary more than that while healthy.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from clusterforge.accept.suite import AcceptReport
from clusterforge.diagnose import DiagnoseRequest, JobSelector, Thresholds, run_diagnose
from clusterforge.rehearse.acceptance import accept_once, summary
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.model import DrillResult, RehearseOptions
from clusterforge.rehearse.prom import Monitoring

__all__ = [
    "STRAGGLER_DEV",
    "cgroup_v1_cpu_missing",
    "cpu_capped",
    "diagnose_stragglers",
    "slow_node_drill",
]

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
_CFS_PERIOD_US = 100_000  # CFS bandwidth period (Linux Documentation/scheduler/sched-bwc.rst)
STRAGGLER_DEV = 0.5  # rehearsal tolerance: off the peers' median by more than half
_MIN_WINDOW_S = 20  # at least ten scrapes of the clock stand-ins


def cgroup_v1_cpu_missing() -> str | None:
    """Why a node cannot be slowed here (None when it can)."""
    if not (CPU_CGROUP / "cgroup.procs").exists() or not os.access(CPU_CGROUP, os.W_OK):
        return f"no writable cgroup v1 cpu controller at {CPU_CGROUP}"
    return None


@contextmanager
def cpu_capped(
    pids: list[int], cpu_fraction: float, *, name: str = "clusterforge-rehearse"
) -> Iterator[None]:
    """Cap ``pids`` (and what they fork from now on) at ``cpu_fraction`` of one core with
    a cgroup v1 CFS quota; the tasks go back to the root group afterwards."""
    group = CPU_CGROUP / f"{name}-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text(str(_CFS_PERIOD_US))
    (group / "cpu.cfs_quota_us").write_text(str(int(_CFS_PERIOD_US * cpu_fraction)))
    for pid in pids:
        (group / "cgroup.procs").write_text(str(pid))
    try:
        yield
    finally:
        _empty_and_remove(group)


def _empty_and_remove(group: Path, within_s: float = 10.0) -> None:
    """Move every task of ``group`` back to the root group and remove it. A task forked while
    the list was being moved, or one still exiting, keeps the group busy (rmdir: EBUSY), so
    both steps repeat until the group is gone or ``within_s`` has passed."""
    deadline = time.monotonic() + within_s
    while True:
        for task in (group / "cgroup.procs").read_text().split():
            try:
                (CPU_CGROUP / "cgroup.procs").write_text(task)
            except OSError:
                continue  # the task ended meanwhile
        try:
            group.rmdir()
            return
        except OSError as err:
            if err.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def diagnose_stragglers(
    monitoring: Monitoring, nodes: list[str], window_s: int
) -> tuple[str, dict[str, str]]:
    """``diagnose`` over the last ``window_s`` on ``nodes``: its headline verdict, and each
    straggler it named with the figures that named it."""
    thresholds = replace(
        Thresholds(), straggler_clock_dev=STRAGGLER_DEV, straggler_activity_dev=STRAGGLER_DEV
    )
    request = DiagnoseRequest(
        prometheus_url=monitoring.url, selector=JobSelector(nodes=tuple(nodes)),
        window=f"{window_s}s", thresholds=thresholds,
    )  # fmt: skip
    diagnosis = run_diagnose(request).diagnosis
    named = {
        f.subject: ", ".join(f"{k} {v:g}" for k, v in sorted(f.evidence.items()))
        for f in diagnosis.findings
        if f.verdict == "straggler"
    }
    return diagnosis.verdict, named


def slow_node_drill(
    lab: Lab, options: RehearseOptions, watched: Callable[[], Monitoring]
) -> DrillResult:
    """A node capped to a fraction of a core is the one node accept and diagnose name."""
    if reason := cgroup_v1_cpu_missing():
        return DrillResult("slow-node", "skip", (reason,))
    if len(lab.nodes) < 3:
        return DrillResult("slow-node", "skip", ("needs at least 3 nodes: two peers to compare",))
    monitoring = watched()
    node = lab.nodes[-1]
    slurmd = lab.slurm.processes[1 + lab.nodes.index(node)].pid  # slurmctld first, then slurmd
    start = time.monotonic()
    with cpu_capped([slurmd, *monitoring.node_pids(node)], options.slow_cpu_fraction):
        report = accept_once(lab, options, ("nccl",), "slow-node", localize="always")
        accept_s = time.monotonic() - start
        window_s = max(_MIN_WINDOW_S, int(accept_s))
        verdict, named = diagnose_stragglers(monitoring, lab.nodes, window_s)
    culprit = report.localization.culprit if report.localization else None
    evidence = (
        f"{node} capped at {options.slow_cpu_fraction:.0%} of one core (cgroup v1 cpu quota)",
        f"accept's localization named: {culprit or 'nobody'} after {accept_s:.1f} s",
        *_bisection(report),
        f"diagnose over the last {window_s} s: verdict {verdict}; stragglers: "
        f"{', '.join(sorted(named)) or 'none'} (clock stand-ins; tolerance "
        f"{STRAGGLER_DEV:.0%} off the peers' median)",
        *(f"diagnose on {subject}: {figures}" for subject, figures in sorted(named.items())),
    )
    ok = culprit == node and set(named) == {node}
    elapsed = time.monotonic() - start
    return DrillResult("slow-node", "pass" if ok else "fail", evidence, elapsed, detect_s=accept_s)


def _bisection(report: AcceptReport) -> list[str]:
    if report.localization is None:
        return [summary(report)]
    return [
        f"all_reduce on {'+'.join(group)}: {busbw:.3g} GB/s"
        for group, busbw in report.localization.evidence
    ]
