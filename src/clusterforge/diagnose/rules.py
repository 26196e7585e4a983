"""Verdict rules over plain readings: why a job is slow, per GPU, node and job.

What the DCGM profiling fields mean (NVIDIA DCGM User Guide, "Feature Overview", section
"Profiling Metrics"): ``GR_ENGINE_ACTIVE`` is the share of time a graphics/compute engine is
active, ``SM_ACTIVE`` the share of cycles an SM has at least one warp (the guide: 0.8 or more
is necessary for effective use, under 0.5 likely ineffective), ``PIPE_TENSOR_ACTIVE`` the
share of cycles the tensor pipe is busy, ``DRAM_ACTIVE`` the share of cycles the device
memory interface sends or receives data (the guide: about 0.8 is the most achievable in
practice, so above it the memory interface is saturated).  Violation counters count
nanoseconds of clocks held back (DCGM ``dcgm_fields.h``), so their rate over 1e9 is a share
of time.  The throttle-reason bits are NVML's ``nvmlClocksThrottleReasons`` (``nvml.h``).

The rules (thresholds in :class:`Thresholds`; the practitioner rules are marked there):

* idle: the engine is active less than ``idle_gr_max`` in the last minutes of the window
  (a job that stopped late still averages high over it); **hung** if a process still holds
  the framebuffer (``hung_fb_min_share``), else **idle**.  Nothing else is judged then.
* throttled: power or thermal violation time above ``throttle_share_min``, or a power or
  thermal bit set in the throttle reasons.
* memory-bound: DRAM active above ``memory_bound_dram_min``.
* compute-bound: engine active at least ``busy_gr_min`` and DRAM below the memory rule.
* input-bound: engine active below ``starved_gr_max`` and DRAM below ``starved_dram_max``
  while the host is busy: CPUs, iowait, a disk, or NFS retransmitting.
* network-bound: a compute port near line rate, or congestion (PFC pauses, drops, ECN
  marks, TCP retransmits) above the limits the generated alert rules use.
* straggler: in a synchronous job every rank runs the same steps, so one GPU whose SM
  clock is ``straggler_clock_dev`` under the peers' median, or whose engine activity is
  ``straggler_activity_dev`` off it, holds the others back; a node is named when all its
  GPUs are.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal, get_args

from clusterforge.diagnose.readings import GpuReading, NodeReading, Thresholds

__all__ = [
    "PRIORITY",
    "Diagnosis",
    "Finding",
    "NodeVerdict",
    "Verdict",
    "node_findings",
    "node_mean",
]

Verdict = Literal[
    "hung",
    "idle",
    "throttled",
    "straggler",
    "network-bound",
    "input-bound",
    "memory-bound",
    "compute-bound",
    "inconclusive",
]
# The order a node's or job's headline verdict is chosen in: the first that applies.
PRIORITY: tuple[Verdict, ...] = get_args(Verdict)

# nvmlClocksThrottleReasons bits (nvml.h): power and thermal causes only.
_POWER_BITS = 0x4 | 0x80  # SwPowerCap, HwPowerBrakeSlowdown
_THERMAL_BITS = 0x20 | 0x40  # SwThermalSlowdown, HwThermalSlowdown
_HW_SLOWDOWN_BIT = 0x8  # HwSlowdown: thermal or power brake, either


@dataclass(frozen=True)
class Finding:
    """One verdict about one subject, with the rule that tripped and the numbers."""

    verdict: Verdict
    subject: str
    rule: str
    evidence: dict[str, float]


@dataclass(frozen=True)
class NodeVerdict:
    node: str
    verdict: Verdict
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class Diagnosis:
    job: str | None
    window: str
    verdict: Verdict
    nodes: tuple[NodeVerdict, ...]
    findings: tuple[Finding, ...]
    num_gpus: int

    @property
    def verdicts(self) -> set[Verdict]:
        return {f.verdict for f in self.findings}


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def node_mean(node: str, gpus: list[GpuReading]) -> GpuReading:
    """The node's GPUs averaged field by field (throttle bits OR-ed together)."""
    averaged: dict[str, float | None] = {}
    for f in fields(GpuReading):
        if f.name in ("node", "gpu", "throttle_reasons"):
            continue
        averaged[f.name] = _mean([getattr(g, f.name) for g in gpus])
    bits = [g.throttle_reasons for g in gpus if g.throttle_reasons is not None]
    reasons = None
    if bits:
        reasons = 0
        for b in bits:
            reasons |= b
    return GpuReading(node=node, gpu="*", throttle_reasons=reasons, **averaged)


def _present(**values: float | None) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items() if v is not None}


def _above(value: float | None, limit: float) -> bool:
    return value is not None and value > limit


def _below(value: float | None, limit: float) -> bool:
    return value is not None and value < limit


def _idle(g: GpuReading, subject: str, t: Thresholds) -> Finding | None:
    """Idle over the window, or stopped lately (the recent average, when read, decides)."""
    recent = g.gr_engine_active_recent
    activity = recent if recent is not None else g.gr_engine_active
    if not _below(activity, t.idle_gr_max):
        return None
    evidence = _present(
        gr_engine_active=g.gr_engine_active,
        gr_engine_active_recent=recent,
        fb_used_share=g.fb_used_share,
    )
    when = "lately" if recent is not None else "over the window"
    if g.fb_used_share is not None and g.fb_used_share >= t.hung_fb_min_share:
        rule = (
            f"engine active {when} < {t.idle_gr_max:g} while framebuffer held "
            f">= {t.hung_fb_min_share:g}"
        )
        return Finding("hung", subject, rule, evidence)
    return Finding("idle", subject, f"engine active {when} < {t.idle_gr_max:g}", evidence)


