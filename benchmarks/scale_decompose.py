"""What grows with the GPU count, part by part: the model's step breakdown of weak-scaling twins.

For every group of development twins (:func:`benchmarks.scale_trend.twin_groups`: runs of
one source with the same plan per GPU, differing only in the data-parallel replica count),
the predictor's own step breakdown (:class:`clusterforge.perf.step.Breakdown`: compute,
exposed TP / PP / DP / CP / EP communication, pipeline bubble, optimizer, other) is taken at
every GPU count, and each part's least-squares change per doubling of the GPU count is
printed in ms and in points of the predicted step, next to the measured-vs-predicted slope.

The published step is the predicted one times (1 + error) for every metric of the tables
(tokens/s per GPU, model or hardware TFLOP/s per GPU: all are per GPU and inversely
proportional to the step at a fixed plan), so the gap ``published - predicted`` is
``error x predicted step``; its slope per doubling (ms) is what an under-priced part would
have to add per doubling. ``x needed`` is the factor by which a part's modelled growth
would have to be multiplied to close it (only for parts that grow).

Then the same slopes over the rows of each calibration table (one model per GPU count, not
twins: a plain least-squares slope over the rows), with the range of data-parallel degrees
each table spans, to show whether the parts that grow in the twins also grow there.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/scale_decompose.py [--rows]

Calibration and development rows only (never held-out).
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields

from benchmarks.scale_trend import TwinGroup, pooled_slope, twin_groups

from clusterforge.perf import exposure
from clusterforge.perf.memory import stage_params
from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.sharded import unit_collectives
from clusterforge.perf.step import Breakdown
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = [
    "PARTS",
    "GroupParts",
    "decompose",
    "gap_s",
    "least_squares_slope",
    "main",
    "needed_multiple",
    "part_share",
    "raw_dp_s",
]

PARTS: tuple[str, ...] = tuple(f.name for f in fields(Breakdown))
# a part whose slope is below this (ms per doubling, |slope|) is printed as unchanged
STEADY_MS = 0.05


def least_squares_slope(points: Sequence[tuple[float, float]]) -> float:
    """Slope of ``y`` on ``x`` (least squares); nan with fewer than two distinct ``x``."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0.0:
        return math.nan
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def part_share(breakdown: Breakdown, part: str) -> float:
    """One part of the breakdown as a fraction of the predicted step."""
    return float(getattr(breakdown, part)) / breakdown.total_s


def gap_s(step_s: float, error: float) -> float:
    """Published minus predicted step seconds for a per-GPU throughput metric with signed
    error ``error`` = predicted / published - 1 (the published step is the predicted one
    times 1 + error)."""
    return step_s * error


def needed_multiple(gap_slope_s: float, part_slope_s: float) -> float:
    """The factor by which a part's modelled growth per doubling would have to be
    multiplied for it to add the gap's growth as well: 1 + gap / part; inf for a part that
    does not grow (a steady or shrinking part cannot be an under-priced growth)."""
    if part_slope_s <= 0.0:
        return math.inf
    return 1.0 + gap_slope_s / part_slope_s


@dataclass(frozen=True)
class GroupParts:
    """One twin group's slopes per doubling of the GPU count."""

    group: TwinGroup
    error_pt: float  # signed error, points per doubling
    gap_ms: float  # published - predicted step, ms per doubling
    step_ms: float  # predicted step (mean over the group's runs), ms
    part_ms: dict[str, float]  # each part, ms per doubling
    part_pt: dict[str, float]  # each part's share of the predicted step, points per doubling
    raw_ms: float  # the data-parallel collectives back to back, ms per doubling


def _x(run: Run) -> float:
    return math.log2(run.base.layout.num_gpus)


def _breakdown(run: Run) -> Breakdown:
    pred = predict_run(run).prediction
    assert pred is not None
    return pred.breakdown


