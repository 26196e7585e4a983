"""Collectives across several NVLink domains (multi-node NVLink, MNNVL): NCCL's own estimate
on the two-rack rows, and a what-if NVLink step cost on NVL72 racks.

NCCL's tuner at the rows' releases (``ncclTopoTuneModel`` in ``src/graph/tuning.cc``,
NVIDIA/nccl v2.28.7-1 and v2.29.2-1) prices an all-reduce across MNNVL cliques with nNodes =
the cliques (nodes counted by the first rank of each ring, ``initTransportsRank`` in
``src/init.cc``), ppn = nRanks / nNodes, the NVLink row for the steps inside a clique
(``intraHw = typeIntra == LINK_NVL``) and the network row for the steps between them:

* tree: ``baseLat + 2 ((ppn - 1) hwLat[NVLINK][TREE] + log2i(nNodes) interLat)``;
* ring: ``baseLat + (nsteps - 2 (nNodes - 1)) max(hwLat[NVLINK][RING], netOverhead)
  + 2 (nNodes - 1) interLat``;
* NVLS-Tree (NVLS on): ``hwLat[NVLINK][NVLS_TREE] + 2 log2i(nNodes) interLat``; NVLS
  itself is disabled across nodes unless CollNet is on (``algoEnable``, same function).

The first part prints, for every development row across two racks below 64 MiB, the measured
call time, the model's, and NCCL's latency term of each candidate from the model's own
context (``netsim.latency.nccl_latency_s``): the model restates NCCL's table there.

The second part is a what-if, not a model change: every NVLink LL / LL128 step of a ring or
tree (and chain) on a multi-node NVLink rack costs ``extra`` microseconds more than NCCL's
0.6 / 1.25-1.9 us (``hwLat[NVLINK]``).  No primary source gives such a figure; the values
swept are read off development rows (the one- and two-tray GB300 rings and the GB200
two-rack tree), so none may be adopted.  It prints every row that moves and the mean absolute
error by set and size band, for the extra on NVL72 graphs only and on every NVLink 5 graph.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/mnnvl_multiclique_whatif.py

Calibration and development rows only; a held-out row is never simulated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import numpy as np

import clusterforge.netsim.latency as latency_mod
import clusterforge.netsim.solve as solve_mod
from clusterforge.busbw import bus_factor
from clusterforge.netsim.collectives import ring_order
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.domains import mnnvl
from clusterforge.netsim.tuner import generation_of
from clusterforge.netsim.vocab import Algorithm, Protocol
from validation.nccl_rows import CLUSTERS, LARGE_BYTES, ROWS, Scored, ranks, row_graph, score

STUDIED = ("calibration", "development")
TWO_RACK_PREFIXES = ("pub-oke-gb200-32n-ar-", "pub-ocigpu-gb300-32n-ar-")
TWO_RACK_MAX_BYTES = 64 * 2**20
EXTRA_STEP_US = (0.4, 0.8, 1.2)
_CANDIDATES: tuple[tuple[Algorithm, Protocol], ...] = (
    ("tree", "ll"),
    ("tree", "ll128"),
    ("tree", "simple"),
    ("ring", "ll"),
    ("ring", "ll128"),
    ("nvls_tree", "simple"),
)
_ORIGINAL_HW_US = latency_mod._hw_us


def call_time_us(row: dict[str, Any], busbw_gbyte_per_s: float) -> float:
    """Call time (us) that ``busbw_gbyte_per_s`` means for the row's collective and size."""
    n = int(ranks(row, row_graph(row).gpus_per_node).size)
    return row["size_bytes"] * bus_factor(row["collective"], n) / busbw_gbyte_per_s / 1e3


def nccl_latencies_us(row: dict[str, Any]) -> dict[str, float]:
    """NCCL's latency term (us) of each candidate on the row's communicator, from the
    model's tuning context of its tree (nNodes = the cliques, ppn = nRanks / nNodes);
    NVLS-Tree only where the cluster runs NVLS."""
    graph = row_graph(row)
    seq = ring_order(graph, ranks(row, graph.gpus_per_node)[None, :])
    ctx = tuning_context(graph, row["collective"], seq, "tree")
    nvls_on = bool(CLUSTERS.get(row.get("cluster", ""), {}).get("nvls", True))
    out: dict[str, float] = {}
    for algorithm, protocol in _CANDIDATES:
        if algorithm == "nvls_tree" and not nvls_on:
            continue
        lat = latency_mod.nccl_latency_s(algorithm, protocol, ctx) * 1e6
        name = f"{algorithm}/{protocol} (nNodes {ctx.num_nodes}, ppn {ctx.ranks_per_node})"
        out[name] = lat
    return out


