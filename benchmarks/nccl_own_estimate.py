"""NCCL's own time estimate against measured and simulated, nccl-tests rows below 16 MiB.

NCCL picks an algorithm and protocol by its own estimate, ``latency + size / bandwidth``
(``ncclTopoGetAlgoTime`` in ``src/graph/tuning.cc``, NVIDIA/nccl v2.26.2-1, the release of
nccl-tests #309's bare-metal rows), with the bandwidth of its tuner table
(``ncclTopoTuneModel``): the graph's channels times the speed the graph search settled on,
the per-protocol refinements and per-channel ceilings, the bus-to-algorithm ratio (``nRanks /
nsteps`` for rings, 1/2 for trees) and, for tree all-reduce, ``treeCorrectionFactor``.  This
script restates that estimate for ring, tree and chain (broadcast, reduce) across nodes, over
the simulator's own context (channels, ranks, nodes, path latency), and asks whether the
measured times below 16 MiB follow it better than the simulator does.

Simplifications, each of which can only shorten NCCL's estimate, so the comparison stands a
fortiori: NVLS-Tree is left out of the choice (adding a candidate can only lower the
minimum); the graph speed is the first search speed at or below the NIC's rate
(``sm90SpeedArrayInter``; for 25 and 50 GB/s NICs the Ampere list gives the same 24 and 48),
without pass 2's raise of a 2-node tree's intra speed (``ncclTopoCompute``,
``src/graph/search.cc``); multi-node LL ceilings are NCCL's Intel-host row.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/nccl_own_estimate.py

Development and calibration rows only (never held-out).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from benchmarks.validate_simulate import spans_nvlink_domains

from clusterforge.busbw import bus_factor
from clusterforge.constants import read_constants
from clusterforge.netsim.collectives import ring_order
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.latency import tuner_latency_s
from clusterforge.netsim.solve import solve_phases
from clusterforge.netsim.tuner import NCCL_CONSTANTS, TuningContext, protocols_for
from clusterforge.netsim.vocab import Algorithm, Protocol
from validation.nccl_rows import LARGE_BYTES, ROWS, _graph, ranks, score

_SPEEDS = NCCL_CONSTANTS.numbers("search_speeds_inter_gbyte_per_s")
_LL_MAX = NCCL_CONSTANTS.rows("ll_max_busbw_gbyte_per_s")
_RING_LL128 = NCCL_CONSTANTS.rows("per_channel_ring_ll128_gbyte_per_s")
_TREE_LL128 = NCCL_CONSTANTS.rows("per_channel_tree_ll128_gbyte_per_s")
_TREE = NCCL_CONSTANTS.rows("per_channel_tree_gbyte_per_s")
_TREE_CORRECTION = NCCL_CONSTANTS.rows("tree_correction")
# the model's fixed cost of a call across nodes beyond NCCL's table (fitted on calibration)
_CALL_US = read_constants("clusterforge.netsim", "efficiency.toml").number("call_across_nodes_us")


@dataclass(frozen=True)
class Estimate:
    """One row: measured time, NCCL's own estimate and its pick, the simulator's time."""

    row: dict[str, Any]
    measured_us: float
    nccl_us: float
    nccl_pick: str
    simulated_us: float
    simulated_pick: str

    def error(self, predicted_us: float) -> float:
        """Signed busbw error of a predicted time (predicted busbw / measured - 1)."""
        return self.measured_us / predicted_us - 1.0


def nccl_algbw_gbyte_per_s(
    algorithm: Algorithm,
    protocol: Protocol,
    ctx: TuningContext,
    nic_gbyte_per_s: float,
    *,
    simple_tree: bool = False,
) -> float:
    """NCCL's algorithm bandwidth for ``algorithm`` and ``protocol`` across nodes
    (``ncclTopoTuneModel``, v2.26.2-1): ``nChannels x bw`` refined per protocol, then
    converted from bus to algorithm bandwidth.  ``simple_tree``: the graph search fell back
    from the balanced tree to the simpler tree pattern (``ncclTopoCompute`` tries it on
    Hopper when the balanced one fails; nothing in the sources says which), for which NCCL
    takes 0.85 of the tree's bandwidth (``maxTreePattern == NCCL_TOPO_PATTERN_TREE``)."""
    speed = next((v for v in _SPEEDS if v <= nic_gbyte_per_s), _SPEEDS[-1])
    nch, n, coll = ctx.num_channels, ctx.num_ranks, ctx.collective
    col = min(ctx.num_nodes, 3) - 1
    gen = ctx.generation
    # NCCL indexes its LL ceilings across nodes by CPU vendor; row 0 is the Intel host's
    ll_max = _LL_MAX["volta"][col]
    bus = nch * speed
    ring = algorithm in ("ring", "chain")
    if ring and protocol == "ll":
        bus = min(ll_max, bus * 0.5)
    if ring and protocol == "ll128":
        bus = min(bus * 0.92, nch * _RING_LL128[gen][col])
    if algorithm == "tree" and coll == "all_reduce":
        bus = min(bus * 0.92, nch * _TREE[gen][col])
    if algorithm == "tree" and protocol == "ll":
        bus = min(bus / 3.8, ll_max)
    if algorithm == "tree" and protocol == "ll128":
        bus = min(bus * 120.0 / 128.0, nch * _TREE_LL128[gen][col])
    if algorithm == "tree" and simple_tree:
        bus *= 0.85
    nsteps = {"all_reduce": 2 * (n - 1), "all_gather": n - 1, "reduce_scatter": n - 1}
    return bus * (n / nsteps.get(coll, n) if ring else 0.5)


