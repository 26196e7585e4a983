"""Plain readings that the verdict rules take: one per GPU, one per node, one per job.

Every field is an average over the diagnosis window, in the unit its name carries; ``None``
means the series was not collected (a rule that needs it is then not applied, and says so
nowhere: no evidence is no verdict).  Ratios are 0..1, as DCGM reports its profiling fields
(NVIDIA DCGM User Guide, "Feature Overview", "Profiling Metrics").
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from clusterforge.errors import SpecError, did_you_mean
from clusterforge.generate.monitoring.alerts import THROTTLE_FRACTION
from clusterforge.generate.monitoring.network_alerts import (
    DROP_RATE_LIMIT,
    ECN_MARKED_LIMIT,
    PAUSE_SHARE_LIMIT,
)

__all__ = ["GpuReading", "JobReadings", "NodeReading", "Thresholds", "thresholds_from"]


@dataclass(frozen=True, kw_only=True)
class GpuReading:
    """One GPU's dcgm-exporter fields, averaged over the window."""

    node: str
    gpu: str
    gr_engine_active: float | None = None  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio
    # the same over the last few minutes only: a job that stopped late in the window
    gr_engine_active_recent: float | None = None
    sm_active: float | None = None  # DCGM_FI_PROF_SM_ACTIVE, ratio
    tensor_active: float | None = None  # DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio
    dram_active: float | None = None  # DCGM_FI_PROF_DRAM_ACTIVE, ratio
    pcie_gbyte_per_s: float | None = None  # PCIE_TX_BYTES + PCIE_RX_BYTES
    nvlink_gbyte_per_s: float | None = None  # PROF_NVLINK_TX_BYTES + RX_BYTES
    power_w: float | None = None  # DCGM_FI_DEV_POWER_USAGE
    sm_clock_mhz: float | None = None  # DCGM_FI_DEV_SM_CLOCK
    power_violation_share: float | None = None  # rate(DCGM_FI_DEV_POWER_VIOLATION) / 1e9
    thermal_violation_share: float | None = None  # rate(DCGM_FI_DEV_THERMAL_VIOLATION) / 1e9
    throttle_reasons: int | None = None  # DCGM_FI_DEV_CLOCKS_EVENT_REASONS, NVML bitmask
    fb_used_share: float | None = None  # FB_USED / (FB_USED + FB_FREE)

    @property
    def name(self) -> str:
        return f"{self.node}/gpu{self.gpu}"


@dataclass(frozen=True, kw_only=True)
class NodeReading:
    """One node's host and NIC figures (node_exporter and the clusterforge exporter)."""

    node: str
    cpu_busy_share: float | None = None  # 1 - idle share of node_cpu_seconds_total
    iowait_share: float | None = None  # iowait share of node_cpu_seconds_total
    disk_busy_share: float | None = None  # busiest disk's rate(node_disk_io_time_seconds_total)
    memory_used_share: float | None = None  # 1 - MemAvailable / MemTotal
    nfs_retransmits_per_s: float | None = None  # rate(node_nfs_rpc_retransmissions_total)
    nic_line_share: float | None = None  # busiest port's bytes/s over its line rate
    nic_gbyte_per_s: float | None = None  # all compute ports, both directions
    pause_share: float | None = None  # share of time PFC-paused on the RoCE priority
    drop_share: float | None = None  # discarded / all packets, both directions
    ecn_marked_share: float | None = None  # ECN-marked / received RoCE packets
    tcp_retransmit_share: float | None = None  # RetransSegs / OutSegs


@dataclass(frozen=True, kw_only=True)
class JobReadings:
    """Everything read for one job (or one host list) over one window."""

    job: str | None
    window: str
    gpus: tuple[GpuReading, ...]
    nodes: tuple[NodeReading, ...]
    tokens_per_s: float | None = None  # from a user-named series, when there is one


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """Where each rule trips.  Rules of thumb from practice are marked; change them here.

    The network and throttle limits are the ones the generated alert rules use, so a
    verdict and an alert never disagree.
    """

    # practitioner rule: DRAM active > 80 %, the practical peak the DCGM guide gives
    memory_bound_dram_min: float = 0.8
    starved_dram_max: float = 0.3  # practitioner rule: DRAM active < 30 % with idle SMs
    starved_gr_max: float = 0.6  # practitioner rule: "GPU idle" = engine busy < 60 %
    # a busy GPU's engine is active > 80 % (the DCGM guide's SM-active figure for effective use)
    busy_gr_min: float = 0.8
    idle_gr_max: float = 0.05  # engine active < 5 %: nothing runs
    hung_fb_min_share: float = 0.1  # framebuffer still held by a process that does nothing
    cpu_busy_min: float = 0.85  # practitioner rule
    iowait_min: float = 0.1  # practitioner rule: CPUs waiting on storage 10 % of the time
    disk_busy_min: float = 0.8  # practitioner rule: a disk busy 80 % of the time
    nic_line_share_min: float = 0.9  # practitioner rule: a port at 90 % of line rate
    pause_share_max: float = PAUSE_SHARE_LIMIT
    drop_share_max: float = DROP_RATE_LIMIT
    ecn_marked_share_max: float = ECN_MARKED_LIMIT
    tcp_retransmit_share_max: float = 0.01  # practitioner rule: 1 % of TCP segments resent
    throttle_share_min: float = THROTTLE_FRACTION
    straggler_activity_dev: float = 0.2  # practitioner rule: 20 % off the peers' median
    straggler_clock_dev: float = 0.1  # practitioner rule: SM clock 10 % under the median
    min_peers: int = 3  # a median needs at least this many GPUs


def thresholds_from(settings: dict[str, str], base: Thresholds | None = None) -> Thresholds:
    """``base`` (the defaults) with some thresholds changed, by name; values are numbers."""
    names = [f.name for f in fields(Thresholds)]
    changes: dict[str, Any] = {}  # float, or int for min_peers
    for name, text in settings.items():
        if name not in names:
            raise SpecError(f"threshold {name!r} does not exist{did_you_mean(name, names)}")
        try:
            value = int(text) if name == "min_peers" else float(text)
        except ValueError:
            raise SpecError(f"threshold {name}={text!r} is not a number") from None
        if name == "min_peers" and value < 2:
            raise SpecError(f"threshold min_peers={text!r}: a median needs at least 2 peers")
        if name != "min_peers" and not 0 <= value <= 1:
            raise SpecError(f"threshold {name}={text!r} must be a share between 0 and 1")
        changes[name] = value
    return replace(base or Thresholds(), **changes)
