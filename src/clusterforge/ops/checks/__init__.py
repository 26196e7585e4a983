"""Verdict logic: pure functions from readings (and the design's expectation) to check results.

:func:`evaluate` runs every check on one :class:`~clusterforge.ops.readings.NodeReading`.
With a ``previous`` reading of the same node (the exporter's last run, or a one-shot check's
state file, :mod:`clusterforge.ops.state`), counters are judged by their increase (ECC,
NVLink CRC rate, NIC errors, drops and pauses, new XIDs).  Without one the run is a
*baseline*: counters are totals since their last reset and only absurd totals warn.
"""

from __future__ import annotations

from clusterforge.ops.checks.base import (
    STATUS_ORDER,
    CheckResult,
    Severity,
    Status,
    Thresholds,
    result,
    worst,
)
from clusterforge.ops.checks.gpu import (
    check_driver,
    check_ecc,
    check_gpu_count,
    check_gpu_model,
    check_memory_repair,
    check_nvml,
    check_recovery_action,
    check_xids,
)
from clusterforge.ops.checks.gpu_links import (
    check_clocks,
    check_fabric,
    check_nvlink,
    check_pcie,
    check_power,
    check_thermal,
)
from clusterforge.ops.checks.host import check_affinity, check_disk_free, check_memory, check_mounts
from clusterforge.ops.checks.net import (
    check_nic_count,
    check_nic_drops,
    check_nic_errors,
    check_nic_link,
    check_nic_pause,
    check_nic_speed,
    compute_nics,
)
from clusterforge.ops.checks.processes import (
    ProcessPolicy,
    check_gpu_processes,
    judge_gpu_processes,
    load_process_policy,
)
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import GpuReading, NodeReading
from clusterforge.ops.xid import XidPolicy

__all__ = [
    "CHECK_IDS",
    "STATUS_ORDER",
    "CheckResult",
    "Severity",
    "Status",
    "Thresholds",
    "evaluate",
    "result",
    "worst",
]

CHECK_IDS = (
    "gpu.nvml", "gpu.count", "gpu.model", "gpu.driver", "gpu.ecc", "gpu.memory_repair",
    "gpu.xid", "gpu.recovery_action", "gpu.thermal", "gpu.clocks", "gpu.power", "gpu.pcie",
    "gpu.nvlink", "gpu.fabric", "gpu.processes", "nic.count", "nic.link", "nic.speed", "nic.errors",
    "nic.drops", "nic.pause", "host.mounts", "host.disk_free", "host.memory", "host.affinity",
)  # fmt: skip


def _same_gpus(gpus: tuple[GpuReading, ...], previous: NodeReading | None) -> dict[int, GpuReading]:
    """Previous readings by index, only where the GPU is the same one (UUID, when both known):
    after a board swap or a renumbering the old counters say nothing about the new GPU."""
    if previous is None:
        return {}
    uuids = {g.index: g.uuid for g in gpus}
    return {
        g.index: g
        for g in previous.gpu.gpus
        if g.uuid is None or uuids.get(g.index) in (None, g.uuid)
    }


def evaluate(
    reading: NodeReading,
    expect: NodeExpectation,
    policy: XidPolicy,
    limits: Thresholds | None = None,
    previous: NodeReading | None = None,
    *,
    process_policy: ProcessPolicy | None = None,
) -> list[CheckResult]:
    """Every check of one node, in CHECK_IDS order."""
    limits = limits or Thresholds()
    verdicts = judge_gpu_processes(
        reading.gpu.gpus, reading.processes, process_policy or load_process_policy()
    )
    snap, gpus = reading.gpu, reading.gpu.gpus
    nics = compute_nics(reading.nics, expect)
    prev_gpus = _same_gpus(gpus, previous)
    prev_nics = {f"{n.name}/{n.port}": n for n in previous.nics} if previous else {}
    elapsed_s = reading.taken_at_s - previous.taken_at_s if previous else None
    results = [
        *check_nvml(snap),
        *check_gpu_count(snap, expect),
        *check_gpu_model(gpus, expect),
        *check_driver(snap, expect),
        *check_ecc(gpus, limits, prev_gpus),
        *check_memory_repair(gpus, limits),
        *check_xids(reading, policy, limits, previous),
        *check_recovery_action(gpus),
        *check_thermal(gpus, limits),
        *check_clocks(gpus),
        *check_power(gpus, expect, limits),
        *check_pcie(gpus),
        *check_nvlink(gpus, expect, limits, prev_gpus, elapsed_s),
        *check_fabric(gpus, expect),
        *check_gpu_processes(gpus, verdicts),
        *check_nic_count(nics, expect),
        *check_nic_link(nics),
        *check_nic_speed(nics, expect),
        *check_nic_errors(nics, prev_nics, limits, elapsed_s),
        *check_nic_drops(nics, prev_nics, limits, elapsed_s),
        *check_nic_pause(nics, prev_nics, limits),
        *check_mounts(reading.host),
        *check_disk_free(reading.host, expect),
        *check_memory(reading.host, expect, limits),
        *([] if snap.error else check_affinity(gpus, nics, expect)),
    ]
    return results
