"""One assessment of a design: what ``plan``, ``report`` and ``serve`` show beyond the
design itself, computed once and returned as typed, frozen parts.

::

    design = plan(spec)
    a = assess(design, AssessOptions(top_plans=5, busbw=True))
    a.performance.prediction.mfu, a.goodput.p90_days, a.economics.break_even_gpus

Each part is optional (the options say which to compute: the models cost seconds) and may be
:class:`Unavailable` with its reason, so a design without a workload is still assessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.assess.economics import Economics, economics
from clusterforge.assess.fabric import busbw_study
from clusterforge.assess.lifetime import (
    DAY_S,
    GoodputOutlook,
    SpareOption,
    goodput_outlook,
    spare_outlook,
)
from clusterforge.assess.performance import (
    ExpectedPerformance,
    PlanDoesNotFit,
    expected_performance,
    top_plans,
)
from clusterforge.assess.unavailable import Unavailable
from clusterforge.design import Design
from clusterforge.netsim.study import Study
from clusterforge.perf import Prediction

__all__ = ["QUICK", "REPORT", "AssessOptions", "Assessment", "assess"]


@dataclass(frozen=True)
class AssessOptions:
    """Which parts to compute.

    ``performance``: predict the spec's workload; ``goodput_runs``: simulated lives of its
    job (0: no goodput); ``top_plans``: the best plans of a plan search (0: none);
    ``busbw``: simulate all-reduce over every GPU; ``break_even``: search the cluster size
    at which building beats renting (re-plans the cluster at up to 7 other sizes);
    ``spare_options``: plan and price every other way to hold spares (with goodput).
    """

    performance: bool = True
    goodput_runs: int = 200
    top_plans: int = 0
    busbw: bool = False
    break_even: bool = True
    spare_options: bool = True


QUICK = AssessOptions(performance=False, goodput_runs=0)
"""The design and its economics only: fast enough for a live preview."""

REPORT = AssessOptions(top_plans=5, busbw=True)
"""Everything the HTML report shows: the five best plans and the simulated bandwidth too."""


@dataclass(frozen=True)
class Assessment:
    """A design and what it delivers: performance, goodput, fabric, money."""

    design: Design
    economics: Economics
    performance: ExpectedPerformance | Unavailable | None = None
    goodput: GoodputOutlook | Unavailable | None = None
    top_plans: tuple[Prediction, ...] = ()
    busbw: Study | None = None
    spare_options: tuple[SpareOption, ...] | Unavailable | None = None


def assess(design: Design, options: AssessOptions | None = None) -> Assessment:
    """Assess ``design`` as ``options`` ask (default: performance, goodput and break-even)."""
    options = options or AssessOptions()
    performance = expected_performance(design) if options.performance else None
    predicted = isinstance(performance, ExpectedPerformance)
    goodput: GoodputOutlook | Unavailable | None = None
    if isinstance(performance, PlanDoesNotFit):
        # The design as assessed carries the finding, so every rendering shows it.
        design = design.model_copy(update={"findings": [performance.finding, *design.findings]})
        if options.goodput_runs > 0:
            goodput = Unavailable(performance.reason)
    elif options.goodput_runs > 0:
        days, step_s = (
            (performance.time_to_train_days, performance.prediction.step_time_s)
            if isinstance(performance, ExpectedPerformance)
            else (None, None)
        )
        goodput = goodput_outlook(design, runs=options.goodput_runs, days=days, step_s=step_s)
    spares = None
    if options.spare_options and isinstance(goodput, GoodputOutlook):
        inputs = goodput.report.inputs
        spares = spare_outlook(design, days=inputs.work_s / DAY_S, step_s=inputs.step_s or None)
    return Assessment(
        design=design,
        economics=economics(design, break_even=options.break_even),
        performance=performance,
        goodput=goodput,
        top_plans=top_plans(design, options.top_plans) if predicted else (),
        busbw=busbw_study(design) if options.busbw else None,
        spare_options=spares,
    )
