"""Grafana dashboards (JSON): cluster overview, per node, network, power per rack.

NVIDIA's dashboard 12239 has eight panels and no health rows (operations.md §3); these add
XID counts, remapped rows, PCIe replays, NVLink errors and clock-event time, and group by
the ``rack``, ``leaf_group`` and ``rail`` labels that prometheus.yml attaches.  Panels use
the current ``timeseries``/``stat``/``bargauge`` types, not the deprecated ``graph``.
"""

from __future__ import annotations

import json
from typing import Any

from clusterforge.design import Design
from clusterforge.generate.monitoring_data import EXPORTER_HEALTH_METRIC

__all__ = ["dashboards"]

SCHEMA_VERSION = 39
PANEL_W, PANEL_H = 12, 8
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
_SEL = '{rack=~"$rack", node=~"$node"}'


def _variable(name: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "current": {"text": "All", "value": "$__all"},
    }


def _templating(with_node: bool) -> dict[str, Any]:
    variables: list[dict[str, Any]] = [
        {"name": "datasource", "type": "datasource", "query": "prometheus"},
        _variable("rack", "label_values(DCGM_FI_DEV_GPU_TEMP, rack)"),
    ]
    if with_node:
        variables.append(
            _variable("node", 'label_values(DCGM_FI_DEV_GPU_TEMP{rack=~"$rack"}, node)')
        )
    return {"list": variables}


def _panel(
    index: int, title: str, kind: str, targets: list[tuple[str, str]], unit: str, **options: Any
) -> dict[str, Any]:
    panel = {
        "id": index + 1,
        "title": title,
        "type": kind,
        "datasource": DATASOURCE,
        "gridPos": {
            "x": (index % 2) * PANEL_W,
            "y": (index // 2) * PANEL_H,
            "w": PANEL_W,
            "h": PANEL_H,
        },
        "fieldConfig": {"defaults": {"unit": unit, **options}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "expr": expr,
                "legendFormat": legend,
                "datasource": DATASOURCE,
            }
            for i, (expr, legend) in enumerate(targets)
        ],
    }
    return panel


def _dashboard(
    uid: str, title: str, panels: list[tuple[Any, ...]], with_node: bool
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["clusterforge"],
        "schemaVersion": SCHEMA_VERSION,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": _templating(with_node),
        "panels": [
            _panel(i, *spec[:4], **(spec[4] if len(spec) > 4 else {}))
            for i, spec in enumerate(panels)
        ],
    }


def _overview(design: Design) -> dict[str, Any]:
    gpus = design.compute.num_gpus_total
    return _dashboard(
        f"{design.spec.name}-overview",
        f"{design.spec.name}: cluster overview",
        [
            (
                "GPUs reporting (of the design's)",
                "stat",
                [("count(DCGM_FI_DEV_GPU_TEMP)", "reporting"), (f"vector({gpus})", "designed")],
                "none",
            ),
            (
                "Unhealthy nodes",
                "stat",
                [(f"count({EXPORTER_HEALTH_METRIC} == 0) or vector(0)", "unhealthy")],
                "none",
            ),
            (
                "GPU utilisation by rack",
                "timeseries",
                [('avg by (rack) (DCGM_FI_DEV_GPU_UTIL{rack=~"$rack"})', "{{rack}}")],
                "percent",
            ),
            (
                "XIDs in the window",
                "timeseries",
                [
                    (
                        'sum by (node, xid) (DCGM_EXP_XID_ERRORS_COUNT{rack=~"$rack"})',
                        "{{node}} xid {{xid}}",
                    )
                ],
                "none",
            ),
            (
                "Tensor core activity",
                "timeseries",
                [('avg(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{rack=~"$rack"})', "mean")],
                "percentunit",
            ),
            (
                "GPU power, total",
                "timeseries",
                [('sum(DCGM_FI_DEV_POWER_USAGE{rack=~"$rack"}) / 1000', "kW")],
                "kwatt",
            ),
        ],
        with_node=False,
    )


