"""The panels of each dashboard: title, panel type, PromQL targets, unit.

NVIDIA's DCGM dashboard (grafana.com 12239) has eight panels and no health rows; these add
XID counts, remapped rows, PCIe replays, NVLink errors and clock-event time, InfiniBand port
errors, RoCE congestion (on RoCE fabrics) and PDU power, grouped by the ``rack``,
``leaf_group`` and ``rail`` labels that prometheus.yml attaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from clusterforge.design import Design
from clusterforge.generate.monitoring.metrics import EXPORTER_HEALTH_METRIC, VIOLATION_NS_PER_S
from clusterforge.generate.monitoring.pdu_snmp import RACK_POWER_RECORD
from clusterforge.generate.training.launch import ROCE_PRIORITY

__all__ = [
    "PanelSpec",
    "network_panels",
    "node_gpu_panels",
    "node_health_panels",
    "overview_panels",
    "power_panels",
]

SEL = '{rack=~"$rack", node=~"$node"}'
RACK = '{rack=~"$rack"}'
_GPU = "{{node}} gpu {{gpu}}"


@dataclass(frozen=True)
class PanelSpec:
    """One panel: ``targets`` are (PromQL, legend) pairs; ``options`` go to fieldConfig."""

    title: str
    kind: str  # Grafana panel type: timeseries, stat, bargauge
    targets: tuple[tuple[str, str], ...]
    unit: str
    options: dict[str, Any] = field(default_factory=dict)


def _ts(title: str, unit: str, *targets: tuple[str, str]) -> PanelSpec:
    return PanelSpec(title, "timeseries", targets, unit)


def overview_panels(design: Design) -> list[PanelSpec]:
    gpus = design.compute.num_gpus_total
    return [
        PanelSpec(
            "GPUs reporting (of the design's)",
            "stat",
            (("count(DCGM_FI_DEV_GPU_TEMP)", "reporting"), (f"vector({gpus})", "designed")),
            "none",
        ),
        PanelSpec(
            "Unhealthy nodes",
            "stat",
            ((f"count({EXPORTER_HEALTH_METRIC} == 0) or vector(0)", "unhealthy"),),
            "none",
        ),
        _ts(
            "GPU utilisation by rack",
            "percent",
            (f"avg by (rack) (DCGM_FI_DEV_GPU_UTIL{RACK})", "{{rack}}"),
        ),
        _ts(
            "XIDs in the window",
            "none",
            (f"sum by (node, xid) (DCGM_EXP_XID_ERRORS_COUNT{RACK})", "{{node}} xid {{xid}}"),
        ),
        _ts(
            "Tensor core activity",
            "percentunit",
            (f"avg(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{RACK})", "mean"),
        ),
        _ts("GPU power, total", "kwatt", (f"sum(DCGM_FI_DEV_POWER_USAGE{RACK}) / 1000", "kW")),
    ]


def node_gpu_panels() -> list[PanelSpec]:
    """Per-GPU gauges of the selected nodes."""
    return [
        _ts("GPU utilisation", "percent", (f"DCGM_FI_DEV_GPU_UTIL{SEL}", _GPU)),
        _ts("GPU temperature", "celsius", (f"DCGM_FI_DEV_GPU_TEMP{SEL}", _GPU)),
        _ts("GPU power", "watt", (f"DCGM_FI_DEV_POWER_USAGE{SEL}", _GPU)),
        _ts("Framebuffer used", "mbytes", (f"DCGM_FI_DEV_FB_USED{SEL}", _GPU)),
    ]


def node_health_panels() -> list[PanelSpec]:
    """Error counters and clock events of the selected nodes, and the node check."""
    return [
        _ts(
            "XIDs in the window",
            "none",
            (f"DCGM_EXP_XID_ERRORS_COUNT{SEL}", "{{node}} xid {{xid}}"),
        ),
        _ts(
            "Remapped rows (uncorrectable)",
            "none",
            (f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{SEL}", _GPU),
        ),
        _ts(
            "PCIe replays per second",
            "ops",
            (f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{SEL}[5m])", _GPU),
        ),
        _ts(
            "NVLink errors per second",
            "ops",
            (f"rate(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{SEL}[5m])", f"{_GPU} recovery"),
            (f"rate(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{SEL}[5m])", f"{_GPU} crc"),
        ),
        _ts(
            "Clock-event time (share)",
            "percentunit",
            (f"rate(DCGM_FI_DEV_POWER_VIOLATION{SEL}[5m]) / {VIOLATION_NS_PER_S}", f"{_GPU} power"),
            (
                f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{SEL}[5m]) / {VIOLATION_NS_PER_S}",
                f"{_GPU} thermal",
            ),
        ),
        _ts("clusterforge check", "none", (f"{EXPORTER_HEALTH_METRIC}{SEL}", "{{node}}")),
    ]


def _ib_health_panels() -> list[PanelSpec]:
    ib = "node_infiniband_"
    return [
        _ts(
            "Discards by leaf group",
            "pps",
            (
                f"sum by (leaf_group) (rate({ib}port_discards_received_total{SEL}[5m])"
                f" + rate({ib}port_discards_transmitted_total{SEL}[5m]))",
                "{{leaf_group}}",
            ),
        ),
        _ts(
            "Receive errors by node and rail",
            "pps",
            (f"rate({ib}port_errors_received_total{SEL}[5m]) > 0", "{{node}} rail {{rail}}"),
        ),
        _ts(
            "Link events (symbol errors, recoveries, downs) in the last hour",
            "none",
            (f"increase({ib}symbol_error_total{SEL}[1h]) > 0", "{{node}} rail {{rail}} symbol"),
            (
                f"increase({ib}link_error_recovery_total{SEL}[1h]) > 0",
                "{{node}} rail {{rail}} recovery",
            ),
            (f"increase({ib}link_downed_total{SEL}[1h]) > 0", "{{node}} rail {{rail}} down"),
        ),
    ]


def _roce_health_panels() -> list[PanelSpec]:
    """The Ethernet/RoCE counters of the clusterforge exporter (ops.ethernet)."""
    eth, roce = "clusterforge_eth_", "clusterforge_roce_"
    port = "{{node}} rail {{rail}}"
    lossless = f'{{priority="{ROCE_PRIORITY}", rack=~"$rack", node=~"$node"}}'
    return [
        _ts(
            "Discards by leaf group",
            "pps",
            (
                f"sum by (leaf_group) (rate({eth}rx_discards_total{SEL}[5m])"
                f" + rate({eth}rx_out_of_buffer_total{SEL}[5m])"
                f" + rate({eth}tx_discards_total{SEL}[5m]))",
                "{{leaf_group}}",
            ),
        ),
        _ts(
            "Pre-FEC bit error ratio by node and rail",
            "sci",
            (
                f"rate({eth}rx_fec_corrected_bits_total{SEL}[5m])"
                f" / rate({eth}rx_bits_total{SEL}[5m]) > 0",
                port,
            ),
        ),
        _ts(
            "Link events (symbol errors, FEC-uncorrected, link downs) in the last hour",
            "none",
            (f"increase({eth}rx_symbol_errors_total{SEL}[1h]) > 0", f"{port} symbol"),
            (
                f"increase({eth}rx_fec_uncorrected_symbols_total{SEL}[1h]) > 0",
                f"{port} uncorrected",
            ),
            (f"increase({eth}link_down_events_total{SEL}[1h]) > 0", f"{port} down"),
        ),
        _ts(
            f"PFC pause time, priority {ROCE_PRIORITY} (share)",
            "percentunit",
            (f"rate({eth}rx_pause_microseconds_total{lossless}[5m]) / 1e6", port),
        ),
        _ts(
            "ECN-marked RoCE packets and CNPs per second",
            "pps",
            (f"rate({roce}ecn_marked_packets_total{SEL}[5m])", f"{port} ECN"),
            (f"rate({roce}cnp_handled_total{SEL}[5m])", f"{port} CNP"),
        ),
    ]


def network_panels(design: Design) -> list[PanelSpec]:
    """Throughput by rail (the RDMA port counters count both kinds), then the health panels
    of the design's fabric kind: its error counters are the only ones that move."""
    ib = "node_infiniband_"
    panels = [
        _ts(
            "Receive by rail",
            "bps",
            (
                f"sum by (rail) (rate({ib}port_data_received_bytes_total{SEL}[5m])) * 8",
                "rail {{rail}}",
            ),
        ),
        _ts(
            "Transmit by rail",
            "bps",
            (
                f"sum by (rail) (rate({ib}port_data_transmitted_bytes_total{SEL}[5m])) * 8",
                "rail {{rail}}",
            ),
        ),
    ]
    fabric = design.spec.network.fabric
    match fabric:
        case "infiniband":
            return panels + _ib_health_panels()
        case "roce":
            return panels + _roce_health_panels()
        case _:
            assert_never(fabric)