def print_two_rack_rows() -> None:
    """Measured and model call times of the two-rack development rows below 64 MiB, and
    NCCL's own latency term of each candidate."""
    rows = [
        r
        for r in ROWS
        if r["set"] == "development"
        and r["id"].startswith(TWO_RACK_PREFIXES)
        and r["size_bytes"] < TWO_RACK_MAX_BYTES
    ]
    print("two-rack all-reduce rows: call time (us), measured and model")
    print(f"{'row':30} {'measured':>9} {'model':>9} {'pick':>12} {'excess':>8}")
    for row in rows:
        s = score(row)
        meas = call_time_us(row, row["busbw"])
        model = call_time_us(row, s.simulated_gbyte_per_s)
        pick = f"{s.algorithm}/{s.protocol}"
        print(f"{row['id']:30} {meas:9.1f} {model:9.1f} {pick:>12} {meas - model:+8.1f}")
    for prefix in TWO_RACK_PREFIXES:
        first = next(r for r in rows if r["id"].startswith(prefix))
        print(f"\nNCCL's latency term (us), {prefix}*, from the model's context:")
        for name, lat in nccl_latencies_us(first).items():
            print(f"  {name:42} {lat:7.1f}")
    print()


def _extended_hw_us(
    extra_us: float, protocols: tuple[str, ...]
) -> Callable[[Any, str, Protocol], float]:
    def hw_us(kind: Any, algorithm: str, protocol: Protocol) -> float:
        base = _ORIGINAL_HW_US(kind, algorithm, protocol)
        if kind == "nvlink" and protocol in protocols and algorithm in ("ring", "tree", "chain"):
            return base + extra_us
        return base

    return hw_us


@contextlib.contextmanager
def nvlink_step_cost(extra_us: float, protocols: tuple[str, ...]) -> Iterator[None]:
    """NVLink ring and tree steps of ``protocols`` ``extra_us`` dearer than NCCL's table;
    the solved phases' cache is emptied on the way in and restored on the way out."""
    with (
        mock.patch.object(latency_mod, "_hw_us", _extended_hw_us(extra_us, protocols)),
        mock.patch.dict(solve_mod._CACHE, clear=True),
    ):
        yield


def applies(row: dict[str, Any], scope: str) -> bool:
    """Whether the what-if reaches ``row``: ``nvl72`` = multi-node NVLink graphs,
    ``nvlink5`` = every Blackwell NVLink graph."""
    graph = row_graph(row)
    if scope == "nvl72":
        return mnnvl(graph)
    return generation_of(graph.scaleup) == "blackwell" and graph.scaleup_class == "nvlink"


def scored_rows(
    extra_us: float, scope: str, protocols: tuple[str, ...] = ("ll", "ll128")
) -> list[Scored]:
    """Every calibration and development row, the what-if on the rows ``scope`` reaches."""
    rows = [r for r in ROWS if r["set"] in STUDIED]
    out: list[Scored] = []
    with nvlink_step_cost(extra_us, protocols):
        for row in rows:
            if applies(row, scope):
                out.append(score(row))
    reached = {id(s.row): s for s in out}
    return [reached.get(id(r)) or score(r) for r in rows]


def band_means(scored: list[Scored]) -> dict[str, float]:
    """Mean absolute error by set and size band."""
    out: dict[str, float] = {}
    for subset in STUDIED:
        for large, band in ((False, "<16M"), (True, ">=16M")):
            errs = [
                s.error
                for s in scored
                if s.row["set"] == subset and (s.row["size_bytes"] >= LARGE_BYTES) == large
            ]
            out[f"{subset[:3]} {band}"] = float(np.mean(np.abs(errs)))
        out[f"{subset[:3]} all"] = float(
            np.mean([abs(s.error) for s in scored if s.row["set"] == subset])
        )
    return out


def print_moves(before: list[Scored], after: list[Scored], label: str) -> None:
    """Rows whose error or pick moves under the what-if."""
    print(f"rows that move, {label}:")
    for b, a in zip(before, after, strict=True):
        if abs(a.error - b.error) > 5e-4 or (b.algorithm, b.protocol) != (a.algorithm, a.protocol):
            pb, pa = f"{b.algorithm}/{b.protocol}", f"{a.algorithm}/{a.protocol}"
            print(f"  {b.row['id']:34} {pb:>12} {b.error:+7.1%} -> {pa:>12} {a.error:+7.1%}")
    print()


def main() -> None:
    print_two_rack_rows()
    with mock.patch.dict(solve_mod._CACHE, clear=True):
        before = [score(r) for r in ROWS if r["set"] in STUDIED]
    both: tuple[str, ...] = ("ll", "ll128")
    variants: list[tuple[float, str, tuple[str, ...]]] = [(x, "nvl72", both) for x in EXTRA_STEP_US]
    variants += [(EXTRA_STEP_US[1], "nvl72", ("ll",)), (EXTRA_STEP_US[1], "nvlink5", both)]
    table: list[tuple[str, dict[str, float]]] = [("model", band_means(before))]
    for extra_us, scope, protocols in variants:
        after = scored_rows(extra_us, scope, protocols)
        label = f"+{extra_us} us {'/'.join(protocols)}, {scope}"
        if extra_us == EXTRA_STEP_US[1] and protocols == both:
            print_moves(before, after, label)
        table.append((label, band_means(after)))
    keys = list(table[0][1])
    print(f"{'mean |error|':30}" + "".join(f"{k:>11}" for k in keys))
    for label, means in table:
        print(f"{label:30}" + "".join(f"{means[k]:11.2%}" for k in keys))


if __name__ == "__main__":
    main()
