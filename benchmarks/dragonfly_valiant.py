"""Speed of Valiant routing on a dragonfly (Kim et al., ISCA 2008 §4.2) in ``simulate_collective``.

Two cases, each timed for minimal adaptive routing (the baseline), Valiant and UGAL:

* ``uniform``: 1,600 H100 on 40-port HDR routers (8 groups, 28 global links per group pair),
  every GPU sending to the GPU at the same place in each of the 7 other groups: 11,200
  flows, the case of ``tests/netsim/test_dragonfly.py``.
* ``100k``: 100,352 H100 on 64-port NDR routers (p = h = 16, a = 32: 196 groups), two
  collectives: a ring all-reduce over the 8 data-parallel groups (TP 8) and an all-to-all
  inside groups of ``--a2a-group`` GPUs (default 8: 702,464 flows) strided over the whole
  machine (every flow leaves its dragonfly group: the pattern that needs Valiant); 32 gives
  3.1 million flows, where the minimal routing's own solve takes minutes.

Prints the wall time of each solve (the design and graph are built once per case), the peak
RSS and the bus bandwidth.  Solves are cached per graph, so each runs in a fresh graph.

    python benchmarks/dragonfly_valiant.py            # both cases
    python benchmarks/dragonfly_valiant.py uniform    # one case
    python benchmarks/dragonfly_valiant.py 100k --a2a-group 32
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, groups_for, simulate_collective
from clusterforge.spec import parse_spec

ROUTINGS = ("adaptive", "valiant", "ugal")
NUM_GPUS_100K = 100_352  # 196 dragonfly groups of 512 GPUs


def _design(num_gpus: int, switch: str, nic_gbit_per_s: int):
    return plan(
        parse_spec(
            {
                "num_gpus": num_gpus,
                "node": "dgx-h100",
                "spare_fraction": 0,
                "workload": {"tensor_parallel": 8, "global_batch": num_gpus // 8},
                "network": {
                    "topology": "dragonfly",
                    "switch": switch,
                    "nic_gbit_per_s": nic_gbit_per_s,
                },
            }
        )
    )


def _uniform_pairs(graph: FabricGraph) -> np.ndarray:
    c = graph.connectivity
    per_group = c.routers_per_group * c.terminals_per_router
    gpus = np.arange(graph.num_gpus)
    return np.concatenate(
        [
            np.stack([gpus, (gpus + s * per_group) % graph.num_gpus], axis=1)
            for s in range(1, c.num_groups)
        ]
    )


def _time(design, collective: str, groups: np.ndarray, algorithm: str) -> None:
    for routing in ROUTINGS:
        graph = build_fabric_graph(design)  # a fresh graph: no cached solve
        t0 = time.perf_counter()
        res = simulate_collective(
            graph, collective, 2**30, groups, routing=routing, algorithm=algorithm
        )
        wall = time.perf_counter() - t0
        rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
        print(
            f"  {collective:<10} {routing:<8} flows {res.num_flows:>10,} | {wall:7.2f} s | "
            f"busbw {res.busbw_gbyte_per_s:8.2f} GB/s | peak RSS {rss_gib:.2f} GiB"
        )


def uniform() -> None:
    design = _design(1600, "qm8700", 200)
    graph = build_fabric_graph(design)
    c = graph.connectivity
    print(
        f"uniform: {graph.num_gpus:,} GPUs, {c.num_groups} groups of {c.routers_per_group} routers"
    )
    _time(design, "broadcast", _uniform_pairs(graph), "auto")


def hundred_k(a2a_group: int) -> None:
    t0 = time.perf_counter()
    design = _design(NUM_GPUS_100K, "qm9700", 400)
    graph = build_fabric_graph(design)
    c = graph.connectivity
    print(
        f"100k: {graph.num_gpus:,} GPUs, {c.num_groups} groups of {c.routers_per_group} "
        f"routers, {c.links_per_group_pair} global links per group pair, "
        f"design+graph {time.perf_counter() - t0:.2f} s"
    )
    _time(design, "all_reduce", groups_for(design, "dp"), "ring")
    strided = np.arange(graph.num_gpus).reshape(a2a_group, -1).T
    _time(design, "all_to_all", np.ascontiguousarray(strided), "direct")


def main(argv: list[str]) -> None:
    a2a_group = 8
    if "--a2a-group" in argv:
        at = argv.index("--a2a-group")
        a2a_group = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    for name in argv or ["uniform", "100k"]:
        if name == "uniform":
            uniform()
        else:
            hundred_k(a2a_group)


if __name__ == "__main__":
    main(sys.argv[1:])
