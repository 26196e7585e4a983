"""What-if: a synchronous job runs at the pace of its slowest GPU.

Not a model change (``src/`` is untouched). Every GPU of a job computes the same work per step
and the job synchronises every step (the data-parallel gradient reduction couples every rank;
FSDP couples them at every unit, tensor and pipeline groups inside the step), so with GPUs
whose speeds differ the step waits for the slowest one. Per-GPU compute time is taken as
``t (1 + sigma Z)``, ``Z`` standard normal, independent across GPUs; the expected largest
of ``N`` draws is ``t (1 + sigma e_N)`` with

    e_N = integral of x * N * phi(x) * Phi(x)**(N - 1) dx

(the density of the largest of ``N`` independent draws is ``N F**(N-1) f``: David and
Nagaraja, *Order Statistics*, 3rd ed., Wiley 2003, eq. 2.1.1; e_2 = 0.564, e_8 = 1.424,
e_128 = 2.595, e_1024 = 3.248, e_8192 = 3.802). The sync domain is the whole job (``N`` =
its GPU count). The model's compute and pipeline-bubble time (both GPU pace) are multiplied
by ``1 + sigma e_N`` on the plan the model chose; collectives, optimizer and host time are
not. Figures are printed for several ``sigma``: the only primary per-GPU figure found is
for V100 and MI60 clusters (Sinha et al., SC22, arXiv 2208.11035 v3: 8 % average, 22 % at
most, performance variation over the GPUs of a cluster, outliers 1.5x slower than the
median), none for A100 or H100 (docs/validation.md, "The slowest GPU's pace").

    PYTHONPATH=$PWD/src:$PWD python benchmarks/slowest_gpu_whatif.py [--sigma 0.01,0.02,0.04]

Calibration and development rows only (never held-out); the calibration constants are
not refitted.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from functools import cache

import numpy as np
from benchmarks.scale_trend import print_trend, twin_groups
from scipy.stats import norm

from validation.class_errors import class_summary
from validation.runs import Outcome, Run, load_runs, predict_run

__all__ = ["expected_max_normal", "main", "slowest_gpu_error"]

SIGMAS = (0.01, 0.02, 0.04)
BASE_GPUS = 1  # --beyond


@cache
def expected_max_normal(n: int) -> float:
    """Expected largest of ``n`` independent standard normal draws (0 for one draw)."""
    if n <= 1:
        return 0.0
    x = np.linspace(-12.0, 12.0, 48_001)
    density = n * norm.pdf(x) * np.exp((n - 1) * norm.logcdf(x))
    return float(np.trapezoid(x * density, x))


def slowest_gpu_error(run: Run, sigma: float, base_gpus: int = 1) -> float:
    """The run's signed error with its GPU-paced time at the slowest GPU's pace; with
    ``base_gpus`` > 1, only the pace lost beyond the slowest of ``base_gpus`` GPUs (the
    calibrated level taken to hold one such group's slowest GPU already)."""
    outcome = predict_run(run)
    pred = outcome.prediction
    assert pred is not None
    b = pred.breakdown
    paced_s = b.compute_s + b.bubble_s
    n = run.base.layout.num_gpus
    slow = sigma * max(0.0, expected_max_normal(n) - expected_max_normal(base_gpus))
    step_s = pred.step_time_s + paced_s * slow
    return outcome.predicted * pred.step_time_s / step_s / run.published - 1.0


def _fitted(subset: str) -> list[Outcome]:
    outcomes = (predict_run(r) for r in load_runs() if r.subset == subset)
    return [o for o in outcomes if o.prediction is not None]


def _per_source(outcomes: list[Outcome], sigmas: tuple[float, ...]) -> None:
    by_file: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_file[o.run.file].append(o)
    head = " ".join(f"{f'sigma {s:.0%}':>14}" for s in sigmas)
    print(f"\n{'source':<38} {'runs':>4} {'GPUs':>10} {'as modelled':>14} {head}")
    print(f"{'':<38} {'':>4} {'':>10} {'MAPE (median)':>14}")
    for file, members in sorted(by_file.items()):
        gpus = sorted({o.run.base.layout.num_gpus for o in members})
        cells = []
        for sigma in (0.0, *sigmas):
            errs = [slowest_gpu_error(o.run, sigma, BASE_GPUS) for o in members]
            mape = 100 * statistics.fmean(map(abs, errs))
            cells.append(f"{mape:5.1f} ({100 * statistics.median(errs):+5.1f})")
        span = f"{gpus[0]}-{gpus[-1]}" if len(gpus) > 1 else str(gpus[0])
        print(f"{file:<38} {len(members):>4} {span:>10} " + " ".join(f"{c:>14}" for c in cells))


def _calibration_rows(outcomes: list[Outcome], sigmas: tuple[float, ...]) -> None:
    head = " ".join(f"{f'sigma {s:.0%}':>10}" for s in sigmas)
    print(f"\n{'calibration run':<28} {'GPUs':>5} {'as modelled':>11} {head}")
    for o in outcomes:
        cells = " ".join(f"{100 * slowest_gpu_error(o.run, s, BASE_GPUS):+9.1f}%" for s in sigmas)
        gpus = o.run.base.layout.num_gpus
        print(f"{o.run.name:<28} {gpus:>5} {100 * o.error:+10.1f}% {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sigma", default=",".join(str(s) for s in SIGMAS))
    parser.add_argument(
        "--beyond", type=int, default=1, help="price only the pace lost beyond N GPUs (8: a node)"
    )
    args = parser.parse_args()
    sigmas = tuple(float(s) for s in args.sigma.split(","))
    global BASE_GPUS
    BASE_GPUS = args.beyond
    print("e_N (expected largest of N standard normal draws):")
    print("  " + "  ".join(f"N={n}: {expected_max_normal(n):.3f}" for n in (8, 64, 512, 4096)))
    for subset in ("calibration", "development"):
        outcomes = _fitted(subset)
        print(f"\n{subset} ({len(outcomes)} runs): MAPE, median signed error | class MAPE (median)")
        for sigma in (0.0, *sigmas):
            label = "as modelled" if sigma == 0.0 else f"sigma {sigma:.0%}"
            line = class_summary(
                (o.run for o in outcomes),
                lambda r, s=sigma: slowest_gpu_error(r, s, BASE_GPUS),
                medians=True,
            )
            print(f"  {label:<12} {line}")
    _calibration_rows(_fitted("calibration"), sigmas)
    _per_source(_fitted("development"), sigmas)
    groups = twin_groups()
    for sigma in (0.0, *sigmas):
        title = "as modelled" if sigma == 0.0 else f"sigma {sigma:.0%}"
        print_trend(groups, lambda r, s=sigma: slowest_gpu_error(r, s, BASE_GPUS), title)


if __name__ == "__main__":
    main()
