"""Accuracy of ``clusterforge predict`` on published training runs (the ``validation`` package).

Prints, per run, the published and predicted figure and the signed error; then, for the
calibration set and the held-out set separately, the mean absolute percentage error (MAPE),
the median signed error (positive = optimistic) and the Spearman rank correlation between
published and predicted values, plus the runs that really ran but are predicted not to fit;
then, for each sweep (several plans of one model on one cluster), the Spearman rank
correlation inside the sweep: whether the model orders the plans as they were measured.

``--write`` stores the spread of the signed errors (all runs that fit: 10th and 90th
percentile) in ``src/clusterforge/perf/data/uncertainty.toml``; every prediction states its
range from it.

    python benchmarks/validate_predict.py [--write] [--set heldout]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from validation.band import band_of
from validation.runs import Outcome, load_runs, predict_run

REPO = Path(__file__).resolve().parents[1]

UNCERTAINTY = REPO / "src" / "clusterforge" / "perf" / "data" / "uncertainty.toml"


def _row(outcome: Outcome) -> str:
    run = outcome.run
    if outcome.prediction is None:
        return f"  {run.name:<34} {run.subset:<11} {run.published:>9,.1f}  NO PLAN FITS"
    p = outcome.prediction.plan
    job = p.layout
    plan = (
        f"TP{job.tp} PP{job.pp} CP{job.cp} DP{job.dp} mb{p.micro_batch} v{job.vpp} Z{p.zero_stage}"
    )
    return (
        f"  {run.name:<34} {run.subset:<11} {run.published:>9,.1f} {outcome.predicted:>9,.1f} "
        f"{outcome.error * 100:+6.1f} %  {plan} {p.recompute} {p.precision} {run.stack.name}"
    )


def summary(outcomes: list[Outcome]) -> dict[str, float]:
    """MAPE, median signed error, Spearman rho and the count of runs predicted not to fit."""
    fitted = [o for o in outcomes if o.prediction is not None]
    errors = [o.error for o in fitted]
    rho = spearmanr([o.run.published for o in fitted], [o.predicted for o in fitted])[0]
    return {
        "runs": len(outcomes),
        "mape": statistics.fmean(abs(e) for e in errors),
        "median_signed": statistics.median(errors),
        "spearman": float(rho),
        "no_fit": len(outcomes) - len(fitted),
        "p10": float(np.percentile(errors, 10)),
        "p90": float(np.percentile(errors, 90)),
    }


def _print_summary(name: str, stats: dict[str, float]) -> None:
    print(
        f"{name:<11} runs {stats['runs']:>3.0f}  MAPE {stats['mape'] * 100:5.1f} %  "
        f"median signed {stats['median_signed'] * 100:+5.1f} %  Spearman {stats['spearman']:.3f}  "
        f"signed p10..p90 {stats['p10'] * 100:+.1f} .. {stats['p90'] * 100:+.1f} %  "
        f"predicted not to fit {stats['no_fit']:.0f}"
    )


def sweep_spearman(outcomes: list[Outcome]) -> dict[str, tuple[int, float]]:
    """Per sweep (plans of one model on one cluster): runs that fit and Spearman rho between
    published and predicted values, i.e. whether the model ranks the plans as measured."""
    sweeps: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.run.sweep is not None and o.prediction is not None:
            sweeps.setdefault(o.run.sweep, []).append(o)
    return {
        name: (
            len(os),
            float(spearmanr([o.run.published for o in os], [o.predicted for o in os])[0]),
        )
        for name, os in sorted(sweeps.items())
    }


def _print_sweeps(outcomes: list[Outcome]) -> None:
    sweeps = sweep_spearman(outcomes)
    for name, (count, rho) in sweeps.items():
        chosen = [o for o in outcomes if o.run.sweep == name and o.prediction is not None]
        stats = summary(chosen)
        print(
            f"sweep {name:<24} runs {count:>3}  within-sweep Spearman {rho:.3f}  "
            f"MAPE {stats['mape'] * 100:5.1f} %  median signed {stats['median_signed'] * 100:+5.1f} %"
        )
    if sweeps:
        print(f"worst within-sweep Spearman {min(rho for _, rho in sweeps.values()):.3f}")


def write_uncertainty(outcomes: list[Outcome]) -> None:
    """Store the error band of every run (:func:`validation.band.band_of`)."""
    band = band_of(outcomes)
    UNCERTAINTY.write_text(
        "# Range of the real value around a prediction, from the signed errors of the model on\n"
        "# the published runs of validation/ (10th and 90th percentile over every run,\n"
        "# calibration and held-out). Written by benchmarks/validate_predict.py --write.\n"
        f"low_fraction = {band['low_fraction']:.3f}\n"
        f"high_fraction = {band['high_fraction']:.3f}\n"
        f"num_runs = {band['num_runs']:.0f}\n"
        f"mape = {band['mape']:.3f}\n"
    )
    low, high = band["low_fraction"], band["high_fraction"]
    print(f"wrote {UNCERTAINTY.relative_to(REPO)}: {low * 100:+.1f} % .. {high * 100:+.1f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update uncertainty.toml")
    parser.add_argument(
        "--set", choices=("calibration", "development", "heldout"), help="only this set"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    runs = [r for r in load_runs() if args.set is None or r.subset == args.set]
    print(f"  {'run':<34} {'set':<11} {'published':>9} {'predicted':>9}  error")
    outcomes = []
    for run in runs:
        outcomes.append(predict_run(run))
        print(_row(outcomes[-1]), flush=True)
    print()
    for subset in ("calibration", "development", "heldout"):
        chosen = [o for o in outcomes if o.run.subset == subset]
        if chosen:
            _print_summary(subset, summary(chosen))
    single = [o for o in outcomes if o.run.subset == "heldout" and o.run.sweep is None]
    if single:
        _print_summary("heldout, single runs (no sweep)", summary(single))
    everything = summary(outcomes)
    _print_summary("all", everything)
    _print_sweeps(outcomes)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.write:
        write_uncertainty(outcomes)


if __name__ == "__main__":
    main()
