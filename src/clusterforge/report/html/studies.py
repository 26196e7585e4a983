"""Report sections that run a model on the design: the simulated bus bandwidth
(:mod:`clusterforge.netsim`), the predicted step time of the best plans
(:mod:`clusterforge.perf`) and the goodput of the job's life (:mod:`clusterforge.goodput`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clusterforge.errors import ClusterforgeError
from clusterforge.report.html import charts
from clusterforge.report.html.model import Figure, Section, Table, num, pct, table

if TYPE_CHECKING:
    from clusterforge.design import Design
    from clusterforge.netsim.result import CollectiveResult
    from clusterforge.perf import Prediction

__all__ = ["BUSBW_SIZES", "BusbwCurve", "busbw_curve", "busbw_section", "goodput_section",
           "performance_section", "plan_label"]  # fmt: skip

BUSBW_SIZES = tuple(2**e for e in range(20, 35, 2))  # 1 MiB .. 16 GiB, x4 (nccl-tests -f 4)
DAY_S = 86400.0
BREAKDOWN = ("compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "cp_comm_s", "ep_comm_s",
             "bubble_s", "optimizer_s", "other_s")  # fmt: skip


@dataclass(frozen=True)
class BusbwCurve:
    """An all-reduce over every GPU of a design, one simulated result per message size."""

    name: str
    results: tuple[CollectiveResult, ...]


def busbw_curve(design: Design) -> BusbwCurve:
    """Simulate all-reduce over all GPUs (packed placement, adaptive routing) at each size."""
    from clusterforge.netsim.groups import groups_for
    from clusterforge.netsim.simulate import simulate_collective
    from clusterforge.topology import build_fabric_graph

    graph = build_fabric_graph(design)
    groups = groups_for(design, "all")
    results = tuple(simulate_collective(graph, "all_reduce", s, groups) for s in BUSBW_SIZES)
    return BusbwCurve(design.spec.name, results)


def busbw_section(curves: list[BusbwCurve]) -> Section:
    """Bus bandwidth against message size, one line per design."""
    figure = charts.line_chart(
        "all-reduce bus bandwidth over all GPUs (simulated)",
        series=[
            (c.name, [r.size_bytes for r in c.results],
             [r.busbw_gbyte_per_s for r in c.results])
            for c in curves
        ],
        x_title="message size (bytes)",
        y_title="busbw (GB/s)",
        log_x=True,
    )  # fmt: skip
    tables = tuple(_busbw_table(c) for c in curves)
    reached = "; ".join(
        f"{c.name} reaches {num(c.results[-1].busbw_gbyte_per_s, 1)} GB/s on "
        f"{num(c.results[-1].num_ranks)} GPUs"
        for c in curves
    )
    lead = f"nccl-tests-style all-reduce bus bandwidth at the largest size: {reached}."
    return Section("busbw", "Collective bandwidth", lead, (Figure(figure, "busbw"),), tables)


def _busbw_table(curve: BusbwCurve) -> Table:
    return table(
        ("size (MiB)", "algorithm", "protocol", "time (us)", "algbw (GB/s)", "busbw (GB/s)"),
        curve.results,
        lambda r: (
            num(r.size_bytes / 2**20),
            r.algorithm,
            r.protocol,
            num(r.time_s * 1e6, 1),
            num(r.algbw_gbyte_per_s, 1),
            num(r.busbw_gbyte_per_s, 1),
        ),
        caption=curve.name,
        numeric=(True, False, False, True, True, True),
    )


def plan_label(p: Prediction) -> str:
    """'TP 8 x PP 2 x CP 1 x DP 32 (VPP 4, mbs 2)' and EP when used."""
    q = p.plan
    job = q.layout
    ep = f", EP {job.ep}" if job.ep > 1 else ""
    degrees = f"TP {job.tp} x PP {job.pp} x CP {job.cp} x DP {job.dp}"
    return f"{degrees} (VPP {job.vpp}, mbs {q.micro_batch}{ep})"


def top_plans(design: Design, top: int) -> list[Prediction]:
    """The ``top`` fitting plans by throughput (perf's branch-and-bound search)."""
    from clusterforge.perf import PredictRequest, run_predict

    return run_predict(design, PredictRequest(search=True, top=top)).predictions


def performance_section(expected: dict[str, Any], plans: list[Prediction]) -> Section:
    """The spec's own plan (``expected``) and the best plans found, with their breakdown."""
    if not expected.get("available"):
        return Section("performance", "Training performance", str(expected.get("reason", "")))
    labels = [f"#{i + 1}" for i in range(len(plans))]
    series = [(k.removesuffix("_s"), [getattr(p.breakdown, k) for p in plans]) for k in BREAKDOWN]
    figure = charts.bar_chart(
        "step time of the best plans, by component", labels=labels, series=series,
        y_title="seconds per step", stacked=True,
    )  # fmt: skip
    rows = table(
        ("#", "plan", "MFU", "step (s)", "tokens/s per GPU", "memory per GPU (GiB)", "largest overhead"),
        list(enumerate(plans, 1)),
        lambda ip: (str(ip[0]), plan_label(ip[1]), pct(ip[1].mfu), num(ip[1].step_time_s, 2),
                    num(ip[1].tokens_per_s_per_gpu), num(ip[1].memory_per_gpu_gib, 1),
                    ip[1].breakdown.largest_overhead().removesuffix("_s")),
        caption="best plans by throughput",
    )  # fmt: skip
    lead = (
        f"{expected['model']} with the spec's plan {expected['plan']}: MFU "
        f"{pct(expected['mfu'])}, {num(expected['step_time_s'], 2)} s per step, "
        f"{num(expected['time_to_train_days'], 1)} days for {num(expected['tokens_to_train'] / 1e9)}"
        " B tokens without failures."
    )
    return Section("performance", "Training performance", lead, (Figure(figure, "plans"),), (rows,))


def goodput_section(design: Design, runs: int, *, ideal_days: float | None) -> Section:
    """Expected goodput, the Monte Carlo spread of time to train, and the what-ifs.

    ``ideal_days`` is the failure-free time to train when the caller has predicted it
    already (the goodput model would otherwise predict the same workload again)."""
    from clusterforge.goodput import goodput_report

    try:
        report = goodput_report(design, runs=runs, days=ideal_days)
    except ClusterforgeError as exc:
        return Section("goodput", "Goodput and time to train", str(exc))
    exp = report.expected
    days = [w / DAY_S for w in report.lives.wall_s.tolist()]
    figure = charts.histogram_chart(
        f"time to train over {runs} simulated lives", values=days, x_title="days"
    )
    what_if = table(
        ("change", "ETTR", "expected days", "spares for 99%"),
        list(report.variants.items()),
        lambda kv: (kv[0], pct(kv[1].ettr), num(kv[1].wall_s / DAY_S, 1),
                    str(kv[1].spares.spares_for_99)),
        caption="what if",
    )  # fmt: skip
    lead = (
        f"Effective training time ratio {pct(exp.ettr)}: {num(exp.interruptions_per_day, 2)} "
        f"interruptions a day, checkpoint every {num(exp.checkpoint_interval_s / 60)} min; "
        f"time to train {num(exp.wall_s / DAY_S, 1)} days expected, P50 "
        f"{num(report.percentile_days(50), 1)} / P90 {num(report.percentile_days(90), 1)} days."
    )
    return Section("goodput", "Goodput and time to train", lead, (Figure(figure, "goodput"),),
                   (what_if,))  # fmt: skip
