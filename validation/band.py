"""The 80 % range ``predict`` prints, derived from calibration and development runs only.

The derivation is the one :mod:`clusterforge.perf.uncertainty` describes: with
``error = predicted / published - 1`` the real value is ``predicted / (1 + error)``, so the
90th percentile of the errors bounds the real value from below and the 10th from above. The
pooled range takes every calibration and development run that fits; each class of runs
(:func:`clusterforge.perf.uncertainty.run_class`) with at least ``OWN_SPREAD_MIN_RUNS`` runs
takes its own runs' percentiles, a class with fewer the envelope of the pooled range and its
own. Held-out runs are refused here: they never shape the range.
"""

from __future__ import annotations

import statistics

import numpy as np

from clusterforge.perf.uncertainty import OWN_SPREAD_MIN_RUNS
from validation.runs import Outcome

__all__ = ["BAND_SETS", "Band", "band_of", "class_bands", "coverage", "derive"]

BAND_SETS = ("calibration", "development")


class Band(dict[str, float]):
    """``low_fraction``, ``high_fraction``, ``num_runs`` and ``mape``, as stored in
    ``clusterforge/perf/data/uncertainty.toml`` (three decimals)."""


def _fitting_errors(outcomes: list[Outcome]) -> list[float]:
    held = sorted({o.run.name for o in outcomes if o.run.subset not in BAND_SETS})
    if held:
        raise ValueError(f"the range is derived without held-out runs; got {held[:3]} ...")
    return [o.error for o in outcomes if o.prediction is not None]


def band_of(outcomes: list[Outcome]) -> Band:
    """The pooled range of ``outcomes`` (calibration and development runs only; runs predicted
    not to fit count in ``num_runs`` only)."""
    errors = _fitting_errors(outcomes)
    p10, p90 = (float(np.percentile(errors, q)) for q in (10, 90))
    return Band(
        low_fraction=round(1.0 / (1.0 + p90) - 1.0, 3),
        high_fraction=round(1.0 / (1.0 + p10) - 1.0, 3),
        num_runs=len(outcomes),
        mape=round(statistics.fmean(abs(e) for e in errors), 3),
    )


def class_bands(outcomes: list[Outcome]) -> dict[str, Band]:
    """Per class of run: its own range (>= ``OWN_SPREAD_MIN_RUNS`` runs that fit) or the
    envelope of the pooled range and its own (fewer runs)."""
    pooled = band_of(outcomes)
    by_class: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_class.setdefault(o.run_class, []).append(o)
    bands = {}
    for name, chosen in sorted(by_class.items()):
        if not any(o.prediction is not None for o in chosen):
            continue
        own = band_of(chosen)
        if sum(o.prediction is not None for o in chosen) < OWN_SPREAD_MIN_RUNS:
            own["low_fraction"] = min(own["low_fraction"], pooled["low_fraction"])
            own["high_fraction"] = max(own["high_fraction"], pooled["high_fraction"])
        bands[name] = own
    return bands


def derive(outcomes: list[Outcome]) -> tuple[Band, dict[str, Band]]:
    """The pooled and per-class ranges from the calibration and development runs among
    ``outcomes`` (held-out runs are left out whatever their errors)."""
    chosen = [o for o in outcomes if o.run.subset in BAND_SETS]
    return band_of(chosen), class_bands(chosen)


def coverage(outcomes: list[Outcome], pooled: Band, classes: dict[str, Band]) -> float:
    """Share of the runs that fit whose published value lies in the range printed for them
    (their class's range, else the pooled one)."""
    inside = []
    for o in outcomes:
        if o.prediction is None:
            continue
        band = classes.get(o.run_class, pooled)
        low = o.predicted * (1 + band["low_fraction"])
        high = o.predicted * (1 + band["high_fraction"])
        inside.append(low <= o.run.published <= high)
    return sum(inside) / len(inside) if inside else float("nan")
