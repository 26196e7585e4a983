"""Simulate the published nccl-tests rows of ``nccl_tests_published.toml`` and
``nccl_tests_more.toml`` and score them.

Each row is in one set: ``calibration`` (a constant was fitted to it), ``development``
(its error may guide a mechanism) or ``heldout`` (frozen when added, scored as a whole).
A row places its communicator on ``num_nodes`` nodes, ``ranks_per_node`` GPUs on each
(default all), with optional network overrides (``nics_per_node``, ``fabric``)."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from clusterforge.design import plan
from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.spec import parse_spec

__all__ = ["LARGE_BYTES", "ROWS", "SUBSETS", "Scored", "Subset", "mean_abs_error", "score"]

Subset = Literal["calibration", "development", "heldout"]
SUBSETS: tuple[Subset, ...] = ("calibration", "development", "heldout")
FILES = ("nccl_tests_published.toml", "nccl_tests_more.toml")
# nccl-tests sizes from here up are the bandwidth regime; below, latency and the pipeline
# ramp matter (separate error targets)
LARGE_BYTES = 16 * 2**20


def _load(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = tomllib.loads(Path(__file__).with_name(name).read_text())["row"]
    return [{**row, "file": name} for row in rows]


ROWS: list[dict[str, Any]] = [row for name in FILES for row in _load(name)]


@dataclass(frozen=True)
class Scored:
    """One row: measured and simulated busbw, relative error, what the simulator chose."""

    row: dict[str, Any]
    simulated_gbyte_per_s: float
    algorithm: str
    protocol: str

    @property
    def error(self) -> float:
        return self.simulated_gbyte_per_s / self.row["busbw"] - 1.0


@functools.cache
def _graph(node: str, num_nodes: int, nics_per_node: int | None, fabric: str | None):
    gpus = 8 * num_nodes  # every row's node has 8 GPUs
    spec: dict[str, Any] = {
        "name": f"{node}-x{num_nodes}",
        "num_gpus": gpus,
        "node": node,
        "spare_fraction": 0,
        "workload": {"tensor_parallel": 8 if gpus >= 8 else gpus, "global_batch": gpus},
    }
    network: dict[str, Any] = {}
    if nics_per_node is not None:
        network["nics_per_node"] = nics_per_node
    if fabric is not None:
        network.update({"fabric": fabric, "switch": "sn5600"} if fabric == "roce" else {})
    if network:
        spec["network"] = network
    return build_fabric_graph(plan(parse_spec(spec)))


def ranks(row: dict[str, Any], gpus_per_node: int) -> np.ndarray:
    """The communicator of ``row``: its first ``ranks_per_node`` GPUs of each node, or the
    first ``num_gpus`` GPUs."""
    if "ranks_per_node" in row:
        k = row["ranks_per_node"]
        return (np.arange(row["num_nodes"])[:, None] * gpus_per_node + np.arange(k)).ravel()
    return np.arange(row.get("num_gpus", gpus_per_node * row["num_nodes"]))


def score(row: dict[str, Any]) -> Scored:
    graph = _graph(row["node"], row["num_nodes"], row.get("nics_per_node"), row.get("fabric"))
    res = simulate_collective(
        graph,
        row["collective"],
        row["size_bytes"],
        ranks(row, graph.gpus_per_node)[None, :],
        algorithm=row["algorithm"],
    )
    return Scored(row, res.busbw_gbyte_per_s, res.algorithm, res.protocol)


def mean_abs_error(scored: list[Scored]) -> float:
    return float(np.mean([abs(s.error) for s in scored])) if scored else 0.0
