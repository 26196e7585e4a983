"""Rendering of ``clusterforge predict``: plan tables, step breakdown, range and JSON."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.table import Table

from clusterforge.assess import (
    EP_OVERLAP_RULES,
    FLOP_CONVENTION,
    CalibrationChange,
    GoodputOutlook,
    ParallelPlan,
    PredictAssessment,
    Prediction,
)
from clusterforge.report.expected import goodput_json
from clusterforge.report.json_document import json_document

__all__ = ["predict_json", "print_predict"]


def plan_label(plan: ParallelPlan) -> str:
    """``TP8 PP4 DP16 mb1 v5 Z1 sel``: a plan on one line."""
    job = plan.layout
    parts = [f"TP{job.tp}", f"PP{job.pp}"]
    parts += [f"CP{job.cp}"] if job.cp > 1 else []
    parts += [f"EP{job.ep}"] if job.ep > 1 else []
    parts += [f"DP{job.dp}", f"mb{plan.micro_batch}"]
    parts += [f"v{job.vpp}"] if job.vpp > 1 else []
    parts += [f"Z{plan.zero_stage}"]
    parts += ["opt-offload"] if plan.optimizer_offload else []
    if plan.shard_size:
        parts += [f"shard{plan.shard_size}"]
    match plan.recompute:
        case "none":
            parts += ["-"]
        case "selective":
            parts += ["sel"]
        case "full":
            layers = plan.recompute_layers
            parts += ["full" if layers is None else f"full{layers}"]
    return " ".join(parts)


def _si(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.0f}"


def _summary_table(predictions: list[Prediction], title: str) -> Table:
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("GPUs", justify="right")
    table.add_column("plan", no_wrap=True)
    for header in ("step s", "tok/s", "tok/s/GPU", "TFLOP/s", "MFU", "HFU", "GiB", "fits"):
        table.add_column(header, justify="right")
    table.add_column("top overhead")
    for index, p in enumerate(predictions, 1):
        table.add_row(
            str(index),
            str(p.plan.layout.num_gpus),
            plan_label(p.plan),
            f"{p.step_time_s:.2f}",
            _si(p.tokens_per_s),
            f"{p.tokens_per_s_per_gpu:,.0f}",
            f"{p.model_tflops_per_gpu:.0f}",
            f"{p.mfu:.1%}",
            f"{p.hfu:.1%}",
            f"{p.memory_per_gpu_gib:.1f}",
            "yes" if p.fits else "[red]NO[/]",
            p.breakdown.largest_overhead().removesuffix("_s").replace("_", " "),
        )
    return table


def _breakdown_table(p: Prediction) -> Table:
    table = Table(title="step time breakdown")
    table.add_column("part")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    for name, seconds in vars(p.breakdown).items():
        label = name.removesuffix("_s").replace("_", " ")
        table.add_row(label, f"{seconds:.3f}", f"{seconds / p.step_time_s:.1%}")
    mem = p.memory
    table.caption = (
        f"memory/GPU {mem.total_gib:.1f} GiB = weights {mem.weights_gib:.1f} + grads "
        f"{mem.gradients_gib:.1f} + optimizer {mem.optimizer_gib:.1f} "
        f"({p.optimizer_bytes_per_param:g} B/param, {p.plan.optimizer_state}) + activations "
        f"{mem.activations_gib:.1f} + reserve {mem.reserve_gib:.1f}; layers per stage "
        f"{list(p.stage_layers)}"
    )
    if p.ep_overlap_chunk_s:
        table.caption += (
            f"; EP overlap under the interleaved schedule: {p.ep_overlap_chunk_s * 1e3:.2f} ms "
            "per model-chunk pass (measured, clusterforge.perf.host)"
        )
    off = p.optimizer_offload
    if off is not None:
        table.caption += (
            f"; optimizer on the host: {off.host_s:.3f} s host passes ({off.ranks_per_host} "
            f"ranks x {off.owned_params / 1e9:.3f} B params x {off.host_bytes_per_param:.0f} B "
            f"/ {off.host_dram_gbyte_per_s:.1f} GB/s) + {off.param_up_s:.3f} s parameters up + "
            f"{max(0.0, off.grad_link_s - off.backward_s):.3f} s gradient copies beyond the "
            "backward"
        )
    return table


def calibration_table(changes: tuple[CalibrationChange, ...]) -> Table:
    """The model's figures a calibration replaced, and by how much."""
    table = Table(title="calibrated from measurements (model -> measured)")
    for name in ("figure", "model", "measured", "change", "unit"):
        table.add_column(name, justify="left" if name in ("figure", "unit") else "right")
    for c in changes:
        table.add_row(c.figure, f"{c.model:,.1f}", f"{c.measured:,.1f}", f"{c.change:+.1%}", c.unit)
    return table


