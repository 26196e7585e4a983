"""Report sections of what a design delivers, from its assessment
(:mod:`clusterforge.assess`): the simulated bus bandwidth, the predicted step time of the
spec's plan and of the best plans, and the goodput of the job's life."""

from __future__ import annotations

from clusterforge.assess import (
    ExpectedPerformance,
    GoodputOutlook,
    Prediction,
    Study,
    Unavailable,
)
from clusterforge.report.expected import plan_name
from clusterforge.report.format import size_label
from clusterforge.report.goodput import (
    histogram_picture,
    interval_label,
    lost_rows,
    waterfall_picture,
)
from clusterforge.report.html import charts
from clusterforge.report.html.charts import inline_svg
from clusterforge.report.html.model import Figure, Section, Table, num, pct, table
from clusterforge.report.plots import Series, busbw_chart

__all__ = ["busbw_section", "goodput_section", "performance_section"]

DAY_S = 86400.0
BREAKDOWN = ("compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "cp_comm_s", "ep_comm_s",
             "bubble_s", "optimizer_s", "other_s")  # fmt: skip


def busbw_section(curves: list[Study]) -> Section:
    """Bus bandwidth against message size, one line per design: the picture ``simulate
    --plot`` writes."""
    figure = busbw_chart(
        "all-reduce bus bandwidth over all GPUs (simulated)",
        [Series(c.name, [r.size_bytes for r in c.results],
                [r.busbw_gbyte_per_s for r in c.results]) for c in curves],
    )  # fmt: skip
    tables = tuple(_busbw_table(c) for c in curves)
    reached = "; ".join(
        f"{c.name} reaches {num(c.results[-1].busbw_gbyte_per_s, 1)} GB/s on "
        f"{num(c.results[-1].num_ranks)} GPUs"
        for c in curves
    )
    lead = f"nccl-tests-style all-reduce bus bandwidth at the largest size: {reached}."
    return Section(
        "busbw", "Collective bandwidth", lead, (Figure(inline_svg(figure), "busbw"),), tables
    )


def _busbw_table(curve: Study) -> Table:
    return table(
        ("size", "algorithm", "protocol", "time (us)", "algbw (GB/s)", "busbw (GB/s)"),
        curve.results,
        lambda r: (
            size_label(r.size_bytes),
            r.algorithm,
            r.protocol,
            num(r.time_s * 1e6, 1),
            num(r.algbw_gbyte_per_s, 1),
            num(r.busbw_gbyte_per_s, 1),
        ),
        caption=curve.name,
        numeric=(True, False, False, True, True, True),
    )


def performance_section(
    performance: ExpectedPerformance | Unavailable, plans: tuple[Prediction, ...]
) -> Section:
    """The best plans found and the spec's own plan among them (marked; added after them
    when the search ranked it lower), each by its readable name, with their breakdown."""
    if isinstance(performance, Unavailable):
        return Section("performance", "Training performance", performance.reason)
    p = performance.prediction
    spec_name = plan_name(p.plan)
    rows = [(f"#{i}", q) for i, q in enumerate(plans, 1)]
    spec_at = next((i for i, (_, q) in enumerate(rows) if plan_name(q.plan) == spec_name), None)
    if spec_at is None:
        rows.append(("spec", p))
        spec_at = len(rows) - 1
    marks = [f"{rank} (spec's plan)" if i == spec_at else rank for i, (rank, _) in enumerate(rows)]
    series = [(k.removesuffix("_s"), [getattr(q.breakdown, k) for _, q in rows]) for k in BREAKDOWN]
    figure = charts.bar_chart(
        "step time of the best plans and the spec's, by component",
        labels=[f"{rank}\n{plan_name(q.plan)}" for rank, q in rows], series=series,
        y_title="seconds per step", stacked=True, highlight=spec_at,
    )  # fmt: skip
    table_rows = table(
        ("#", "plan", "MFU", "step (s)", "tokens/s per GPU", "memory per GPU (GiB)", "largest overhead"),
        list(zip(marks, (q for _, q in rows), strict=True)),
        lambda mq: (mq[0], plan_name(mq[1].plan), pct(mq[1].mfu), num(mq[1].step_time_s, 2),
                    num(mq[1].tokens_per_s_per_gpu), num(mq[1].memory_per_gpu_gib, 1),
                    mq[1].breakdown.largest_overhead().removesuffix("_s")),
        caption="best plans by throughput, and the spec's plan",
    )  # fmt: skip
    lead = (
        f"{p.model_id} with the spec's plan {spec_name} (outlined in the chart): MFU "
        f"{pct(p.mfu)}, {num(p.step_time_s, 2)} s per step, "
        f"{num(performance.time_to_train_days, 1)} days for "
        f"{num(performance.tokens_to_train / 1e9)} B tokens without failures."
    )
    return Section(
        "performance", "Training performance", lead, (Figure(figure, "plans"),), (table_rows,)
    )


def goodput_section(goodput: GoodputOutlook | Unavailable) -> Section:
    """Expected goodput, the Monte Carlo spread of time to train, and the what-ifs."""
    if isinstance(goodput, Unavailable):
        return Section("goodput", "Goodput and time to train", goodput.reason)
    report = goodput.report
    exp = report.expected
    waterfall = Figure(inline_svg(waterfall_picture(report)), "lost time by cause")
    histogram = Figure(inline_svg(histogram_picture(report)), "time to train over the lives")
    what_if = table(
        ("change", "ETTR", "expected days", "spares for 99%"),
        list(report.variants.items()),
        lambda kv: (kv[0], pct(kv[1].ettr), num(kv[1].wall_s / DAY_S, 1),
                    str(kv[1].spares.spares_for_99)),
        caption="what if",
    )  # fmt: skip
    lost = table(
        ("cause", "days", "share of lost time"),
        lost_rows(report),
        lambda row: (row[0], num(row[1], 2), pct(row[2])),
        caption="lost time by cause",
        numeric=(False, True, True),
    )
    lead = (
        f"Effective training time ratio {pct(exp.ettr)}: {num(exp.interruptions_per_day, 2)} "
        f"interruptions a day, a checkpoint of {num(exp.checkpoint_s, 1)} s every "
        f"{interval_label(exp)}; time to train {num(goodput.expected_days, 1)} days expected, "
        f"P50 {num(goodput.p50_days, 1)} / P90 {num(goodput.p90_days, 1)} days."
    )
    return Section("goodput", "Goodput and time to train", lead, (waterfall, histogram),
                   (lost, what_if))  # fmt: skip
