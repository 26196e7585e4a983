"""Speed of ``clusterforge optimize`` at scale: a 70B model (Llama 3 70B) on 2T tokens, a
$50M budget, every catalog node, 8 to 16,384 GPUs (powers of two), InfiniBand and RoCE,
5 % spares, built or rented. Prints the wall time, the front, and how many families were
pruned by each bound, evaluated, planned and searched.

    python benchmarks/optimize_scale.py [--workers N] [--scheduler tcp://host:8786]
"""

from __future__ import annotations

import argparse
import time

from clusterforge.assess.optimize import (
    DaskEngine,
    PoolEngine,
    SerialEngine,
    default_engine,
    optimize,
    parse_optimize_spec,
)

SPEC = {
    "name": "llama3-70b-2t-50m",
    "job": {"model": "llama3-70b", "tokens_b": 2000, "global_batch": 1024},
    "constraints": {"budget_usd": 50e6},
    "objective": "time",
    "search": {
        "num_gpus": {"min": 8, "max": 16384},
        "fabrics": ["infiniband", "roce"],
        "spare_fractions": [0.05],
        "procurement": ["build", "reserved", "on-demand"],
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--scheduler", default=None)
    args = parser.parse_args()
    spec = parse_optimize_spec(SPEC)
    engine: SerialEngine | PoolEngine | DaskEngine = (
        DaskEngine(args.scheduler) if args.scheduler else default_engine(args.workers)
    )
    start = time.perf_counter()
    result = optimize(spec, engine)
    wall_s = time.perf_counter() - start
    if isinstance(engine, PoolEngine):
        engine.close()
    c = result.counts
    print(f"front found in {wall_s:.1f} s ({type(engine).__name__})")
    print(
        f"families {c.families}: pruned {c.pruned_site} (site), {c.pruned_memory} (memory), "
        f"{c.pruned_limits} "
        f"(deadline/budget), {c.pruned_dominated} (dominated bounds); evaluated {c.evaluated}: "
        f"planned {c.planned} designs, predicted {c.predicted} plan searches, "
        f"{c.designs} designs priced, {c.feasible} within the limits"
    )
    for i, p in enumerate(result.front, start=1):
        print(f"{i:2d} {p.label():70s} {p.days:7.1f} d  ${p.cost_usd / 1e6:7.2f}M  MFU {p.mfu:.2f}")
    why = result.reasoning
    if why is not None:
        print(f"winner: {why.winner.label()}; limited by {why.limited_by}")
        if why.runner_up is not None:
            print(f"runner-up: {why.runner_up.label()}; it lacks {why.runner_up_lacks}")


if __name__ == "__main__":
    main()
