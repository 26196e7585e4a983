"""The 80 % range ``predict`` prints, derived from development runs' first-seen misses only.

The rule is the one :mod:`clusterforge.perf.uncertainty` describes (and ``docs/validation.md``):
split-conformal prediction (Vovk, Gammerman & Shafer 2005; Lei et al. 2018) on each
development run's *first-seen excess* ``published / predicted - 1`` (the model as it stood
before the run was added, :mod:`validation.first_seen`; :func:`first_seen_residuals`), with
every source (one ``validation/*.toml`` file: one cluster, one software stack) weighted once whatever its number of runs (the CDF pooling
of Dunn, Wasserman & Ramdas 2023; the hierarchical conformal weights of Lee, Barber & Willett
2023), each end of the range at the finite-sample position ``(K + 1)(1 - t) - 1/2`` of the
``K`` sources (:func:`finite_sample_position`), per class of run when the class has
``OWN_RANGE_MIN_SOURCES`` sources, else the envelope of its own range and the range pooled
over its model family (:func:`clusterforge.perf.uncertainty.run_family`: dense runs for a
dense class, all runs for MoE).

:func:`leave_one_source_out` is the held-back check: each source's coverage by the range
derived without it (``benchmarks/validate_predict.py --coverage-check``). Held-out runs are
refused here: they never shape the range.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, assert_never

import numpy as np

from clusterforge.perf.uncertainty import OWN_RANGE_MIN_SOURCES, RANGE_TAIL, run_family
from validation.runs import Outcome

__all__ = [
    "BAND_SETS",
    "RULES",
    "Band",
    "Residual",
    "Rule",
    "band_of",
    "class_ranges",
    "coverage",
    "derive",
    "finite_sample_position",
    "first_seen_residuals",
    "leave_one_source_out",
    "pooled_range",
    "residuals",
    "source_range",
]

BAND_SETS = ("calibration", "development")
# ``centred`` is what ships; ``strict`` is the textbook conformal position (coverage at least
# 80 %, up to 80 % + 2 / (K + 1)); ``in-sample`` is the rule used until Dec 2026 (10th..90th
# percentile of every run's error, per class from 10 runs), kept to compare in the check.
Rule = Literal["centred", "strict", "in-sample"]
RULES: tuple[Rule, ...] = ("centred", "strict", "in-sample")
_IN_SAMPLE_MIN_RUNS = 10


class Band(dict[str, float]):
    """``low_fraction``, ``high_fraction``, ``num_runs``, ``num_sources`` and ``mape``, as
    stored in ``clusterforge/perf/data/uncertainty.toml`` (three decimals); a class that
    borrows its model family's range also states its own ``class_runs`` and
    ``class_sources``."""


@dataclass(frozen=True)
class Residual:
    """One run's miss, as the range sees it: its source, its class and its excess
    ``published / predicted - 1`` (how far the real value lies above the prediction)."""

    source: str
    run_class: str
    excess: float


def residuals(outcomes: list[Outcome]) -> list[Residual]:
    """The residuals of the runs that fit (calibration and development runs only); a run's
    source is its data file."""
    held = sorted({o.run.name for o in outcomes if o.run.subset not in BAND_SETS})
    if held:
        raise ValueError(f"the range is derived without held-out runs; got {held[:3]} ...")
    return [
        Residual(o.run.file, o.run_class, o.run.published / o.predicted - 1.0)
        for o in outcomes
        if o.prediction is not None
    ]


def finite_sample_position(num_sources: int, tail: float, *, strict: bool = False) -> float:
    """Where an end of the range sits, counted in sources from the other end: the
    split-conformal rank ``(K + 1)(1 - t)`` of ``K`` exchangeable scores (Lei et al. 2018,
    split conformal: the ``ceil((n + 1)(1 - alpha))``-th smallest of ``n`` residuals), half a
    source less unless ``strict``. For ``K`` scores the ``k``-th smallest bounds a new one from above with
    probability ``k / (K + 1)`` (no ties), so the strict rank overshoots ``1 - t`` by up to
    ``1 / (K + 1)`` and the centred one misses it by at most ``1 / (2(K + 1))`` either way."""
    return (num_sources + 1) * (1.0 - tail) - (0.0 if strict else 0.5)


def _upper_end(weighted: list[tuple[float, float]], position: float) -> float:
    """The smallest score whose weight, summed from below, reaches ``position``; the largest
    score when it never does (too few sources to place the tail)."""
    total = 0.0
    for score, weight in weighted:
        total += weight
        if total >= position - 1e-9:
            return score
    return weighted[-1][0]


def source_range(chosen: list[Residual], *, strict: bool = False) -> tuple[float, float]:
    """(low, high) excess of ``chosen``: each source weighs 1, shared by its runs, and each
    end sits at :func:`finite_sample_position` of the ``K`` sources (the span of the runs when
    ``K`` is too small to place a ``RANGE_TAIL`` tail)."""
    runs_per_source = Counter(r.source for r in chosen)
    position = finite_sample_position(len(runs_per_source), RANGE_TAIL, strict=strict)
    weighted = sorted((r.excess, 1.0 / runs_per_source[r.source]) for r in chosen)
    high = _upper_end(weighted, position)
    low = -_upper_end([(-score, weight) for score, weight in reversed(weighted)], position)
    return low, high


def _in_sample_range(chosen: list[Residual]) -> tuple[float, float]:
    errors = [1.0 / (1.0 + r.excess) - 1.0 for r in chosen]
    p10, p90 = (float(np.percentile(errors, q)) for q in (10, 90))
    return 1.0 / (1.0 + p90) - 1.0, 1.0 / (1.0 + p10) - 1.0


def _range(chosen: list[Residual], rule: Rule) -> tuple[float, float]:
    match rule:
        case "centred" | "strict":
            return source_range(chosen, strict=rule == "strict")
        case "in-sample":
            return _in_sample_range(chosen)
        case _:
            assert_never(rule)


def _has_own_range(chosen: list[Residual], rule: Rule) -> bool:
    if rule == "in-sample":
        return len(chosen) >= _IN_SAMPLE_MIN_RUNS
    return len({r.source for r in chosen}) >= OWN_RANGE_MIN_SOURCES


def _dense(chosen: list[Residual]) -> list[Residual]:
    return [r for r in chosen if run_family(r.run_class) == "dense"]


def pooled_range(chosen: list[Residual], rule: Rule = "centred") -> tuple[float, float]:
    """The range pooled over the dense runs of ``chosen``: what a dense class with too few
    sources borrows, and the range of a class without runs (every such class is dense)."""
    return _range(_dense(chosen) or chosen, rule)


def class_ranges(chosen: list[Residual], rule: Rule = "centred") -> dict[str, tuple[float, float]]:
    """Per class: its own range when it has ``OWN_RANGE_MIN_SOURCES`` sources, else the
    envelope of its own and the range pooled over its model family (never narrower than
    that): dense runs for a dense class (it has no expert layer to be missed by), all runs
    for MoE (both kinds of layer)."""
    borrowed = {"dense": pooled_range(chosen, rule), "moe": _range(chosen, rule)}
    by_class: dict[str, list[Residual]] = {}
    for r in chosen:
        by_class.setdefault(r.run_class, []).append(r)
    ranges = {}
    for name, members in sorted(by_class.items()):
        low, high = _range(members, rule)
        if not _has_own_range(members, rule):
            pool = borrowed[run_family(name)]
            low, high = min(low, pool[0]), max(high, pool[1])
        ranges[name] = (low, high)
    return ranges


def first_seen_residuals(
    outcomes: list[Outcome], scores: Mapping[str, float | None]
) -> list[Residual]:
    """The residuals the range is derived from: each calibration or development run's
    *first-seen* excess (``scores``, :func:`validation.first_seen.first_seen`: the model as it
    stood before the run was added), classed as today's prediction classes it. Runs without a
    first-seen score (the baseline the model was built on) and runs first predicted not to fit
    are left out; held-out runs are refused."""
    chosen = {o.run.name: o for o in outcomes}
    held = sorted(n for n, o in chosen.items() if o.run.subset not in BAND_SETS)
    if held:
        raise ValueError(f"the range is derived without held-out runs; got {held[:3]} ...")
    return [
        Residual(chosen[name].run.file, chosen[name].run_class, excess)
        for name, excess in scores.items()
        if excess is not None and name in chosen
    ]


def _band(chosen: list[Residual], low_high: tuple[float, float]) -> Band:
    return Band(
        low_fraction=round(low_high[0], 3),
        high_fraction=round(low_high[1], 3),
        num_runs=len(chosen),
        num_sources=len({r.source for r in chosen}),
        mape=round(statistics.fmean(abs(1.0 / (1.0 + r.excess) - 1.0) for r in chosen), 3),
    )


def band_of(chosen: list[Residual], rule: Rule = "centred") -> Band:
    """The pooled range of the dense residuals among ``chosen`` (:func:`pooled_range`), with
    the runs, sources and mean absolute error behind it."""
    dense = _dense(chosen) or chosen
    return _band(dense, pooled_range(chosen, rule))


def _class_band(
    chosen: list[Residual], name: str, low_high: tuple[float, float], rule: Rule
) -> Band:
    """A class's band: its own runs when it has a range of its own; else the runs of the
    model family it borrows from (which hold its own), with its own counts beside them."""
    members = [r for r in chosen if r.run_class == name]
    if _has_own_range(members, rule):
        return _band(members, low_high)
    family = [r for r in chosen if run_family(name) == "moe" or run_family(r.run_class) == "dense"]
    band = _band(family, low_high)
    band.update(class_runs=len(members), class_sources=len({r.source for r in members}))
    return band


def derive(
    outcomes: list[Outcome], scores: Mapping[str, float | None], rule: Rule = "centred"
) -> tuple[Band, dict[str, Band]]:
    """The pooled and per-class ranges from the first-seen scores of the calibration and
    development runs among ``outcomes`` (:func:`first_seen_residuals`; held-out runs are left
    out whatever their errors)."""
    chosen = first_seen_residuals([o for o in outcomes if o.run.subset in BAND_SETS], scores)
    ranges = class_ranges(chosen, rule)
    classes = {name: _class_band(chosen, name, lh, rule) for name, lh in ranges.items()}
    return band_of(chosen, rule), classes


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


def leave_one_source_out(chosen: list[Residual], rule: Rule = "centred") -> dict[str, float]:
    """Per source: the share of its runs inside the range (their class's, else the pooled
    one) derived from every *other* source, i.e. as a run of a new cluster would see it."""
    held_back = {}
    for source in sorted({r.source for r in chosen}):
        others = [r for r in chosen if r.source != source]
        pooled = pooled_range(others, rule)
        ranges = class_ranges(others, rule)
        inside = [
            low <= r.excess <= high
            for r in chosen
            if r.source == source
            for low, high in [ranges.get(r.run_class, pooled)]
        ]
        held_back[source] = sum(inside) / len(inside)
    return held_back
