"""The time to train once failures, checkpoints, restarts and spares are counted: the
goodput model (:mod:`clusterforge.goodput`, its expected values and simulated lives) of a
design's job, asked once and kept typed."""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.assess.unavailable import Unavailable
from clusterforge.design import Design
from clusterforge.errors import ClusterforgeError
from clusterforge.goodput import GoodputReport, goodput_report
from clusterforge.goodput.spares import SpareOption, spare_options

__all__ = [
    "DAY_S",
    "SPARE_OPTIONS_MAX_NODES",
    "GoodputOutlook",
    "SpareOption",
    "Unavailable",
    "goodput_outlook",
    "goodput_study",
    "spare_outlook",
]

DAY_S = 86400.0
# Each way to hold spares is a whole re-plan (~0.1 s for a few hundred nodes, ~2 s for
# 12,500): beyond this many nodes ``plan`` would wait seconds for the comparison.
SPARE_OPTIONS_MAX_NODES = 4096


@dataclass(frozen=True)
class GoodputOutlook:
    """The goodput report of the job on ``num_gpus`` training GPUs."""

    report: GoodputReport
    num_gpus: int

    @property
    def expected_days(self) -> float:
        """Expected wall-clock days to train (the closed-form model)."""
        return self.report.expected.wall_s / DAY_S

    @property
    def p50_days(self) -> float:
        return self.report.percentile_days(50)

    @property
    def p90_days(self) -> float:
        return self.report.percentile_days(90)


def goodput_study(
    design: Design,
    *,
    runs: int,
    seed: int = 0,
    days: float | None = None,
    step_s: float | None = None,
) -> GoodputReport:
    """The goodput report of the design's job (``days``: its failure-free time to train,
    ``step_s``: its step; None: the performance model predicts them); errors propagate."""
    return goodput_report(design, runs=runs, seed=seed, days=days, step_s=step_s)


def goodput_outlook(
    design: Design, *, runs: int, days: float | None = None, step_s: float | None = None
) -> GoodputOutlook | Unavailable:
    """:func:`goodput_study`, or why it could not be made."""
    try:
        report = goodput_study(design, runs=runs, days=days, step_s=step_s)
    except ClusterforgeError as exc:
        return Unavailable(str(exc))
    return GoodputOutlook(report, design.compute.num_training_gpus)


def spare_outlook(
    design: Design, *, days: float, step_s: float | None = None
) -> tuple[SpareOption, ...] | Unavailable:
    """Every way to hold the design's spares, planned and priced (``days``: its failure-free
    time to train), or why not."""
    if design.compute.num_nodes > SPARE_OPTIONS_MAX_NODES:
        return Unavailable(
            f"{design.compute.num_nodes:,} nodes: each way to hold spares is a re-plan of "
            f"seconds past {SPARE_OPTIONS_MAX_NODES:,} nodes; plan the spec with each "
            "network.spares (or spare_nodes_per_nvlink_domain) to compare"
        )
    try:
        return spare_options(design, days=days, step_s=step_s)
    except ClusterforgeError as exc:
        return Unavailable(str(exc))