def _throttled(g: GpuReading, subject: str, t: Thresholds) -> Finding | None:
    bits = g.throttle_reasons or 0
    by_share = _above(g.power_violation_share, t.throttle_share_min) or _above(
        g.thermal_violation_share, t.throttle_share_min
    )
    by_bits = bool(bits & (_POWER_BITS | _THERMAL_BITS | _HW_SLOWDOWN_BIT))
    if not (by_share or by_bits):
        return None
    evidence = _present(
        power_violation_share=g.power_violation_share,
        thermal_violation_share=g.thermal_violation_share,
        sm_clock_mhz=g.sm_clock_mhz,
        power_w=g.power_w,
        throttle_reasons=None if g.throttle_reasons is None else float(g.throttle_reasons),
    )
    rule = (
        f"power or thermal violation time > {t.throttle_share_min:g} of the window, "
        "or a power/thermal throttle-reason bit set"
    )
    return Finding("throttled", subject, rule, evidence)


def _memory(g: GpuReading, subject: str, t: Thresholds) -> Finding | None:
    if not _above(g.dram_active, t.memory_bound_dram_min):
        return None
    evidence = _present(dram_active=g.dram_active, gr_engine_active=g.gr_engine_active)
    return Finding("memory-bound", subject, f"DRAM active > {t.memory_bound_dram_min:g}", evidence)


def _compute(g: GpuReading, subject: str, t: Thresholds) -> Finding | None:
    busy = g.gr_engine_active is not None and g.gr_engine_active >= t.busy_gr_min
    if not busy or _above(g.dram_active, t.memory_bound_dram_min):
        return None
    evidence = _present(
        gr_engine_active=g.gr_engine_active,
        sm_active=g.sm_active,
        tensor_active=g.tensor_active,
        dram_active=g.dram_active,
    )
    rule = f"engine active >= {t.busy_gr_min:g}, DRAM active <= {t.memory_bound_dram_min:g}"
    return Finding("compute-bound", subject, rule, evidence)


def _tripped(conditions: list[tuple[str, float | None, float]]) -> list[str]:
    """``name > limit`` for each condition whose value exceeds its limit."""
    return [f"{name} > {limit:g}" for name, value, limit in conditions if _above(value, limit)]


def _host_busy(n: NodeReading, t: Thresholds) -> list[str]:
    return _tripped(
        [
            ("CPU busy", n.cpu_busy_share, t.cpu_busy_min),
            ("iowait", n.iowait_share, t.iowait_min),
            ("disk busy", n.disk_busy_share, t.disk_busy_min),
            ("NFS retransmits/s", n.nfs_retransmits_per_s, 0.0),
        ]
    )


def _input(g: GpuReading, n: NodeReading, t: Thresholds) -> Finding | None:
    starved = _below(g.gr_engine_active, t.starved_gr_max) and _below(
        g.dram_active, t.starved_dram_max
    )
    busy = _host_busy(n, t)
    if not (starved and busy):
        return None
    evidence = _present(
        gr_engine_active=g.gr_engine_active,
        dram_active=g.dram_active,
        pcie_gbyte_per_s=g.pcie_gbyte_per_s,
        cpu_busy_share=n.cpu_busy_share,
        iowait_share=n.iowait_share,
        disk_busy_share=n.disk_busy_share,
        nfs_retransmits_per_s=n.nfs_retransmits_per_s,
        memory_used_share=n.memory_used_share,
    )
    rule = (
        f"engine active < {t.starved_gr_max:g} and DRAM active < {t.starved_dram_max:g} "
        f"while {', '.join(busy)}"
    )
    return Finding("input-bound", n.node, rule, evidence)


def _network(n: NodeReading, t: Thresholds) -> Finding | None:
    tripped = _tripped(
        [
            ("port share of line rate", n.nic_line_share, t.nic_line_share_min),
            ("PFC paused share", n.pause_share, t.pause_share_max),
            ("dropped share", n.drop_share, t.drop_share_max),
            ("ECN-marked share", n.ecn_marked_share, t.ecn_marked_share_max),
            ("TCP retransmitted share", n.tcp_retransmit_share, t.tcp_retransmit_share_max),
        ]
    )
    if not tripped:
        return None
    evidence = _present(
        nic_line_share=n.nic_line_share,
        nic_gbyte_per_s=n.nic_gbyte_per_s,
        pause_share=n.pause_share,
        drop_share=n.drop_share,
        ecn_marked_share=n.ecn_marked_share,
        tcp_retransmit_share=n.tcp_retransmit_share,
    )
    return Finding("network-bound", n.node, ", ".join(tripped), evidence)


def node_findings(gpus: list[GpuReading], host: NodeReading, t: Thresholds) -> list[Finding]:
    """Every rule but the straggler's, on the node's averaged GPUs and its host."""
    g = node_mean(host.node, gpus) if gpus else GpuReading(node=host.node, gpu="*")
    idle = _idle(g, host.node, t)
    if idle is not None:
        return [idle]
    found = [
        _throttled(g, host.node, t),
        _network(host, t),
        _input(g, host, t),
        _memory(g, host.node, t),
        _compute(g, host.node, t),
    ]
    return [f for f in found if f is not None]