def _candidates(collective: str) -> tuple[Algorithm, ...]:
    if collective in ("broadcast", "reduce"):
        return ("chain",)
    return ("ring", "tree") if collective == "all_reduce" else ("ring",)


def nccl_estimate(row: dict[str, Any], *, simple_tree: bool = False) -> tuple[float, str]:
    """NCCL's own fastest (time in µs, "algorithm/protocol") for ``row`` across nodes."""
    facility = tuple(sorted(row.get("facility", {}).items()))
    graph = _graph(
        row["node"], row["num_nodes"], row.get("nics_per_node"), facility, row.get("fabric")
    )
    arr = ranks(row, graph.gpus_per_node)[None, :]
    seq = ring_order(graph, arr)
    size = float(row["size_bytes"])
    best = (float("inf"), "")
    for name in _candidates(row["collective"]):
        phases = solve_phases(
            graph, row["collective"], name, arr, "adaptive", 1, graph.rail_optimized
        )
        path = max((p.net_path_latency_s for p in phases), default=0.0)
        ctx = replace(tuning_context(graph, row["collective"], seq, name), net_path_latency_s=path)
        for proto in protocols_for(name, ctx):
            bw = nccl_algbw_gbyte_per_s(
                name, proto, ctx, graph.nic_gbyte_per_s, simple_tree=simple_tree
            )
            if name == "tree":
                log_size = int(size // 64).bit_length() - 1
                if 0 <= log_size < len(_TREE_CORRECTION[proto]):
                    bw *= _TREE_CORRECTION[proto][log_size]
            t_us = tuner_latency_s(name, proto, ctx) * 1e6 + size / (bw * 1e3)
            best = min(best, (t_us, f"{name}/{proto}"))
    return best


def small_cross_node_estimates(*, simple_tree: bool = False) -> list[Estimate]:
    """Every development and calibration row below 16 MiB whose communicator crosses the
    scale-out network (trays of one NVL72 rack share an NVLink domain: NCCL's graph there
    has no network hop, so its across-nodes tuner rows do not apply)."""
    out = []
    for row in ROWS:
        if row["set"] not in ("development", "calibration") or not spans_nvlink_domains(row):
            continue
        if row["size_bytes"] >= LARGE_BYTES:
            continue
        facility = tuple(sorted(row.get("facility", {}).items()))
        graph = _graph(
            row["node"], row["num_nodes"], row.get("nics_per_node"), facility, row.get("fabric")
        )
        n = int(ranks(row, graph.gpus_per_node).size)
        bus_bytes = row["size_bytes"] * bus_factor(row["collective"], n)
        scored = score(row)
        nccl_us, pick = nccl_estimate(row, simple_tree=simple_tree)
        out.append(
            Estimate(
                row=row,
                measured_us=bus_bytes / (row["busbw"] * 1e3),
                nccl_us=nccl_us,
                nccl_pick=pick,
                simulated_us=bus_bytes / (scored.simulated_gbyte_per_s * 1e3),
                simulated_pick=f"{scored.algorithm}/{scored.protocol}",
            )
        )
    return out


def _summary(errors: list[float]) -> str:
    return f"{np.mean(np.abs(errors)):6.1%} (signed {np.mean(errors):+6.1%})"


def _table(rows: list[Estimate]) -> None:
    by_cluster: dict[str, list[Estimate]] = defaultdict(list)
    for e in rows:
        by_cluster[e.row.get("cluster", e.row["source"][:26])].append(e)
    all_reduce = [e for e in rows if e.row["collective"] == "all_reduce"]
    print(f"{'cluster':28} {'NCCL estimate':>28} {'+ call cost':>28} {'simulator':>28}")
    groups = [*sorted(by_cluster.items()), ("all", rows), ("all-reduce", all_reduce)]
    for name, group in groups:
        print(
            f"{name[:28]:28} {_summary([e.error(e.nccl_us) for e in group]):>28} "
            f"{_summary([e.error(e.nccl_us + _CALL_US) for e in group]):>28} "
            f"{_summary([e.error(e.simulated_us) for e in group]):>28}  n={len(group)}"
        )
    shorter = sum(e.nccl_us <= e.simulated_us for e in rows)
    print(f"NCCL's estimate is no longer than the simulated time on {shorter} of {len(rows)} rows")


def main() -> None:
    rows = small_cross_node_estimates()
    print(f"{'row':34} {'meas us':>8} {'NCCL us':>8} {'pick':>12} {'sim us':>8} {'pick':>12}")
    for e in rows:
        print(
            f"{e.row['id'][:34]:34} {e.measured_us:8.1f} {e.nccl_us:8.1f} {e.nccl_pick:>12} "
            f"{e.simulated_us:8.1f} {e.simulated_pick:>12}"
        )
    print("\nbalanced tree (the search's first pattern):")
    _table(rows)
    print("\nthe simpler tree pattern (NCCL's tree bandwidth x 0.85):")
    _table(small_cross_node_estimates(simple_tree=True))


if __name__ == "__main__":
    main()
