"""How the signed error of development runs changes with the GPU count (weak-scaling twins).

Twins are development runs of one source file that ran the same model on the same node and
stack with the same plan per GPU: tensor, pipeline, context and expert degrees, micro-batch
choices, sequence length, recomputation, precision, sharding group and the same batch per
data-parallel replica, so that only the number of replicas (and with it the GPU count)
differs. For every group of twins at two or more GPU counts, the least-squares slope of the
signed error (predicted / published - 1, positive = optimistic) against log2(GPUs) is
printed in points per doubling; then per source and pooled over all groups, each the
within-group slope (every group centred on its own mean, so a source's or a group's level
does not enter), with the counts of groups, runs and groups whose error grows with the
GPU count.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/scale_trend.py

Development rows only (never held-out, never calibration).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from validation.runs import Run, load_runs, predict_run

__all__ = ["TwinGroup", "main", "pooled_slope", "twin_groups"]


@dataclass(frozen=True)
class TwinGroup:
    """Development runs that differ only in their data-parallel replica count."""

    file: str
    runs: tuple[Run, ...]

    @property
    def label(self) -> str:
        run = self.runs[0]
        job = run.base.layout
        return f"{run.arch.id} TP{job.tp} PP{job.pp} CP{job.cp} EP{job.ep} mb{run.micro_batches}"

    def points(self, error: Callable[[Run], float]) -> list[tuple[float, float]]:
        """(log2 GPUs, signed error) of every run of the group."""
        return [(math.log2(r.base.layout.num_gpus), error(r)) for r in self.runs]


def _plan_per_gpu(run: Run) -> Hashable:
    """What a run does per GPU: everything but its replica count and GPU count."""
    p, job = run.base, run.base.layout
    per_replica = p.global_batch / job.dp
    return (
        run.file,
        run.arch.id,
        run.stack,
        run.node,
        run.network,
        run.gpu,
        run.metric,
        run.micro_batches,
        run.virtual_stages,
        run.recompute,
        (job.tp, job.pp, job.cp, job.ep),
        (p.seq_length, p.sequence_parallel, p.zero_stage, p.precision, p.shard_size),
        (p.recompute, p.recompute_layers, p.offload_layers, p.pipeline_layers),
        round(per_replica, 6),
    )


def _fits(run: Run) -> bool:
    return predict_run(run).prediction is not None


def twin_groups(runs: Iterable[Run] | None = None) -> list[TwinGroup]:
    """Groups of development twins at two or more GPU counts, every run predicted to fit."""
    pool = load_runs() if runs is None else runs
    groups: dict[Hashable, list[Run]] = defaultdict(list)
    for run in pool:
        if run.subset == "development" and _fits(run):
            groups[_plan_per_gpu(run)].append(run)
    out = []
    for members in groups.values():
        if len({r.base.layout.num_gpus for r in members}) >= 2:
            ordered = sorted(members, key=lambda r: (r.base.layout.num_gpus, r.name))
            out.append(TwinGroup(members[0].file, tuple(ordered)))
    return sorted(out, key=lambda g: (g.file, g.label))


def pooled_slope(
    groups: Iterable[TwinGroup], error: Callable[[Run], float]
) -> tuple[float, int, int]:
    """Within-group least-squares slope of the error on log2(GPUs) (per doubling), the
    number of runs and the number of groups whose own slope is positive."""
    sxy = sxx = 0.0
    runs = rising = 0
    for group in groups:
        pts = group.points(error)
        mx = statistics.fmean(x for x, _ in pts)
        my = statistics.fmean(y for _, y in pts)
        gxy = sum((x - mx) * (y - my) for x, y in pts)
        gxx = sum((x - mx) ** 2 for x, _ in pts)
        sxy, sxx, runs = sxy + gxy, sxx + gxx, runs + len(pts)
        rising += gxy > 0
    return (sxy / sxx if sxx else math.nan), runs, rising


def _error(run: Run) -> float:
    return predict_run(run).error


def _print_groups(groups: list[TwinGroup], error: Callable[[Run], float]) -> None:
    print(f"{'source':<36} {'twins':<44} {'GPUs: error %':<40} {'pt/2x':>6}")
    for g in groups:
        cells = " ".join(f"{r.base.layout.num_gpus}:{error(r) * 100:+.1f}" for r in g.runs)
        slope = pooled_slope([g], error)[0]
        print(f"{g.file:<36} {g.label:<44} {cells:<40} {slope * 100:+6.2f}")


def print_trend(groups: list[TwinGroup], error: Callable[[Run], float], title: str) -> None:
    """Per-source and pooled slope of ``error`` on log2(GPUs), with counts."""
    by_file: dict[str, list[TwinGroup]] = defaultdict(list)
    for g in groups:
        by_file[g.file].append(g)
    print(f"\n{title}: slope of the signed error, points per doubling of the GPU count")
    print(f"{'source':<36} {'groups':>6} {'runs':>5} {'rising':>6} {'pt/2x':>7}")
    for file, members in sorted(by_file.items()):
        slope, runs, rising = pooled_slope(members, error)
        print(f"{file:<36} {len(members):>6} {runs:>5} {rising:>6} {slope * 100:+7.2f}")
    slope, runs, rising = pooled_slope(groups, error)
    print(f"{'pooled':<36} {len(groups):>6} {runs:>5} {rising:>6} {slope * 100:+7.2f}")
    each = [pooled_slope([g], error)[0] for g in groups]
    print(
        f"median of the {len(each)} groups' slopes {statistics.median(each) * 100:+.2f}; "
        f"without the largest and smallest {statistics.fmean(sorted(each)[1:-1]) * 100:+.2f} (mean)"
    )
    slopes = sorted(pooled_slope(members, error)[0] for members in by_file.values())
    print(
        f"median of the {len(slopes)} sources' slopes {statistics.median(slopes) * 100:+.2f}; "
        f"sources rising {sum(s > 0 for s in slopes)} of {len(slopes)}"
    )


def main() -> None:
    groups = twin_groups()
    _print_groups(groups, _error)
    print_trend(groups, _error, "as predicted")


if __name__ == "__main__":
    main()
