"""Small designs for the netsim tests (planning is pure, so each test can build its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterforge.design import Design, plan
from clusterforge.netsim import FabricGraph, build_fabric_graph
from clusterforge.spec import parse_spec

__all__ = ["EXAMPLES", "make_design", "single_node"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# A 3:1 oversubscribed RoCE leaf-spine: where placement and routing visibly matter.
OVERSUBSCRIBED_ROCE = {
    "topology": "leaf-spine",
    "oversubscription": 3.0,
    "fabric": "roce",
    "switch": "sn5600",
}


def make_design(**overrides: Any) -> Design:
    """A small design: 512 H100 by default, no spares, TP 8."""
    data: dict[str, Any] = {
        "num_gpus": 512,
        "node": "dgx-h100",
        "spare_fraction": 0,
        "workload": {"tensor_parallel": 8, "global_batch": 1024},
    }
    data.update(overrides)
    return plan(parse_spec(data))


def single_node(node: str) -> tuple[Design, FabricGraph]:
    design = make_design(num_gpus=8, node=node, workload={"tensor_parallel": 8, "global_batch": 8})
    return design, build_fabric_graph(design)