def power_panels(design: Design) -> list[PanelSpec]:
    gpu_racks = [r for r in design.racks if r.role == "gpu"]
    budget_kw = min(
        (r.circuit.usable_kw for r in gpu_racks), default=design.spec.facility.max_rack_kw
    )
    thresholds = {
        "mode": "absolute",
        "steps": [
            {"color": "green", "value": None},
            {"color": "orange", "value": round(0.8 * budget_kw, 2)},
            {"color": "red", "value": round(budget_kw, 2)},
        ],
    }
    per_rack = f"sum by (rack) (DCGM_FI_DEV_POWER_USAGE{RACK}) / 1000"
    return [
        PanelSpec(
            "Rack power from the PDUs (kW; red = usable feed power)",
            "bargauge",
            ((f"{RACK_POWER_RECORD}{RACK} / 1000", "{{rack}}"),),
            "kwatt",
            {"thresholds": thresholds, "max": round(budget_kw, 2)},
        ),
        _ts(
            "Rack power over time: PDU and GPUs",
            "kwatt",
            (f"{RACK_POWER_RECORD}{RACK} / 1000", "{{rack}} PDU"),
            (per_rack, "{{rack}} GPUs"),
        ),
        PanelSpec(
            "GPU energy per rack, last 24 h (kWh)",
            "stat",
            (
                (
                    f"sum by (rack) (increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{RACK}[24h])) / 3.6e9",
                    "{{rack}}",
                ),
            ),
            "kwatth",
        ),
    ]