def raw_dp_s(run: Run) -> float:
    """The run's data-parallel collectives of one step back to back, none overlapped: unit
    by unit (:func:`clusterforge.perf.sharded.unit_collectives`, every micro-batch) where
    the plan shards per unit without pipelining, else the first stage's gradient reduction
    and parameter gather over DP x CP, each one call over the whole stage (the model's
    ``dp_exposed_s`` traffic; expert parameters counted with the dense ones)."""
    pred = predict_run(run).prediction
    assert pred is not None
    plan, comm = pred.plan, run_comm(run_design(run))
    if plan.layout.dp * plan.layout.cp == 1:
        return 0.0
    if run.stack.gathers_per_unit(plan.zero_stage) and plan.layout.pp == 1:
        units = unit_collectives(run.arch, plan, comm, run.stack, layers=run.arch.num_layers)
        return num_micro_batches(plan) * units.per_micro_batch_s
    params = stage_params(run.arch, plan, pred.stage_layers[0], first=True)
    reduce_s, gather_s = exposure._dp_traffic_s(plan, params, comm, run.stack, "dpcp")
    return reduce_s + gather_s


def _slope(runs: Iterable[Run], value: Callable[[Run], float]) -> float:
    return least_squares_slope([(_x(r), value(r)) for r in runs])


def decompose(group: TwinGroup) -> GroupParts:
    """The group's error, gap and part slopes per doubling."""

    def gap(r: Run) -> float:
        return gap_s(_breakdown(r).total_s, predict_run(r).error)

    return GroupParts(
        group=group,
        error_pt=100 * _slope(group.runs, lambda r: predict_run(r).error),
        gap_ms=1e3 * _slope(group.runs, gap),
        step_ms=1e3 * statistics.fmean(_breakdown(r).total_s for r in group.runs),
        part_ms={
            p: 1e3 * _slope(group.runs, lambda r, p=p: getattr(_breakdown(r), p)) for p in PARTS
        },
        part_pt={
            p: 100 * _slope(group.runs, lambda r, p=p: part_share(_breakdown(r), p)) for p in PARTS
        },
        raw_ms=1e3 * _slope(group.runs, raw_dp_s),
    )


def _short(part: str) -> str:
    return part.removesuffix("_s")


def _print_group(parts: GroupParts, rows: bool) -> None:
    g = parts.group
    gpus = "/".join(str(r.base.layout.num_gpus) for r in g.runs)
    print(
        f"\n{g.file} {g.label} GPUs {gpus}: error {parts.error_pt:+.2f} pt/2x, gap "
        f"{parts.gap_ms:+.1f} ms/2x, step {parts.step_ms:,.0f} ms"
    )
    moving = [p for p in PARTS if abs(parts.part_ms[p]) >= STEADY_MS]
    for p in moving:
        need = needed_multiple(parts.gap_ms, parts.part_ms[p])
        cell = f"x{need:.0f}" if math.isfinite(need) else "-"
        print(
            f"  {_short(p):<10} {parts.part_ms[p]:+9.2f} ms/2x {parts.part_pt[p]:+7.3f} pt/2x"
            f"  x needed {cell}"
        )
    if not moving:
        print("  no part moves")
    need = needed_multiple(parts.gap_ms, parts.raw_ms)
    cell = f"x{need:.1f}" if math.isfinite(need) else "-"
    print(f"  DP collectives back to back {parts.raw_ms:+.2f} ms/2x: all of it exposed {cell}")
    if rows:
        for r in g.runs:
            b = _breakdown(r)
            cells = " ".join(
                f"{_short(p)} {getattr(b, p) * 1e3:.1f}" for p in PARTS if getattr(b, p)
            )
            print(
                f"    {r.base.layout.num_gpus:>5} GPUs {predict_run(r).error * 100:+5.1f} %: {cells}"
            )


