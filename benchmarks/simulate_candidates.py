"""Where ``simulate`` misses a cluster: its rows grouped by collective, node count, forced
algorithm and size band, and every (algorithm, protocol) pair NCCL weighs, each row's
measured busbw beside the busbw the model gives each pair.

Calibration and development rows only: a held-out row is refused, never simulated. The
candidate table shows which pair a measured curve follows (e.g. a ring all-gather that
tracks ring/Simple where the model picks ring/LL128), the breakdown where a cluster's
error sits (e.g. the steady rate from 256 MiB up against the mid sizes).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/simulate_candidates.py voltagepark-h100-ib
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim import simulate_collective
from validation.nccl_rows import CLUSTERS, LARGE_BYTES, ROWS, _graph, _ll128_c2c, ranks, score

STUDIED = ("calibration", "development")
PROTOCOLS = ("ll", "ll128", "simple")
# the algorithms NCCL's tuner weighs per collective with its defaults, CollNet off
# (collectives.candidate_algorithms); broadcast and reduce run the chain NCCL's ring graph
# gives them ("auto" here)
_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "tree", "nvls_tree", "nvls"),
    "all_gather": ("ring", "pat"),
    "reduce_scatter": ("ring", "pat"),
    "broadcast": ("auto",),
    "reduce": ("auto",),
}
# size bands of the breakdown: the latency regime, mid sizes, the steady rate
_BANDS = ((LARGE_BYTES, "< 16 MiB"), (256 * 2**20, "16-128 MiB"), (float("inf"), ">= 256 MiB"))


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) pair and the busbw the model gives it (GB/s)."""

    algorithm: str
    protocol: str
    busbw_gbyte_per_s: float


def _check_studied(row: dict[str, Any]) -> None:
    if row["set"] not in STUDIED:
        raise ValueError(f"row {row['id']}: set {row['set']!r}; only {STUDIED} rows are studied")


def candidates(row: dict[str, Any]) -> list[Candidate]:
    """Busbw of every pair NCCL weighs for ``row`` (its forced algorithm only, if it forces
    one), with the row's cluster settings; pairs NCCL cannot run there are left out."""
    _check_studied(row)
    facility = tuple(sorted(row.get("facility", {}).items()))
    graph = _graph(
        row["node"], row["num_nodes"], row.get("nics_per_node"), facility, row.get("fabric")
    )
    settings = CLUSTERS.get(row.get("cluster", ""), {})
    forced = row["algorithm"] != "auto"
    names = (row["algorithm"],) if forced else _ALGORITHMS.get(row["collective"], ("auto",))
    out = []
    for name in names:
        for protocol in PROTOCOLS:
            try:
                res = simulate_collective(
                    graph,
                    row["collective"],
                    row["size_bytes"],
                    ranks(row, graph.gpus_per_node)[None, :],
                    algorithm=name,
                    protocol=protocol,
                    nvls=bool(settings.get("nvls", True)),
                    ll128_c2c=_ll128_c2c(settings),
                )
            except SimulationError:
                continue
            out.append(Candidate(res.algorithm, res.protocol, res.busbw_gbyte_per_s))
    return out


def band(size_bytes: int) -> str:
    return next(name for limit, name in _BANDS if size_bytes < limit)


def breakdown(rows: list[dict[str, Any]]) -> dict[tuple[str, int, str, str], list[float]]:
    """Signed errors of ``rows`` by (collective, nodes, algorithm asked for, size band)."""
    groups: dict[tuple[str, int, str, str], list[float]] = defaultdict(list)
    for row in rows:
        _check_studied(row)
        key = (row["collective"], row["num_nodes"], row["algorithm"], band(row["size_bytes"]))
        groups[key].append(score(row).error)
    return dict(groups)


def cluster_rows_from_args(description: str) -> tuple[str, list[dict[str, Any]]]:
    """The cluster named on the command line and its calibration and development rows."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("cluster", help="a rows' `cluster` name, e.g. voltagepark-h100-ib")
    cluster = parser.parse_args().cluster
    rows = [r for r in ROWS if r.get("cluster") == cluster and r["set"] in STUDIED]
    if not rows:
        raise SystemExit(f"no calibration or development rows name cluster {cluster!r}")
    return cluster, rows


def main() -> None:
    _, rows = cluster_rows_from_args(__doc__.splitlines()[0])
    print(f"{'collective':14} {'nodes':>5} {'algorithm':10} {'band':11} {'n':>3} mean |err| signed")
    for (coll, nodes, algo, size_band), errors in sorted(breakdown(rows).items()):
        print(
            f"{coll:14} {nodes:5d} {algo:10} {size_band:11} {len(errors):3d} "
            f"{float(np.mean(np.abs(errors))):10.1%} {float(np.mean(errors)):+6.1%}"
        )
    print(f"\n{'row':36} {'measured':>8}  model's choice, then every pair's busbw (GB/s)")
    for row in rows:
        chosen = score(row)
        pairs = "  ".join(
            f"{c.algorithm}/{c.protocol} {c.busbw_gbyte_per_s:.1f}" for c in candidates(row)
        )
        print(
            f"{row['id']:36} {row['busbw']:8.1f}  {chosen.algorithm}/{chosen.protocol} "
            f"{chosen.error:+.1%} | {pairs}"
        )


if __name__ == "__main__":
    main()
