"""Speed and memory of ``simulate_collective`` at cluster scale.

All data-parallel groups of a job (TP 8, PP 16) run all_reduce at once on a 3-tier
rail-optimized RoCE fabric (SN5600, 400G ports) with per-flow ECMP.  Prints, per size, the
wall time of building the design and graph and of the simulation, the peak Python heap
(tracemalloc) and the process's peak RSS, and the numbers of flows and links.

    python benchmarks/simulate_scale.py                 # 16,384 and 100,352 GPUs
    python benchmarks/simulate_scale.py 16384           # one size
    python benchmarks/simulate_scale.py --fragmented    # job scattered over random nodes

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


def run(num_gpus: int, placement: str = "packed") -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    design = plan(parse_spec(_spec(num_gpus)))
    graph = build_fabric_graph(design)
    groups = groups_for(design, "dp", placement=placement)
    t1 = time.perf_counter()
    res = simulate_collective(graph, "all_reduce", 2**30, groups, routing="ecmp", algorithm="ring")
    t2 = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    fab = design.fabric
    print(
        f"{num_gpus:>7} GPUs {placement} | {fab.tiers}-tier {fab.topology} {fab.num_leaves} leaves "
        f"{fab.num_spines} spines {fab.num_cores} cores | {groups.shape[0]} DP groups of "
        f"{groups.shape[1]} | flows {res.num_flows:,} | links {res.num_links:,}\n"
        f"        design+graph {t1 - t0:6.2f} s | simulate {t2 - t1:6.2f} s | "
        f"total {t2 - t0:6.2f} s | peak heap {peak / 2**30:.2f} GiB | peak RSS "
        f"{rss_gib:.2f} GiB | busbw {res.busbw_gbyte_per_s:.1f} GB/s | "
        f"limiting {res.limiting_link.link_class if res.limiting_link else '-'}"
    )


def main(argv: list[str]) -> None:
    placement = "fragmented" if "--fragmented" in argv else "packed"
    for n in [int(a) for a in argv if not a.startswith("--")] or SIZES:
        run(n, placement)


if __name__ == "__main__":
    main(sys.argv[1:])
