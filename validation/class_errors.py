"""Per-class figures for a what-if: MAPE, median signed error and each class's MAPE over a set
of runs, with the signed error a what-if gives each run (one line, or one line per set and
development class)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable

from clusterforge.perf.uncertainty import run_class
from validation.runs import Run, best_prediction, load_runs, predict_run, run_comm, run_design

__all__ = [
    "class_summary",
    "fitted_errors",
    "print_moe_variants",
    "print_set_lines",
    "run_outcomes",
]


def class_summary(
    runs: Iterable[Run], signed_error: Callable[[Run], float], *, medians: bool = False
) -> str:
    """``MAPE x % median y % (class n runs z %; ...)`` of ``signed_error`` over ``runs``,
    each run in the class of its predicted plan (every run must be predicted to fit); with
    ``medians``, each class's median signed error after its MAPE."""
    errors: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        outcome = predict_run(run)
        assert outcome.prediction is not None, run.name
        errors[outcome.prediction.run_class].append(signed_error(run))
    everything = [e for v in errors.values() for e in v]
    classes = "; ".join(
        f"{c} {len(v)} runs {100 * statistics.fmean(map(abs, v)):.2f} %"
        + (f" ({100 * statistics.median(v):+.1f})" if medians else "")
        for c, v in sorted(errors.items())
    )
    mape = 100 * statistics.fmean(map(abs, everything))
    return f"MAPE {mape:.2f} % median {100 * statistics.median(everything):+.1f} % ({classes})"


def print_set_lines(label: str, results: dict[str, tuple[float, str]], runs: Iterable[Run]) -> None:
    """Print one line per set and per development class, MAPE and median signed error, of
    ``results`` (run name -> (signed error, class); runs without a result are skipped)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.name not in results:
            continue
        error, klass = results[run.name]
        groups[f"set {run.subset}"].append(error)
        if run.subset == "development":
            groups[f"class {klass}"].append(error)
    for key, errors in sorted(groups.items()):
        mape = statistics.fmean(abs(e) for e in errors)
        print(
            f"  {label:9} {key:24} n={len(errors):3}  MAPE {mape:6.2%}  "
            f"median {statistics.median(errors):+6.2%}"
        )


def print_moe_variants(
    labels: Iterable[str], results: list[dict[str, tuple[float, str]]], runs: list[Run]
) -> None:
    """Each MoE run's signed error under each variant (a column per label, ``results`` in the
    same order; runs the first variant leaves out are skipped), then each variant's
    :func:`print_set_lines`."""
    labels = list(labels)
    print(f"\n{'run':40}" + "".join(f" {label:>8}" for label in labels))
    for run in runs:
        if run.arch.num_experts == 1 or run.name not in results[0]:
            continue
        print(f"{run.name:40.40}" + "".join(f" {r[run.name][0]:+8.1%}" for r in results))
    print()
    for label, result in zip(labels, results, strict=True):
        print_set_lines(label, result, runs)


def run_outcomes(runs: Iterable[Run]) -> dict[str, tuple[float, str]]:
    """Each run's signed error and class under the model as it is now (patched or not), for
    :func:`print_set_lines`; runs predicted not to fit are left out."""
    results: dict[str, tuple[float, str]] = {}
    for run in runs:
        pred = best_prediction(run, run_comm(run_design(run)))
        if pred is not None:
            error = float(getattr(pred, run.metric)) / run.published - 1.0
            results[run.name] = (error, run_class(run.arch, pred.plan, run.stack))
    return results


def fitted_errors() -> dict[str, tuple[str, str, float]]:
    """Run name -> (set, class, signed error) of every calibration and development run the
    model as it is now (patched or not) predicts to fit; the prediction cache is cleared
    first so that a patch takes effect."""
    predict_run.cache_clear()
    out: dict[str, tuple[str, str, float]] = {}
    for run in load_runs():
        if run.subset not in ("calibration", "development"):
            continue
        outcome = predict_run(run)
        if outcome.prediction is not None:
            out[run.name] = (run.subset, outcome.run_class, outcome.error)
    return out
