"""Speed and memory of ``simulate_collective`` at cluster scale.

All data-parallel groups of a job (TP 8, PP 16) run all_reduce at once on a 3-tier
rail-optimized RoCE fabric (SN5600, 400G ports) with per-flow ECMP.  Prints, per size, the
wall time of building the design and graph and of the simulation (ring, as forced by
``--algorithm ring``, and NCCL's own choice, ``auto``, which solves every candidate
algorithm), the process's peak RSS, and the numbers of flows and links.  Timing runs without
tracing; ``--trace`` adds a second, traced run for the peak Python heap (tracemalloc slows
numpy-heavy code several times, so its times are not reported).

    python benchmarks/simulate_scale.py                 # 16,384 and 100,352 GPUs
    python benchmarks/simulate_scale.py 16384           # one size
    python benchmarks/simulate_scale.py --fragmented    # job scattered over random nodes
    python benchmarks/simulate_scale.py --trace         # also the peak Python heap

100,000 does not divide by TP x PP = 128 on 8-GPU nodes, so the large case uses 100,352
(784 x 128 GPUs, 12,544 nodes).
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc

from clusterforge.design import plan
from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.spec import parse_spec

SIZES = (16_384, 100_352)


def _spec(num_gpus: int) -> dict[str, object]:
    dp = num_gpus // 128
    return {
        "name": f"scale-{num_gpus}",
        "num_gpus": num_gpus,
        "node": "hgx-h100-4u-liquid",
        "spare_fraction": 0,
        "network": {"fabric": "roce", "topology": "rail-optimized", "switch": "sn5600", "tiers": 3},
        "workload": {"tensor_parallel": 8, "pipeline_parallel": 16, "global_batch": dp * 4},
    }


def _simulate(graph, groups, algorithm: str):
    return simulate_collective(
        graph, "all_reduce", 2**30, groups, routing="ecmp", algorithm=algorithm
    )


def _traced_peak_gib(num_gpus: int, placement: str) -> float:
    tracemalloc.start()
    design = plan(parse_spec(_spec(num_gpus)))
    graph = build_fabric_graph(design)
    _simulate(graph, groups_for(design, "dp", placement=placement), "auto")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**30


def run(num_gpus: int, placement: str = "packed", trace: bool = False) -> None:
    t0 = time.perf_counter()
    design = plan(parse_spec(_spec(num_gpus)))
    graph = build_fabric_graph(design)
    groups = groups_for(design, "dp", placement=placement)
    t1 = time.perf_counter()
    res = _simulate(graph, groups, "ring")
    t2 = time.perf_counter()
    auto = _simulate(graph, groups, "auto")
    t3 = time.perf_counter()
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    fab = design.fabric
    heap = f" | peak heap {_traced_peak_gib(num_gpus, placement):.2f} GiB" if trace else ""
    print(
        f"{num_gpus:>7} GPUs {placement} | {fab.tiers}-tier {fab.topology} {fab.num_leaves} leaves "
        f"{fab.num_spines} spines {fab.num_cores} cores | {groups.shape[0]} DP groups of "
        f"{groups.shape[1]} | flows {res.num_flows:,} | links {res.num_links:,}\n"
        f"        design+graph {t1 - t0:6.2f} s | simulate ring {t2 - t1:6.2f} s | "
        f"auto {t3 - t2:6.2f} s ({auto.algorithm}/{auto.protocol}) | peak RSS "
        f"{rss_gib:.2f} GiB{heap} | busbw {res.busbw_gbyte_per_s:.1f} GB/s | "
        f"limiting {res.limiting_link.link_class if res.limiting_link else '-'}"
    )


def main(argv: list[str]) -> None:
    placement = "fragmented" if "--fragmented" in argv else "packed"
    for n in [int(a) for a in argv if not a.startswith("--")] or SIZES:
        run(n, placement, trace="--trace" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
