"""Prometheus alert rules for the design's GPUs, NICs and nodes (built as data, dumped as YAML).

Sources and the pitfalls they encode (operations.md §2, §4):

* XIDs use ``DCGM_EXP_XID_ERRORS_COUNT``, a count over dcgm-exporter's window (5 min by
  default, labelled ``xid``): the raw ``DCGM_FI_DEV_XID_ERRORS`` gauge holds the *last* XID
  and never resets, so ``> 0`` fires forever and a repeated XID is invisible
  (dcgm-exporter #500, #190).
* ECC, NVLink errors and violation times are counters that must be enabled in the counters
  CSV (:mod:`monitoring_data`); violation times are microseconds (dcgm_fields.h).
* PCIe: a lower link *width* is a fault; a lower *generation* is normal power saving at idle,
  so it only counts while the GPU is busy.
* NIC drop rate over 0.1 % is a failure (issue 6); node_exporter's InfiniBand collector
  exposes ``node_infiniband_port_{discards,packets}_{received,transmitted}_total`` with
  ``device`` and ``port`` labels, for RoCE HCAs too.
* "Allocated" GPUs carry dcgm-exporter's ``pod`` label (Kubernetes) or ``hpc_job`` label
  (Slurm with ``--hpc-job-mapping-dir``).
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.launch import hca_names
from clusterforge.generate.monitoring_data import EXPORTER_HEALTH_METRIC

__all__ = [
    "DROP_RATE_LIMIT",
    "IDLE_UTIL_PCT",
    "THROTTLE_FRACTION",
    "alert_groups",
    "gpu_power_limit_w",
]

THROTTLE_FRACTION = 0.05  # share of time clocks were held back, over 5 min
DROP_RATE_LIMIT = 0.001  # 0.1 % of packets (issue 6)
IDLE_UTIL_PCT = 5  # mean utilisation over 30 min below which an allocated GPU is "idle"
BUSY_UTIL_PCT = 50
US_PER_S = 1_000_000


def gpu_power_limit_w(design: Design) -> float:
    """The GPU power the racks were sized for: the proposed cap, else the GPU's TDP."""
    cap = design.layout_density.power_cap
    return cap.gpu_power_limit_w if cap is not None else design.compute.gpu.tdp_w


def _alert(name: str, expr: str, for_: str, severity: str, summary: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_ != "0m":
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary}
    return rule


def _gpu_rules(design: Design) -> list[dict[str, Any]]:
    limit_w = gpu_power_limit_w(design)
    rules = [
        _alert(
            "GpuXidError",
            "DCGM_EXP_XID_ERRORS_COUNT > 0",
            "0m",
            "critical",
            "XID {{ $labels.xid }} on {{ $labels.node }} GPU {{ $labels.gpu }} in the last window",
        ),
        _alert(
            "GpuDoubleBitEcc",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "0m",
            "critical",
            "Double-bit ECC errors on {{ $labels.node }} GPU {{ $labels.gpu }}",
        ),
        _alert(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            "0m",
            "critical",
            "Row remapping failed on {{ $labels.node }} GPU {{ $labels.gpu }}: replace the GPU",
        ),
        _alert(
            "GpuThermalThrottling",
            f"rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / {US_PER_S} > {THROTTLE_FRACTION:g}",
            "10m",
            "warning",
            "{{ $labels.node }} GPU {{ $labels.gpu }} is thermally throttled",
        ),
        _alert(
            "GpuPowerThrottling",
            f"rate(DCGM_FI_DEV_POWER_VIOLATION[5m]) / {US_PER_S} > {THROTTLE_FRACTION:g}",
            "10m",
            "warning",
            "{{ $labels.node }} GPU {{ $labels.gpu }} is power throttled",
        ),
        _alert(
            "GpuPowerOverCap",
            f"DCGM_FI_DEV_POWER_USAGE > {limit_w:g}",
            "5m",
            "warning",
            f"{{{{ $labels.node }}}} GPU {{{{ $labels.gpu }}}} draws more than the {limit_w:g} W "
            "the racks were sized for",
        ),
        _alert(
            "GpuPcieLinkDowngraded",
            "DCGM_FI_DEV_PCIE_LINK_WIDTH < DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH"
            " or ((DCGM_FI_DEV_PCIE_LINK_GEN < DCGM_FI_DEV_PCIE_MAX_LINK_GEN)"
            f" and (DCGM_FI_DEV_GPU_UTIL > {BUSY_UTIL_PCT}))",
            "10m",
            "warning",
            "PCIe link of {{ $labels.node }} GPU {{ $labels.gpu }} runs below its maximum",
        ),
        _alert(
            "GpuIdleWhileAllocated",
            f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{pod!=""}}[30m]) < {IDLE_UTIL_PCT}'
            f' or avg_over_time(DCGM_FI_DEV_GPU_UTIL{{hpc_job!=""}}[30m]) < {IDLE_UTIL_PCT}',
            "0m",
            "info",
            "{{ $labels.node }} GPU {{ $labels.gpu }} is allocated but idle",
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
                "NVLink errors on {{ $labels.node }} GPU {{ $labels.gpu }}",
            )
        )
    return rules


def _nic_rules(design: Design) -> list[dict[str, Any]]:
    devices = "|".join(hca_names(design))
    sel = f'{{device=~"{devices}"}}'
    dropped = (
        f"rate(node_infiniband_port_discards_received_total{sel}[5m])"
        f" + rate(node_infiniband_port_discards_transmitted_total{sel}[5m])"
    )
    packets = (
        f"rate(node_infiniband_port_packets_received_total{sel}[5m])"
        f" + rate(node_infiniband_port_packets_transmitted_total{sel}[5m])"
    )
    return [
        _alert(
            "NicDropRateHigh",
            f"({dropped}) / ({packets}) > {DROP_RATE_LIMIT:g}",
            "5m",
            "warning",
            "{{ $labels.node }} {{ $labels.device }} (rail {{ $labels.rail }}) drops more than 0.1 % of packets",
        ),
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
    """Rule files by name (``gpu``, ``network``, ``node``), each a Prometheus rule file."""
    return {
        "gpu": {"groups": [{"name": "gpu", "rules": _gpu_rules(design)}]},
        "network": {"groups": [{"name": "network", "rules": _nic_rules(design)}]},
        "node": {"groups": [{"name": "node", "rules": _node_rules()}]},
    }
