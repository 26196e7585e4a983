"""Run every check on this node within one time budget and return a report.

The budget defaults to 45 s because Slurm kills a HealthCheckProgram after 60 s
(slurm.conf(5), HealthCheckProgram) and the drain itself needs a few seconds of ``scontrol``.
NVML gets 60 % of it; the network, the mounts and the kernel log share the rest.  A read
that runs out of time is reported in ``Report.errors`` and makes the verdict "unknown"
(exit 2), never a hang and never a drain (NHC's timeouts drained healthy nodes at scale:
github.com/mej/nhc, GitHub issues 161 and 95).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clusterforge.errors import ClusterforgeError
from clusterforge.ops.checks import CheckResult, Status, Thresholds, evaluate
from clusterforge.ops.checks.processes import (
    ProcessPolicy,
    ProcessVerdict,
    judge_gpu_processes,
    load_process_policy,
)
from clusterforge.ops.expect import NodeExpectation, NodeFacts
from clusterforge.ops.nvml import NvmlApi, collect_gpu_snapshot
from clusterforge.ops.procfs import ProcReader
from clusterforge.ops.readings import (
    GpuSnapshot,
    HostReading,
    NodeReading,
    ProcessReading,
    to_jsonable,
)
from clusterforge.ops.sysfs import SysfsReader, run_with_timeout
from clusterforge.ops.xid import XidPolicy, parse_kernel_xids

__all__ = ["NodeChecker", "Report", "collect_reading", "local_node_name", "make_report"]

EXIT_CODES = {"pass": 0, "warn": 0, "fail": 1, "unknown": 2}
# reading.errors keys that mean "the node could not be checked" (exit 2).
_BLOCKING = ("nvml", "network", "host")


def local_node_name() -> str:
    """Short host name, as Slurm's NodeName usually is."""
    return socket.gethostname().split(".")[0]


@dataclass(frozen=True)
class Report:
    """The verdict on one node."""

    node: str
    status: Status
    results: tuple[CheckResult, ...]
    errors: tuple[str, ...]
    duration_s: float
    reading: NodeReading
    baseline: bool = True  # no previous reading: counters judged by totals (see checks)
    notes: tuple[str, ...] = ()  # things the operator should know that change no verdict
    facts: NodeFacts | None = None  # the node's place in the design (with --expect)
    hca_names: tuple[str, ...] = ()  # the design's RDMA device names, index = rail
    gpu_processes: tuple[ProcessVerdict, ...] = ()  # every GPU process and what it is

    @property
    def exit_code(self) -> int:
        """0 healthy (pass or warn), 1 unhealthy, 2 could not check."""
        return EXIT_CODES[self.status]

    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    def to_dict(self, with_reading: bool = True) -> dict[str, Any]:
        data = {
            "node": self.node,
            "status": self.status,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "errors": list(self.errors),
            "baseline": self.baseline,
            "notes": list(self.notes),
            "node_facts": None if self.facts is None else to_jsonable(self.facts),
            "results": [to_jsonable(r) for r in self.results],
            "gpu_processes": [to_jsonable(v) for v in self.gpu_processes],
        }
        if with_reading:
            data["reading"] = to_jsonable(self.reading)
        return data


def _snapshot(nvml: NvmlApi | None, nvml_error: str | None, budget_s: float) -> GpuSnapshot:
    if nvml is None:
        return GpuSnapshot(error=nvml_error or "NVML not available")
    return collect_gpu_snapshot(nvml, budget_s=budget_s, per_call_s=min(5.0, budget_s))


