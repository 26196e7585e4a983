"""Simulate published nccl-tests rows and score them.

Rows come from every ``*.toml`` of this folder whose rows name a ``collective`` and its
``busbw`` (``nccl_tests_published.toml``, ``nccl_tests_more.toml`` and the ``pub_*``
sources), each in its set (:mod:`validation.sets`). A row places its communicator on
``num_nodes`` nodes, ``ranks_per_node`` GPUs on each (default all), with optional network
overrides (``nics_per_node``, ``nic_gbit_per_s``, ``fabric``, ``transport``) and NCCL
settings of the spec's network (``nccl_tuner``, ``nccl_protocols``). A file's
``[cluster.<name>]`` tables give the NCCL settings the runs of the rows naming that ``cluster`` were made with (``nvls = false``:
``NCCL_NVLS_ENABLE=0``; ``nccl_version``: the NCCL release), kept out of the rows so that held-out rows stay as frozen.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterforge.catalog import load_catalog
from clusterforge.design import plan
from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.spec import parse_spec
from clusterforge.topology.graph import FabricGraph
from validation.sets import data_files, file_rows, kind_of

__all__ = [
    "CLUSTERS",
    "LARGE_BYTES",
    "ROWS",
    "SUBSETS",
    "Scored",
    "mean_abs_error",
    "ranks",
    "raw_rows",
    "score",
]

SUBSETS = ("calibration", "development", "heldout")
# nccl-tests sizes from here up are the bandwidth regime; below, latency and the pipeline
# ramp matter (separate error targets)
LARGE_BYTES = 16 * 2**20


def raw_rows() -> list[tuple[str, dict[str, Any]]]:
    """(file name, row) of every nccl-tests row of the data files, in file order."""
    return [
        (path.name, row)
        for path in data_files()
        for row in file_rows(tomllib.loads(path.read_text()))
        if kind_of(row) == "nccl"
    ]


ROWS: list[dict[str, Any]] = [row for _, row in raw_rows()]


def _clusters() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for path in data_files():
        for name, settings in tomllib.loads(path.read_text()).get("cluster", {}).items():
            if name in out:
                raise ValueError(f"{path.name}: cluster {name!r} has settings in two files")
            out[name] = settings
    return out


# NCCL settings of each named cluster's runs (module docstring)
CLUSTERS: dict[str, dict[str, Any]] = _clusters()


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
def _graph(
    node: str,
    num_nodes: int,
    nics_per_node: int | None,
    facility: tuple[tuple[str, Any], ...] = (),
    fabric: str | None = None,
    *,
    nic_gbit_per_s: float | None = None,
    transport: str | None = None,
    nccl_tuner: str | None = None,
    nccl_protocols: tuple[str, ...] | None = None,
    efa_instance: str | None = None,
) -> FabricGraph:
    """The fabric of ``num_nodes`` machines of catalog ``node`` (their own GPU count)."""
    gpus = load_catalog().nodes[node].num_gpus * num_nodes
    spec: dict[str, Any] = {
        "name": f"{node}-x{num_nodes}",
        "num_gpus": gpus,
        "node": node,
        "spare_fraction": 0,
        "facility": dict(facility),
        "workload": {"tensor_parallel": 8 if gpus >= 8 else gpus, "global_batch": gpus},
    }
    network: dict[str, Any] = {}
    if nics_per_node is not None:
        network["nics_per_node"] = nics_per_node
    if fabric is not None:
        network.update({"fabric": fabric, "switch": "sn5600"} if fabric == "roce" else {})
    if nic_gbit_per_s is not None:
        network["nic_gbit_per_s"] = nic_gbit_per_s
    if transport is not None:
        network["transport"] = transport
    if nccl_tuner is not None:
        network["nccl_tuner"] = nccl_tuner
    if nccl_protocols is not None:
        network["nccl_protocols"] = list(nccl_protocols)
    if efa_instance is not None:
        network["efa_instance"] = efa_instance
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


def _ll128_c2c(settings: dict[str, Any]) -> bool:
    """NCCL_LL128_C2C as the cluster's NCCL had it: the variable (default 1) came with NCCL
    2.27.3; before, LL128 stayed off between nodes whose GPUs reach their NICs through a
    Grace CPU (:func:`clusterforge.netsim.tuner.ll128_enabled`)."""
    version = settings.get("nccl_version")
    if version is None:
        return True
    return tuple(int(part) for part in str(version).split(".")) >= (2, 27, 3)


def row_graph(row: dict[str, Any]) -> FabricGraph:
    """The fabric graph a row's nccl-tests call runs on."""
    facility = tuple(sorted(row.get("facility", {}).items()))
    return _graph(
        row["node"],
        row["num_nodes"],
        row.get("nics_per_node"),
        facility,
        row.get("fabric"),
        nic_gbit_per_s=row.get("nic_gbit_per_s"),
        transport=row.get("transport"),
        nccl_tuner=row.get("nccl_tuner"),
        nccl_protocols=tuple(row["nccl_protocols"]) if "nccl_protocols" in row else None,
        efa_instance=row.get("efa_instance"),
    )


def score(row: dict[str, Any], *, algorithm: str | None = None, protocol: str = "auto") -> Scored:
    """``row`` simulated as its nccl-tests call (the row's algorithm, NCCL's choice when it
    names none), or with ``algorithm`` and ``protocol`` forced."""
    graph = row_graph(row)
    res = simulate_collective(
        graph,
        row["collective"],
        row["size_bytes"],
        ranks(row, graph.gpus_per_node)[None, :],
        algorithm=algorithm or row["algorithm"],  # type: ignore[arg-type]
        protocol=protocol,  # type: ignore[arg-type]
        nvls=bool(CLUSTERS.get(row.get("cluster", ""), {}).get("nvls", True)),
        ll128_c2c=_ll128_c2c(CLUSTERS.get(row.get("cluster", ""), {})),
    )
    return Scored(row, res.busbw_gbyte_per_s, res.algorithm, res.protocol)


def mean_abs_error(scored: list[Scored]) -> float:
    return float(np.mean([abs(s.error) for s in scored])) if scored else 0.0


def size_split_line(name: str, scored: list[Scored], width: int = 34) -> str:
    """One summary line: mean absolute error of ``scored``, then of its rows from
    :data:`LARGE_BYTES` up and below, each with its row count."""
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
    return (
        f"{name:{width}} {mean_abs_error(scored):7.2%} ({len(scored)}) "
        f">= 16 MiB {mean_abs_error(large):7.2%} ({len(large)}) "
        f"< 16 MiB {mean_abs_error(small):7.2%} ({len(small)})"
    )
