"""Which protocol a cluster's rings ran: measured times of every collective at the same size,
NCCL's own protocol crossovers on the cluster's ring, and the model without ring LL128.

Three checks that need no guess about the runs' settings:

* The same size, every collective: a ring all-gather of S moves half the bytes per rank of a
  ring all-reduce of S (``n - 1`` steps against ``2 (n - 1)``, the same chunk per step), so
  at one protocol it cannot take longer; where it does, the all-gather ran a slower
  protocol than the all-reduce.
* NCCL's own crossovers (``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` in
  ``src/graph/tuning.cc``, restated by ``benchmarks/nccl_own_estimate.py``): the size from
  which NCCL's estimate ``latency + size / bandwidth`` ranks Simple ahead of LL128, and
  ahead of LL, on the row's ring (chain for broadcast and reduce).  A measured switch far
  from the first but near the second is the mark of a ring whose LL128 was off.
* The model without ring and chain LL128 (trees keep it): each row where the model picks
  ring or chain LL128 takes the best other pair instead.  A reading, not a mechanism: the
  sources do not say LL128 was off (docs/validation.md).

Calibration and development rows only; a held-out row is refused, never simulated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/ring_protocol_check.py voltagepark-h100-ib
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
from benchmarks.nccl_own_estimate import nccl_algbw_gbyte_per_s
from benchmarks.simulate_candidates import STUDIED, candidates, cluster_rows_from_args

from clusterforge.busbw import bus_factor
from clusterforge.netsim.collectives import ring_order
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.latency import tuner_latency_s
from clusterforge.netsim.solve import solve_phases
from clusterforge.netsim.tuner import protocols_for
from clusterforge.netsim.vocab import Algorithm, Protocol
from validation.nccl_rows import LARGE_BYTES, ROWS, _graph, ranks, score

_RINGS = ("ring", "chain")


def _studied(row: dict[str, Any]) -> dict[str, Any]:
    if row["set"] not in STUDIED:
        raise ValueError(f"row {row['id']}: set {row['set']!r}; only {STUDIED} rows are studied")
    return row


def measured_us(row: dict[str, Any]) -> float:
    """The row's measured time per call (µs): bus bytes over its busbw."""
    graph = _graph(row["node"], row["num_nodes"], row.get("nics_per_node"))
    n = int(ranks(_studied(row), graph.gpus_per_node).size)
    return row["size_bytes"] * bus_factor(row["collective"], n) / (row["busbw"] * 1e3)


def same_size_times(cluster: str) -> dict[tuple[int, int], dict[str, float]]:
    """Measured µs by (nodes, size) and collective, NCCL's own choice (``auto``) rows only."""
    out: dict[tuple[int, int], dict[str, float]] = defaultdict(dict)
    for row in ROWS:
        if row.get("cluster") != cluster or row["set"] not in STUDIED:
            continue
        if row["algorithm"] == "auto":
            out[(row["num_nodes"], row["size_bytes"])][row["collective"]] = measured_us(row)
    return dict(out)


def ring_terms(row: dict[str, Any]) -> dict[Protocol, tuple[float, float]]:
    """NCCL's (latency µs, algorithm bandwidth GB/s) per protocol on the row's ring, or the
    chain of broadcast and reduce (``ncclTopoTuneModel``)."""
    _studied(row)
    graph = _graph(row["node"], row["num_nodes"], row.get("nics_per_node"))
    arr = ranks(row, graph.gpus_per_node)[None, :]
    name: Algorithm = "chain" if row["collective"] in ("broadcast", "reduce") else "ring"
    phases = solve_phases(graph, row["collective"], name, arr, "adaptive", 1, graph.rail_optimized)
    path = max((p.net_path_latency_s for p in phases), default=0.0)
    seq = ring_order(graph, arr)
    ctx = replace(tuning_context(graph, row["collective"], seq, name), net_path_latency_s=path)
    return {
        proto: (
            tuner_latency_s(name, proto, ctx) * 1e6,
            nccl_algbw_gbyte_per_s(name, proto, ctx, graph.nic_gbyte_per_s),
        )
        for proto in protocols_for(name, ctx)
    }


