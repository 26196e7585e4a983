"""Grafana dashboards (JSON): cluster overview, per node, network, power per rack.

The panels are listed in :mod:`clusterforge.generate.monitoring.panels`; this module lays them
out in Grafana's dashboard model (Grafana documentation, "JSON model"): a 24-column grid,
``templating`` variables for the data source, racks and nodes, and the current
``timeseries``/``stat``/``bargauge`` panel types, not the deprecated ``graph``.  The tests
parse every dashboard with Grafana's own model (grafana-foundation-sdk), so a field Grafana
does not know fails there.
"""

from __future__ import annotations

import json
from typing import Any

from clusterforge.design import Design
from clusterforge.generate.monitoring.panels import (
    PanelSpec,
    network_panels,
    node_gpu_panels,
    node_health_panels,
    overview_panels,
    power_panels,
)

__all__ = ["SCHEMA_VERSION", "dashboards"]

SCHEMA_VERSION = 39  # Grafana 10.4's dashboard schema; newer Grafana migrates it on load
GRID_COLUMNS = 24
PANEL_W, PANEL_H = GRID_COLUMNS // 2, 8
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


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


def _panel(index: int, spec: PanelSpec) -> dict[str, Any]:
    """Panel ``index`` of a two-column grid."""
    return {
        "id": index + 1,
        "title": spec.title,
        "type": spec.kind,
        "datasource": DATASOURCE,
        "gridPos": {
            "x": (index % 2) * PANEL_W,
            "y": (index // 2) * PANEL_H,
            "w": PANEL_W,
            "h": PANEL_H,
        },
        "fieldConfig": {"defaults": {"unit": spec.unit, **spec.options}, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "expr": expr,
                "legendFormat": legend,
                "datasource": DATASOURCE,
            }
            for i, (expr, legend) in enumerate(spec.targets)
        ],
    }


def _dashboard(uid: str, title: str, panels: list[PanelSpec], *, with_node: bool) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["clusterforge"],
        "schemaVersion": SCHEMA_VERSION,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "templating": _templating(with_node),
        "panels": [_panel(i, spec) for i, spec in enumerate(panels)],
    }


def dashboards(design: Design) -> dict[str, str]:
    """Dashboard JSON texts by file stem."""
    name = design.spec.name
    boards = {
        "cluster-overview": _dashboard(
            f"{name}-overview",
            f"{name}: cluster overview",
            overview_panels(design),
            with_node=False,
        ),
        "node": _dashboard(
            f"{name}-node",
            f"{name}: per node",
            node_gpu_panels() + node_health_panels(),
            with_node=True,
        ),
        "network": _dashboard(
            f"{name}-network", f"{name}: network", network_panels(design), with_node=True
        ),
        "power-per-rack": _dashboard(
            f"{name}-power", f"{name}: power per rack", power_panels(design), with_node=False
        ),
    }
    return {stem: json.dumps(board, indent=2) + "\n" for stem, board in boards.items()}