def collect_reading(
    node: str,
    nvml: NvmlApi | None,
    sysfs: SysfsReader,
    *,
    mounts: tuple[str, ...] = (),
    budget_s: float = 45.0,
    nvml_error: str | None = None,
    now: datetime | None = None,
) -> NodeReading:
    """Read GPUs, NICs, host and kernel log, each under its share of ``budget_s``."""
    start = time.monotonic()
    snapshot = _snapshot(nvml, nvml_error, 0.6 * budget_s)
    errors: dict[str, str] = {}
    if snapshot.error:
        errors["nvml"] = snapshot.error

    def left_s() -> float:
        return max(1.0, budget_s - (time.monotonic() - start))

    try:
        nics = tuple(run_with_timeout(sysfs.nics, left_s()))
    except (TimeoutError, OSError) as exc:
        nics, errors["network"] = (), f"reading /sys/class/infiniband: {exc}"
    try:
        host = run_with_timeout(lambda: sysfs.host(local_node_name(), mounts), left_s())
    except (TimeoutError, OSError) as exc:
        host, errors["host"] = HostReading(), f"reading host facts: {exc}"
    try:
        log = run_with_timeout(sysfs.kernel_log, left_s())
    except TimeoutError:
        log = None
    if log is None:
        errors["kernel_log"] = (
            "kernel log not readable (dmesg needs root); XIDs from NVML events only"
        )
    kernel_xids = tuple(parse_kernel_xids(log or "", now=now or datetime.now(UTC)))
    try:
        processes = run_with_timeout(lambda: _gpu_processes(snapshot, sysfs), left_s())
    except (TimeoutError, OSError) as exc:
        processes, errors["processes"] = (), f"reading /proc for the GPU processes: {exc}"
    return NodeReading(
        node=node,
        taken_at_s=time.time(),
        gpu=snapshot,
        nics=nics,
        host=host,
        kernel_xids=kernel_xids,
        processes=processes,
        errors=errors,
    )


def _gpu_processes(snapshot: GpuSnapshot, sysfs: SysfsReader) -> tuple[ProcessReading, ...]:
    """/proc facts of every PID NVML listed on a GPU, read below the same root as sysfs."""
    pids = sorted({p.pid for g in snapshot.gpus for p in g.processes or ()})
    reader = ProcReader(sysfs.root)
    return tuple(reader.process(pid) for pid in pids)


def _read_errors(reading: NodeReading) -> list[str]:
    errors = [v for k, v in reading.errors.items() if k in _BLOCKING]
    errors += [m.error for m in reading.host.mounts if m.error]
    for gpu in reading.gpu.gpus:
        errors += [
            f"gpu{gpu.index} {k}: {v}" for k, v in gpu.errors.items() if "lost" not in v.lower()
        ]
    return errors


def make_report(
    reading: NodeReading,
    expect: NodeExpectation,
    policy: XidPolicy,
    *,
    limits: Thresholds | None = None,
    previous: NodeReading | None = None,
    duration_s: float = 0.0,
    process_policy: ProcessPolicy | None = None,
) -> Report:
    """Judge a reading: fail beats could-not-check, which beats warn."""
    process_policy = process_policy or load_process_policy()
    results = tuple(
        evaluate(reading, expect, policy, limits, previous, process_policy=process_policy)
    )
    errors = tuple(_read_errors(reading))
    statuses = {r.status for r in results}
    status: Status = (
        "fail"
        if "fail" in statuses
        else "unknown"
        if errors
        else "warn"
        if "warn" in statuses
        else "pass"
    )
    return Report(
        node=reading.node,
        status=status,
        results=results,
        errors=errors,
        duration_s=duration_s,
        reading=reading,
        baseline=previous is None,
        facts=expect.facts,
        hca_names=expect.compute_hca_names,
        gpu_processes=tuple(
            judge_gpu_processes(reading.gpu.gpus, reading.processes, process_policy)
        ),
    )


@dataclass(frozen=True)
class NodeChecker:
    """Everything needed to check one node, built once: a one-shot check runs it once, the
    exporter on every interval.  ``nvml_factory()`` builds the NVML adapter on each run (it
    may raise a :class:`ClusterforgeError`, e.g. pynvml missing: the run reports it)."""

    node: str
    nvml_factory: Callable[[], NvmlApi]
    sysfs: SysfsReader
    expect: NodeExpectation
    policy: XidPolicy
    budget_s: float = 45.0
    limits: Thresholds = field(default_factory=Thresholds)
    process_policy: ProcessPolicy = field(default_factory=load_process_policy)

    def run(self, previous: NodeReading | None = None) -> Report:
        """Collect and judge; counters against ``previous`` when given (else a baseline)."""
        start = time.monotonic()
        nvml, nvml_error = None, None
        try:
            nvml = self.nvml_factory()
        except ClusterforgeError as exc:
            nvml_error = str(exc)
        reading = collect_reading(
            self.node,
            nvml,
            self.sysfs,
            mounts=self.expect.mounts,
            budget_s=self.budget_s,
            nvml_error=nvml_error,
        )
        return make_report(
            reading,
            self.expect,
            self.policy,
            limits=self.limits,
            previous=previous,
            duration_s=time.monotonic() - start,
            process_policy=self.process_policy,
        )
