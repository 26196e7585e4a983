"""Accuracy of ``clusterforge predict`` on published training runs (the ``validation`` package).

By default only the calibration and development sets are predicted. Prints, per run, the
published and predicted figure, the signed error and the run's class; then, per set, the mean
absolute percentage error (MAPE), the median signed error (positive = optimistic), the
Spearman rank correlation, the runs that ran but are predicted not to fit, the per-class MAPE
and the coverage of the printed 80 % range; then, per sweep (plans of one model on one
cluster), the Spearman rank correlation inside the sweep. The held-out rows are listed with
the commit that froze them, without a figure.

``--heldout`` also predicts the held-out set and prints it as a whole only (MAPE, median
signed error, per-class MAPE, range coverage, runs predicted not to fit): never per row.

``--write`` derives the range from calibration and development runs only
(:mod:`validation.band`) and stores it in ``src/clusterforge/perf/data/uncertainty.toml``.

``--coverage-check`` measures the range on sources it did not see, without the held-out set:
each calibration or development source (data file) in turn is left out, the range derived
from the others, and the share of the left-out source's runs inside it recorded; it prints
the mean over sources and over runs, per rule (``centred``, what ships; ``strict``, the
textbook conformal position; ``in-sample``, the rule used until Dec 2026), then per source.

    python benchmarks/validate_predict.py [--write] [--set development] [--heldout]
    python benchmarks/validate_predict.py --coverage-check
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from validation.band import (
    BAND_SETS,
    RULES,
    Band,
    Rule,
    coverage,
    derive,
    first_seen_residuals,
    leave_one_source_out,
)
from validation.first_seen import Basis, check_names, first_seen, replay_coverage
from validation.runs import Outcome, load_runs, predict_run
from validation.sets import read_lock

REPO = Path(__file__).resolve().parents[1]

UNCERTAINTY = REPO / "src" / "clusterforge" / "perf" / "data" / "uncertainty.toml"


def _row(outcome: Outcome) -> str:
    run = outcome.run
    if outcome.prediction is None:
        return (
            f"  {run.name:<34} {run.subset:<11} {run.published:>9,.1f}  NO PLAN FITS"
            f"  [{outcome.run_class}]"
        )
    p = outcome.prediction.plan
    job = p.layout
    plan = f"TP{job.tp} PP{job.pp} CP{job.cp} EP{job.ep} DP{job.dp} mb{p.micro_batch} v{job.vpp} Z{p.zero_stage}"
    return (
        f"  {run.name:<34} {run.subset:<11} {run.published:>9,.1f} {outcome.predicted:>9,.1f} "
        f"{outcome.error * 100:+6.1f} %  {plan} {p.recompute} {p.precision} {run.stack.name} "
        f"[{outcome.run_class}]"
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


def per_class_mape(outcomes: list[Outcome]) -> dict[str, tuple[int, float]]:
    """Per class: runs that fit and their MAPE."""
    by_class: dict[str, list[float]] = {}
    for o in outcomes:
        if o.prediction is not None:
            by_class.setdefault(o.run_class, []).append(abs(o.error))
    return {k: (len(v), statistics.fmean(v)) for k, v in sorted(by_class.items())}


def _print_classes(outcomes: list[Outcome], pooled: Band, classes: dict[str, Band]) -> None:
    parts = [f"{k} {n} runs {m * 100:.1f} %" for k, (n, m) in per_class_mape(outcomes).items()]
    print(f"  per-class MAPE: {'; '.join(parts)}")
    print(f"  80 % range coverage: {coverage(outcomes, pooled, classes) * 100:.0f} %")


def write_uncertainty(pooled: Band, classes: dict[str, Band]) -> None:
    """Store the pooled range and the per-class ranges (:mod:`validation.band`)."""
    lines = [
        "# Range of the real value around a prediction: split-conformal over the first-seen",
        "# excess published / predicted - 1 of the development runs of validation/ (each run",
        "# predicted by the model as it stood before the run was added: validation/history/",
        "# replay.json, benchmarks/first_seen.py; never the held-out runs), each source weighted",
        "# once, pooled over dense runs (top) and per class of run",
        "# (clusterforge.perf.uncertainty explains the rule). Written by",
        "# benchmarks/validate_predict.py --write.",
        *_band_lines(pooled),
    ]
    for name, band in classes.items():
        lines += ["", f'[class."{name}"]', *_band_lines(band)]
    UNCERTAINTY.write_text("\n".join(lines) + "\n")
    low, high = pooled["low_fraction"], pooled["high_fraction"]
    print(f"wrote {UNCERTAINTY.relative_to(REPO)}: {low * 100:+.1f} % .. {high * 100:+.1f} %")


def _band_lines(band: Band) -> list[str]:
    lines = [
        f"low_fraction = {band['low_fraction']:.3f}",
        f"high_fraction = {band['high_fraction']:.3f}",
        f"num_runs = {band['num_runs']:.0f}",
        f"num_sources = {band['num_sources']:.0f}",
        f"mape = {band['mape']:.3f}",
    ]
    return lines + [
        f"{key} = {band[key]:.0f}" for key in ("class_runs", "class_sources") if key in band
    ]


def _print_heldout_listing() -> None:
    runs = {r.name: r for r in load_runs() if r.subset == "heldout"}
    frozen = {e.id: e.commit for e in read_lock() if e.kind == "run"}
    print(f"heldout: {len(runs)} runs, frozen (scored only with --heldout, as a whole)")
    for name, run in runs.items():
        print(f"  {name:<44} {run.base_class:<17} frozen at {frozen.get(name, 'NOT LOCKED')[:12]}")


def _print_heldout_aggregate(pooled: Band, classes: dict[str, Band]) -> None:
    outcomes = [predict_run(r) for r in load_runs() if r.subset == "heldout"]
    if not outcomes:
        print("heldout: no runs")
        return
    _print_summary("heldout", summary(outcomes))
    _print_classes(outcomes, pooled, classes)


def _print_replay(outcomes: list[Outcome]) -> None:
    """The rules replayed through the validation history (:mod:`validation.first_seen`)."""
    classes = {o.run.name: o.run_class for o in outcomes}
    files = {o.run.name: o.run.file for o in outcomes}
    print(
        "replayed history (benchmarks/first_seen.py): at each commit that added runs, the "
        "range derived from what was known before it holds this share of the added runs:"
    )
    replayed: tuple[tuple[Basis, Rule], ...] = (
        ("first-seen", "centred"),
        ("first-seen", "strict"),
        ("in-sample", "centred"),
    )
    for basis, rule in replayed:
        steps = replay_coverage(classes, files, basis=basis, rule=rule)
        added = sum(n for *_, n in steps)
        per_step = statistics.fmean(i / n for _, i, n in steps)
        cells = " ".join(f"{c[:7]} {i}/{n}" for c, i, n in steps)
        print(
            f"  {basis:<10} {rule:<7} {len(steps)} commits: mean over commits "
            f"{per_step * 100:5.1f} %, over runs {sum(i for _, i, _ in steps) / added * 100:5.1f} %"
            f"  ({cells})"
        )


def coverage_check(outcomes: list[Outcome]) -> None:
    """The replayed history, then the leave-one-source-out coverage of the range over the
    first-seen scores, per rule (:mod:`validation.band`)."""
    scores = first_seen()
    check_names(scores, {o.run.name: o.run.subset for o in outcomes})
    _print_replay(outcomes)
    chosen = first_seen_residuals([o for o in outcomes if o.run.subset in BAND_SETS], scores)
    runs_per_source = {s: sum(r.source == s for r in chosen) for s in {r.source for r in chosen}}
    by_rule = {rule: leave_one_source_out(chosen, rule) for rule in RULES}
    print(
        f"leave-one-source-out coverage of the 80 % range over first-seen scores "
        f"({len(runs_per_source)} sources):"
    )
    for rule, held in by_rule.items():
        per_run = sum(held[s] * n for s, n in runs_per_source.items()) / len(chosen)
        print(
            f"  {rule:<9} mean over sources {statistics.fmean(held.values()) * 100:5.1f} %"
            f"  over runs {per_run * 100:5.1f} %"
        )
    print(f"  {'source':<34} {'runs':>4}  " + "  ".join(f"{r:>9}" for r in by_rule))
    for source, count in sorted(runs_per_source.items()):
        cells = "  ".join(f"{held[source] * 100:7.0f} %" for held in by_rule.values())
        print(f"  {source:<34} {count:>4}  {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update uncertainty.toml")
    parser.add_argument("--set", choices=BAND_SETS, help="only this set (per-run table)")
    parser.add_argument(
        "--heldout", action="store_true", help="also score the held-out set, as a whole only"
    )
    parser.add_argument(
        "--coverage-check",
        action="store_true",
        help="only the leave-one-source-out coverage of the range (no held-out runs)",
    )
    args = parser.parse_args()
    start = time.perf_counter()
    runs = [r for r in load_runs() if r.subset in BAND_SETS]
    outcomes = [predict_run(r) for r in runs]
    if args.coverage_check:
        coverage_check(outcomes)
        return
    scores = first_seen()
    check_names(scores, {o.run.name: o.run.subset for o in outcomes})
    pooled, classes = derive(outcomes, scores)
    print(f"  {'run':<34} {'set':<11} {'published':>9} {'predicted':>9}  error")
    for outcome in outcomes:
        if args.set is None or outcome.run.subset == args.set:
            print(_row(outcome), flush=True)
    print()
    for subset in BAND_SETS:
        chosen = [o for o in outcomes if o.run.subset == subset]
        if chosen:
            _print_summary(subset, summary(chosen))
            _print_classes(chosen, pooled, classes)
    _print_summary("calibration + development", summary(outcomes))
    _print_classes(outcomes, pooled, classes)
    _print_sweeps(outcomes)
    _print_heldout_listing()
    if args.heldout:
        _print_heldout_aggregate(pooled, classes)
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.write:
        write_uncertainty(pooled, classes)


if __name__ == "__main__":
    main()
