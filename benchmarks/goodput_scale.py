"""Speed of the goodput Monte Carlo: 1,000 lives of a 100,000-GPU, 90-day job.

    python benchmarks/goodput_scale.py [--runs 1000] [--gpus 100000] [--days 90]

Prints the wall time of the simulation alone, the failures per life and peak memory.
"""

from __future__ import annotations

import argparse
import resource
import time

from clusterforge.goodput import (
    GoodputInputs,
    expected_goodput,
    job_rates,
    life_params,
    simulate_lives,
)

DAY_S = 86400.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=100_000)
    parser.add_argument("--days", type=float, default=90.0)
    args = parser.parse_args()
    nodes = args.gpus // 8
    rates = job_rates(num_gpus=args.gpus, num_nodes=nodes, num_nics=args.gpus)
    # A 1 TB-class checkpoint written in ~60 s and read back in ~60 s; 15 min relaunch.
    inputs = GoodputInputs(
        work_s=args.days * DAY_S,
        delta_s=60.0,
        relaunch_s=900.0,
        read_s=60.0,
        rates=rates,
        num_spares=nodes // 20,
        repair_s=5 * DAY_S,
    )
    expected = expected_goodput(inputs)
    params = life_params(inputs, expected)
    start = time.perf_counter()
    lives = simulate_lives(params, runs=args.runs, seed=0)
    elapsed = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.runs} lives of a {args.gpus:,}-GPU {args.days:g}-day job: {elapsed:.2f} s")
    print(
        f"  interruptions per day {expected.interruptions_per_day:.1f}, "
        f"failures per life {lives.failures.mean():,.0f}"
    )
    print(
        f"  ETTR expected {expected.ettr:.1%}, simulated {inputs.work_s / lives.wall_s.mean():.1%}"
    )
    print(f"  peak RSS {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