def _per_node(design: Design) -> dict[str, Any]:
    return _dashboard(
        f"{design.spec.name}-node",
        f"{design.spec.name}: per node",
        [
            (
                "GPU utilisation",
                "timeseries",
                [(f"DCGM_FI_DEV_GPU_UTIL{_SEL}", "{{node}} gpu {{gpu}}")],
                "percent",
            ),
            (
                "GPU temperature",
                "timeseries",
                [(f"DCGM_FI_DEV_GPU_TEMP{_SEL}", "{{node}} gpu {{gpu}}")],
                "celsius",
            ),
            (
                "GPU power",
                "timeseries",
                [(f"DCGM_FI_DEV_POWER_USAGE{_SEL}", "{{node}} gpu {{gpu}}")],
                "watt",
            ),
            (
                "Framebuffer used",
                "timeseries",
                [(f"DCGM_FI_DEV_FB_USED{_SEL}", "{{node}} gpu {{gpu}}")],
                "mbytes",
            ),
            (
                "XIDs in the window",
                "timeseries",
                [(f"DCGM_EXP_XID_ERRORS_COUNT{_SEL}", "{{node}} xid {{xid}}")],
                "none",
            ),
            (
                "Remapped rows (uncorrectable)",
                "timeseries",
                [(f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{_SEL}", "{{node}} gpu {{gpu}}")],
                "none",
            ),
            (
                "PCIe replays per second",
                "timeseries",
                [(f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{_SEL}[5m])", "{{node}} gpu {{gpu}}")],
                "ops",
            ),
            (
                "NVLink errors per second",
                "timeseries",
                [
                    (
                        f"rate(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{_SEL}[5m])",
                        "{{node}} gpu {{gpu}} recovery",
                    ),
                    (
                        f"rate(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{_SEL}[5m])",
                        "{{node}} gpu {{gpu}} crc",
                    ),
                ],
                "ops",
            ),
            (
                "Clock-event time (share)",
                "timeseries",
                [
                    (
                        f"rate(DCGM_FI_DEV_POWER_VIOLATION{_SEL}[5m]) / 1e6",
                        "{{node}} gpu {{gpu}} power",
                    ),
                    (
                        f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{_SEL}[5m]) / 1e6",
                        "{{node}} gpu {{gpu}} thermal",
                    ),
                ],
                "percentunit",
            ),
            (
                "clusterforge check",
                "timeseries",
                [(f"{EXPORTER_HEALTH_METRIC}{_SEL}", "{{node}}")],
                "none",
            ),
        ],
        with_node=True,
    )


def _network(design: Design) -> dict[str, Any]:
    sel = _SEL
    return _dashboard(
        f"{design.spec.name}-network",
        f"{design.spec.name}: network",
        [
            (
                "Receive by rail",
                "timeseries",
                [
                    (
                        f"sum by (rail) (rate(node_infiniband_port_data_received_bytes_total{sel}[5m])) * 8",
                        "rail {{rail}}",
                    )
                ],
                "bps",
            ),
            (
                "Transmit by rail",
                "timeseries",
                [
                    (
                        f"sum by (rail) (rate(node_infiniband_port_data_transmitted_bytes_total{sel}[5m])) * 8",
                        "rail {{rail}}",
                    )
                ],
                "bps",
            ),
            (
                "Discards by leaf group",
                "timeseries",
                [
                    (
                        f"sum by (leaf_group) (rate(node_infiniband_port_discards_received_total{sel}[5m])"
                        f" + rate(node_infiniband_port_discards_transmitted_total{sel}[5m]))",
                        "{{leaf_group}}",
                    )
                ],
                "pps",
            ),
            (
                "Receive errors by node and rail",
                "timeseries",
                [
                    (
                        f"rate(node_infiniband_port_errors_received_total{sel}[5m]) > 0",
                        "{{node}} rail {{rail}}",
                    )
                ],
                "pps",
            ),
        ],
        with_node=True,
    )


def _power(design: Design) -> dict[str, Any]:
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
    return _dashboard(
        f"{design.spec.name}-power",
        f"{design.spec.name}: power per rack",
        [
            (
                "GPU power by rack (kW; red = usable feed power)",
                "bargauge",
                [('sum by (rack) (DCGM_FI_DEV_POWER_USAGE{rack=~"$rack"}) / 1000', "{{rack}}")],
                "kwatt",
                {"thresholds": thresholds, "max": round(budget_kw, 2)},
            ),
            (
                "GPU power by rack over time",
                "timeseries",
                [('sum by (rack) (DCGM_FI_DEV_POWER_USAGE{rack=~"$rack"}) / 1000', "{{rack}}")],
                "kwatt",
            ),
            (
                "GPU energy per rack, last 24 h (kWh)",
                "stat",
                [
                    (
                        'sum by (rack) (increase(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{rack=~"$rack"}[24h])) / 3.6e9',
                        "{{rack}}",
                    )
                ],
                "kwatth",
            ),
        ],
        with_node=False,
    )


def dashboards(design: Design) -> dict[str, str]:
    """Dashboard JSON texts by file stem."""
    boards = {
        "cluster-overview": _overview(design),
        "node": _per_node(design),
        "network": _network(design),
        "power-per-rack": _power(design),
    }
    return {name: json.dumps(board, indent=2) + "\n" for name, board in boards.items()}
