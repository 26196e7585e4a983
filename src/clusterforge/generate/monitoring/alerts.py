"""Prometheus alert rules for the design's GPUs and nodes (built as data, dumped as YAML).

Sources and the pitfalls they encode:

* XIDs use ``DCGM_EXP_XID_ERRORS_COUNT``, a count over dcgm-exporter's window (5 min by
  default, labelled ``xid``): the raw ``DCGM_FI_DEV_XID_ERRORS`` gauge holds the *last* XID
  and never resets, so ``> 0`` fires forever and a repeated XID is invisible (dcgm-exporter
  issues #500, #190).  XIDs are split by the policy the node checks use
  (:mod:`clusterforge.generate.monitoring.xid_classes`): hardware XIDs page (critical), the
  others warn, application XIDs (13, 31, 43, ...) are information for the job's owner.  Each
  waits one minute (``for``), so one scrape of a stale count does not page.
* ECC, NVLink errors and violation times are counters that must be enabled in the counters
  CSV (:mod:`.metrics`); violation times are nanoseconds (DCGM ``dcgm_fields.h``,
  NVML ``nvmlViolationTime_t``), so their rate over 1e9 is the share of time throttled.
* PCIe: a lower link *width* is a fault; a lower *generation* is normal power saving at idle,
  so it only counts while the GPU is busy.
* GPU misuse comes from ``clusterforge exporter`` (``clusterforge_gpu_foreign_processes``,
  by ``kind``): a miner pages at once; a process outside any job waits two check runs of the
  exporter's default 60 s interval, so a process caught while its job was being cleaned up
  does not page.
* "Allocated" GPUs carry dcgm-exporter's ``pod`` label (Kubernetes) or ``hpc_job`` label
  (Slurm with ``--hpc-job-mapping-dir``).

Network and rack power rules: :mod:`clusterforge.generate.monitoring.network_alerts`.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.monitoring.metrics import (
    EXPORTER_FOREIGN_PROCESS_METRIC,
    EXPORTER_HEALTH_METRIC,
    VIOLATION_NS_PER_S,
)
from clusterforge.generate.monitoring.network_alerts import alert as _alert
from clusterforge.generate.monitoring.network_alerts import network_rules, power_rules
from clusterforge.generate.monitoring.xid_classes import xid_classes

__all__ = [
    "IDLE_UTIL_PCT",
    "THROTTLE_FRACTION",
    "XID_FOR",
    "alert_groups",
    "gpu_power_limit_w",
]

THROTTLE_FRACTION = 0.05  # share of time clocks were held back, over 5 min
IDLE_UTIL_PCT = 5  # mean utilisation over 30 min below which an allocated GPU is "idle"
BUSY_UTIL_PCT = 50
XID_FOR = "1m"  # shorter than dcgm-exporter's 5-minute XID window, or it could never fire
_ON = "{{ $labels.node }} GPU {{ $labels.gpu }}"


def gpu_power_limit_w(design: Design) -> float:
    """The GPU power the racks were sized for: the proposed cap or the spec's limit, else the
    GPU's TDP."""
    limit_w = design.gpu_power_limit_w
    return limit_w if limit_w is not None else design.compute.gpu.tdp_w


def _xid_rules() -> list[dict[str, Any]]:
    """One rule per XID class of the policy: page, warn, inform."""
    classes = xid_classes()
    metric = "DCGM_EXP_XID_ERRORS_COUNT"
    known = f"{classes.regex('drain')}|{classes.regex('ignore')}"
    summary = "XID {{ $labels.xid }} on " + _ON
    return [
        _alert(
            "GpuXidHardware",
            f'{metric}{{xid=~"{classes.regex("drain")}"}} > 0',
            XID_FOR,
            "critical",
            summary + ": a hardware fault, drain the node and reset or replace the GPU",
        ),
        _alert(
            "GpuXidWarning",
            f'{metric}{{xid!~"{known}"}} > 0',
            XID_FOR,
            "warning",
            summary + ": watch for repeats",
        ),
        _alert(
            "GpuXidApplication",
            f'{metric}{{xid=~"{classes.regex("ignore")}"}} > 0',
            XID_FOR,
            "info",
            summary + ": the application's fault (tell the job's owner)",
        ),
    ]