def crossover_bytes(fast: tuple[float, float], bulk: tuple[float, float]) -> float:
    """Size from which NCCL's estimate ranks ``bulk`` (higher latency and bandwidth) ahead of
    ``fast``: ``(lat_bulk - lat_fast) / (1 / bw_fast - 1 / bw_bulk)``; inf if never."""
    (lat_f, bw_f), (lat_b, bw_b) = fast, bulk
    gain = 1.0 / (bw_f * 1e3) - 1.0 / (bw_b * 1e3)  # µs per byte
    return (lat_b - lat_f) / gain if gain > 0 else float("inf")


def without_ring_ll128(row: dict[str, Any]) -> tuple[float, str]:
    """(signed error, pair) of the row when ring and chain LL128 are left out of the model's
    choice: the row's own choice where it is not ring or chain LL128, else the best other."""
    chosen = score(_studied(row))
    if not (chosen.protocol == "ll128" and chosen.algorithm in _RINGS):
        return chosen.error, f"{chosen.algorithm}/{chosen.protocol}"
    others = [c for c in candidates(row) if not (c.protocol == "ll128" and c.algorithm in _RINGS)]
    best = max(others, key=lambda c: c.busbw_gbyte_per_s)
    return best.busbw_gbyte_per_s / row["busbw"] - 1.0, f"{best.algorithm}/{best.protocol}"


def _summary(errors: list[float]) -> str:
    return f"{np.mean(np.abs(errors)):6.1%} (signed {np.mean(errors):+6.1%}, n={len(errors)})"


def _print_same_size(cluster: str) -> None:
    table = same_size_times(cluster)
    names = sorted({c for times in table.values() for c in times})
    print(f"{'nodes':>5} {'size MiB':>9} " + " ".join(f"{c:>15}" for c in names) + "  (µs)")
    for (nodes, size), times in sorted(table.items()):
        cells = " ".join(f"{times[c]:15.1f}" if c in times else f"{'-':>15}" for c in names)
        print(f"{nodes:5d} {size / 2**20:9.0f} {cells}")


def _print_crossovers(rows: list[dict[str, Any]]) -> None:
    seen = set()
    for row in rows:
        key = (row["collective"], row["num_nodes"])
        if key in seen or row["num_nodes"] < 2:
            continue
        seen.add(key)
        terms = ring_terms(row)
        if "simple" not in terms:
            continue
        cells = [f"{p} {lat:.1f} us + S / {bw:.1f} GB/s" for p, (lat, bw) in terms.items()]
        print(f"{row['collective']:14} {row['num_nodes']:3d} nodes: " + "; ".join(cells))
        for fast in ("ll128", "ll"):
            if fast in terms:
                size = crossover_bytes(terms[fast], terms["simple"])
                print(f"{'':20} Simple ahead of {fast} from {size / 2**20:8.2f} MiB")


def main() -> None:
    cluster, rows = cluster_rows_from_args(__doc__.splitlines()[0])
    print("measured time of each collective at the same size (NCCL's own choice):")
    _print_same_size(cluster)
    print("\nNCCL's own ring (chain) terms and crossovers:")
    _print_crossovers(rows)
    print("\nthe model without ring and chain LL128 (trees keep it):")
    for large, label in ((True, ">= 16 MiB"), (False, "< 16 MiB")):
        band = [r for r in rows if (r["size_bytes"] >= LARGE_BYTES) == large]
        before = [score(r).error for r in band]
        after = [without_ring_ll128(r)[0] for r in band]
        print(f"{label:10} before {_summary(before)}  after {_summary(after)}")


if __name__ == "__main__":
    main()