def calibration_json(changes: tuple[CalibrationChange, ...]) -> list[dict[str, Any]]:
    """The calibration's changes as JSON rows (``change`` is measured / model - 1)."""
    return [
        {
            "figure": c.figure,
            "model": c.model,
            "measured": c.measured,
            "change": c.change,
            "unit": c.unit,
        }
        for c in changes
    ]


def predict_json(assessment: PredictAssessment) -> str:
    """``clusterforge predict --json``: an object whose ``plans`` hold one object per
    prediction, best first; the first carries the time to train with failures when it was
    computed, and the calibration's changes when one was given."""
    outcome = assessment.outcome
    goodput = None if assessment.goodput is None else goodput_json(assessment.goodput)
    rows: list[dict[str, Any]] = []
    for i, p in enumerate(outcome.predictions):
        row = p.as_dict()
        row["time_to_train_days"] = p.time_to_train_s(outcome.tokens) / 86400
        if i == 0 and goodput is not None:
            row["goodput"] = goodput
        if outcome.gpu_power_limit_w is not None:
            row["gpu_power_limit_w"] = outcome.gpu_power_limit_w
        if outcome.efa_instance is not None:
            row["efa_instance"] = outcome.efa_instance
            row["efa_net_latency_us"] = outcome.efa_net_latency_us
        if i == 0 and outcome.calibration_changes:
            row["calibration"] = calibration_json(outcome.calibration_changes)
        if outcome.searched:
            row["plans_evaluated"] = {
                "generated": outcome.num_candidates,
                "fit_in_memory": outcome.num_fitting,
                "timed": outcome.num_timed,
                "refused_expert_parallel_overlap": outcome.num_refused,
            }
        rows.append(row)
    return json.dumps(json_document("predict", {"plans": rows}), indent=2)


def print_predict(assessment: PredictAssessment, console: Console) -> None:
    """Tables, the range of the best prediction, time to train and the conventions."""
    outcome, goodput = assessment.outcome, assessment.goodput
    best = outcome.predictions[0]
    gpus = sorted({p.plan.layout.num_gpus for p in outcome.predictions})
    sizes = f"{gpus[0]}" if len(gpus) == 1 else f"{gpus[0]}-{gpus[-1]}"
    title = f"{outcome.model_id} on {sizes} x {outcome.gpu_id}"
    if outcome.gpu_power_limit_w is not None:
        title += f" limited to {outcome.gpu_power_limit_w:g} W"
    if outcome.searched:
        title = f"best {len(outcome.predictions)} plans: {title}"
    if outcome.calibration_changes:
        console.print(calibration_table(outcome.calibration_changes))
    console.print(_summary_table(outcome.predictions, title))
    if len(outcome.predictions) == 1:
        console.print(_breakdown_table(best))
    # a size sweep: the range and the time to train are both of the fastest size
    fastest = max(outcome.predictions, key=lambda p: p.tokens_per_s)
    headline = fastest if len(gpus) > 1 else best
    band = headline.band
    where = f" on {headline.plan.layout.num_gpus:,} GPUs" if len(gpus) > 1 else ""
    console.print(
        f"tokens/s per GPU{where} {band.describe(headline.tokens_per_s_per_gpu)}: 80 % range "
        f"for a run on a new cluster, {band.basis()}; their MAPE as first predicted {band.mape:.1%} "
        "(docs/validation.md)"
    )
    if outcome.searched:
        console.print(
            f"plans evaluated: {outcome.num_candidates:,} generated, {outcome.num_fitting:,} "
            f"fit in memory, {outcome.num_timed:,} timed on the fabric"
        )
    if outcome.num_refused:
        console.print(
            f"plans dropped: {outcome.num_refused:,} that Megatron-Core refuses under "
            f"workload.expert_parallel_overlap ({EP_OVERLAP_RULES})"
        )
    days = fastest.time_to_train_s(outcome.tokens) / 86400
    console.print(
        f"time to train {outcome.tokens / 1e9:,.0f}B tokens: {days:,.1f} days at "
        f"{fastest.tokens_per_s:,.0f} tokens/s on {fastest.plan.layout.num_gpus:,} GPUs "
        "(no failures or restarts)"
    )
    if isinstance(goodput, GoodputOutlook):
        exp = goodput.report.expected
        console.print(
            f"with failures and restarts ({goodput.num_gpus:,} GPUs): "
            f"{goodput.expected_days:,.1f} "
            f"days expected, P50 {goodput.p50_days:,.1f}, P90 {goodput.p90_days:,.1f} "
            f"(ETTR {exp.ettr:.1%}, {exp.interruptions_per_day:.2f} interruptions "
            "per day; clusterforge goodput for the detail)"
        )
    if outcome.efa_instance is not None:
        console.print(
            f"network latency per step across nodes: {outcome.efa_net_latency_us:g} us, the one "
            f"aws-ofi-nccl reports on {outcome.efa_instance} (NCCL's latencyInter; "
            "network.efa_instance)"
        )
    console.print(f"[dim]{FLOP_CONVENTION}; software stack: {best.stack}[/]")