def _print_pooled(groups: list[TwinGroup], decomposed: list[GroupParts]) -> None:
    """Within-group pooled slopes of each part's share, and the median ms slopes."""
    err = pooled_slope(groups, lambda r: predict_run(r).error)[0]
    print(
        f"\npooled over {len(groups)} groups: error {100 * err:+.2f} pt/2x; gap median "
        f"{statistics.median(d.gap_ms for d in decomposed):+.1f} ms/2x"
    )
    print(f"{'part':<10} {'pt/2x pooled':>12} {'ms/2x median':>12} {'groups up':>9} {'down':>5}")
    for p in PARTS:
        share = pooled_slope(groups, lambda r, p=p: part_share(_breakdown(r), p))[0]
        ms = [d.part_ms[p] for d in decomposed]
        up = sum(m >= STEADY_MS for m in ms)
        down = sum(m <= -STEADY_MS for m in ms)
        print(
            f"{_short(p):<10} {100 * share:+12.3f} {statistics.median(ms):+12.2f} {up:>9} {down:>5}"
        )
    ratio = [
        d.gap_ms / d.part_ms["dp_comm_s"] for d in decomposed if d.part_ms["dp_comm_s"] > STEADY_MS
    ]
    print(
        f"gap growth / exposed DP growth, {len(ratio)} groups where it grows: median "
        f"{statistics.median(ratio):.1f}, range {min(ratio):.1f}..{max(ratio):.1f}"
    )
    raw = [d.gap_ms / d.raw_ms for d in decomposed if d.raw_ms > STEADY_MS]
    short = sum(d.gap_ms > d.raw_ms for d in decomposed)
    print(
        f"gap growth / DP collectives' growth back to back, {len(raw)} groups: median "
        f"{statistics.median(raw):.1f}, range {min(raw):.1f}..{max(raw):.1f}; groups whose gap "
        f"grows faster than all their DP collectives together: {short} of {len(decomposed)}"
    )


def _calibration(rows: bool) -> None:
    """Plain least-squares slopes over each calibration table's rows."""
    by_file: dict[str, list[Run]] = {}
    for run in load_runs():
        if run.subset == "calibration" and predict_run(run).prediction is not None:
            by_file.setdefault(run.file, []).append(run)
    print("\ncalibration tables (one model per row; plain slopes over the rows)")
    for file, runs in sorted(by_file.items()):
        runs.sort(key=lambda r: r.base.layout.num_gpus)
        dps = sorted({r.base.layout.dp for r in runs})
        span = f"{runs[0].base.layout.num_gpus}-{runs[-1].base.layout.num_gpus}"
        error = 100 * _slope(runs, lambda r: predict_run(r).error)
        print(
            f"{file}: {len(runs)} rows, GPUs {span}, DP {dps[0]}-{dps[-1]}: error {error:+.2f} pt/2x"
        )
        cells = [
            f"{_short(p)} {100 * _slope(runs, lambda r, p=p: part_share(_breakdown(r), p)):+.2f}"
            for p in PARTS
        ]
        print("  share of step, pt/2x: " + ", ".join(cells))
        if len(dps) > 1:
            dp_fit = least_squares_slope(
                [(math.log2(r.base.layout.dp), predict_run(r).error) for r in runs]
            )
            print(f"  error against log2(DP): {100 * dp_fit:+.2f} pt per doubling of DP")
        else:
            print(f"  DP {dps[0]} on every row: the GPU count grows through TP and PP only")
        if rows:
            for r in runs:
                job = r.base.layout
                print(
                    f"    {r.name:<26} {job.num_gpus:>5} GPUs TP{job.tp} PP{job.pp} DP{job.dp} "
                    f"{predict_run(r).error * 100:+5.1f} %"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", action="store_true", help="print every run's breakdown")
    args = parser.parse_args()
    groups = twin_groups()
    decomposed = [decompose(g) for g in groups]
    for parts in decomposed:
        _print_group(parts, args.rows)
    _print_pooled(groups, decomposed)
    _calibration(args.rows)


if __name__ == "__main__":
    main()