def _memory_rules() -> list[dict[str, Any]]:
    return [
        _alert(
            "GpuDoubleBitEcc",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "0m",
            "critical",
            f"Double-bit ECC errors on {_ON}",
        ),
        _alert(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "0m",
            "critical",
            f"Row remapping failed on {_ON}: replace the GPU",
        ),
    ]


def _clock_rules(design: Design) -> list[dict[str, Any]]:
    limit_w = gpu_power_limit_w(design)
    share = f"/ {VIOLATION_NS_PER_S} > {THROTTLE_FRACTION:g}"
    return [
        _alert(
            "GpuThermalThrottling",
            f"rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) {share}",
            "10m",
            "warning",
            f"{_ON} is thermally throttled",
        ),
        _alert(
            "GpuPowerThrottling",
            f"rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) {share}",
            "10m",
            "warning",
            f"{_ON} is power throttled",
        ),
        _alert(
            "GpuPowerOverCap",
            f"DCGM_FI_DEV_POWER_USAGE > {limit_w:g}",
            "5m",
            "warning",
            f"{_ON} draws more than the {limit_w:g} W the racks were sized for",
        ),
    ]


def _link_rules(design: Design) -> list[dict[str, Any]]:
    rules = [
        _alert(
            "GpuPcieLinkDowngraded",
            "DCGM_FI_DEV_PCIE_LINK_WIDTH < DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH"
            " or ((DCGM_FI_DEV_PCIE_LINK_GEN < DCGM_FI_DEV_PCIE_MAX_LINK_GEN)"
            f" and (DCGM_FI_DEV_GPU_UTIL > {BUSY_UTIL_PCT}))",
            "10m",
            "warning",
            f"PCIe link of {_ON} runs below its maximum",
        ),
    ]
    if design.compute.nvlink_domain_gpus > 1:
        rules.append(
            _alert(
                "GpuNvlinkErrors",
                "increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[10m]) > 0"
                " or increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL[10m]) > 0"
                " or increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[10m]) > 0",
                "0m",
                "warning",
                f"NVLink errors on {_ON}",
            )
        )
    return rules


def _usage_rules() -> list[dict[str, Any]]:
    return [
        _alert(
            "GpuIdleWhileAllocated",
            f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[30m]) < {IDLE_UTIL_PCT}'
            f' or avg_over_time(DCGM_FI_DEV_GPU_UTIL{{hpc_job!=""}}[30m]) < {IDLE_UTIL_PCT}',
            "0m",
            "info",
            f"{_ON} is allocated but idle",
        ),
    ]


def _misuse_rules() -> list[dict[str, Any]]:
    metric = EXPORTER_FOREIGN_PROCESS_METRIC
    return [
        _alert(
            "GpuCryptoMiner",
            f'{metric}{{kind="miner"}} > 0',
            "0m",
            "critical",
            f"A cryptocurrency miner runs on {_ON}: drain the node, kill it, find how it got there",
        ),
        _alert(
            "GpuProcessOutsideJob",
            f'{metric}{{kind="outside_job"}} > 0',
            "2m",
            "critical",
            "{{ $value }} process(es) outside any running job on " + _ON,
        ),
    ]


def _gpu_rules(design: Design) -> list[dict[str, Any]]:
    return [
        *_xid_rules(),
        *_memory_rules(),
        *_clock_rules(design),
        *_link_rules(design),
        *_usage_rules(),
        *_misuse_rules(),
    ]


def _node_rules() -> list[dict[str, Any]]:
    return [
        _alert(
            "NodeUnhealthy",
            f"{EXPORTER_HEALTH_METRIC} == 0",
            "5m",
            "critical",
            "clusterforge check fails on {{ $labels.node }}",
        ),
        _alert(
            "ExporterDown",
            'up{job=~"dcgm|node|clusterforge"} == 0',
            "5m",
            "warning",
            "{{ $labels.job }} exporter on {{ $labels.node }} is down",
        ),
    ]


def alert_groups(design: Design) -> dict[str, dict[str, Any]]:
    """Rule files by name (``gpu``, ``network``, ``node``, ``power``), each a rule file."""
    power = power_rules(design)
    return {
        "gpu": {"groups": [{"name": "gpu", "rules": _gpu_rules(design)}]},
        "network": {"groups": [{"name": "network", "rules": network_rules(design)}]},
        "node": {"groups": [{"name": "node", "rules": _node_rules()}]},
        "power": {"groups": [{"name": "power", "rules": power}]},
    }
