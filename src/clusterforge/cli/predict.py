"""``clusterforge predict``: step time, MFU/HFU, memory and a breakdown for a training plan.

Parse the spec and overrides, design the cluster, call :mod:`clusterforge.perf`, render.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clusterforge.errors import PlanError
from clusterforge.perf import (
    FLOP_CONVENTION,
    ParallelPlan,
    Prediction,
    plan_from_workload,
    predict_plan,
    resolve_model,
    search_plans,
)
from clusterforge.perf.predict import design_comm

__all__ = ["command"]

_DEGREES = ("tp", "pp", "cp", "ep", "dp")


def _apply_overrides(plan: ParallelPlan, overrides: dict[str, Any], num_gpus: int) -> ParallelPlan:
    """Command-line values replace the spec's; DP follows TP x PP x CP unless given."""
    changes = {k: v for k, v in overrides.items() if v is not None}
    plan = plan.with_(**changes)
    if "dp" not in changes and any(k in changes for k in ("tp", "pp", "cp")):
        model_parallel = plan.tp * plan.pp * plan.cp
        if num_gpus % model_parallel:
            raise PlanError(
                f"--tp x --pp x --cp = {model_parallel} does not divide the {num_gpus} GPUs; "
                "pick degrees whose product divides the GPU count"
            )
        plan = plan.with_(dp=num_gpus // model_parallel)
    if "tp" in changes and plan.tp == 1:
        plan = plan.with_(sequence_parallel=False)
    if plan.pipeline_layers is not None and len(plan.pipeline_layers) != plan.pp:
        plan = plan.with_(pipeline_layers=None)  # the spec's split was for another PP
    return plan


def _fmt_plan(plan: ParallelPlan) -> str:
    parts = [f"TP{plan.tp}", f"PP{plan.pp}"]
    parts += [f"CP{plan.cp}"] if plan.cp > 1 else []
    parts += [f"EP{plan.ep}"] if plan.ep > 1 else []
    parts += [f"DP{plan.dp}", f"mb{plan.micro_batch}"]
    parts += [f"v{plan.vpp}"] if plan.vpp > 1 else []
    parts += [
        f"Z{plan.zero_stage}",
        {"none": "-", "selective": "sel", "full": "full"}[plan.recompute],
    ]
    return " ".join(parts)


def _si(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.0f}"


def _summary_table(predictions: list[Prediction], title: str) -> Table:
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("plan", no_wrap=True)
    for header in ("step s", "tok/s", "TFLOP/s", "MFU", "HFU", "GiB", "fits"):
        table.add_column(header, justify="right")
    table.add_column("top overhead")
    for index, p in enumerate(predictions, 1):
        table.add_row(
            str(index),
            _fmt_plan(p.plan),
            f"{p.step_time_s:.2f}",
            _si(p.tokens_per_s),
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
        f"{mem.gradients_gib:.1f} + optimizer {mem.optimizer_gib:.1f} + activations "
        f"{mem.activations_gib:.1f} + reserve {mem.reserve_gib:.1f}; layers per stage "
        f"{list(p.stage_layers)}"
    )
    return table


def _render(predictions: list[Prediction], as_json: bool, tokens: float, title: str) -> None:
    if as_json:
        rows = []
        for p in predictions:
            row = p.as_dict()
            row["time_to_train_days"] = p.time_to_train_s(tokens) / 86400
            rows.append(row)
        click.echo(json.dumps(rows, indent=2))
        return
    # plan tables have ten columns: keep them readable when piped (80 columns by default)
    console = Console(width=max(Console().width, 132))
    console.print(_summary_table(predictions, title))
    if len(predictions) == 1:
        console.print(_breakdown_table(predictions[0]))
    best = predictions[0]
    console.print(
        f"time to train {tokens / 1e9:,.0f}B tokens: {best.time_to_train_s(tokens) / 86400:,.1f} "
        f"days at {best.tokens_per_s:,.0f} tokens/s (no failures or restarts)"
    )
    console.print(f"[dim]{FLOP_CONVENTION}; software stack: {best.stack}[/]")


@click.command("predict")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("--tp", type=click.IntRange(min=1), help="Tensor-parallel degree.")
@click.option("--pp", type=click.IntRange(min=1), help="Pipeline-parallel degree.")
@click.option("--cp", type=click.IntRange(min=1), help="Context-parallel degree.")
@click.option("--ep", type=click.IntRange(min=1), help="Expert-parallel degree (MoE).")
@click.option("--dp", type=click.IntRange(min=1), help="Data-parallel degree.")
@click.option("--micro-batch", type=click.IntRange(min=1), help="Sequences per micro-batch.")
@click.option("--global-batch", type=click.IntRange(min=1), help="Sequences per step.")
@click.option("--vpp", type=click.IntRange(min=1), help="Interleaved virtual stages per GPU.")
@click.option("--zero", type=click.IntRange(0, 3), help="ZeRO stage (3 = FSDP full shard).")
@click.option("--recompute", type=click.Choice(["none", "selective", "full"]))
@click.option("--precision", type=click.Choice(["bf16", "fp16", "fp8"]))
@click.option("--search", is_flag=True, help="Rank valid plans that fit in memory.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per plan).")
def command(spec: str | None, search: bool, top: int, as_json: bool, **overrides: Any) -> None:
    """Predict training step time, MFU/HFU and memory per GPU (SPEC: YAML; none = default)."""
    from clusterforge.design import plan as design_plan
    from clusterforge.spec import load_spec

    cluster = load_spec(spec)
    design = design_plan(cluster)
    workload, _ = design.require_workload("predict")
    arch = resolve_model(workload)
    num_gpus = design.compute.num_training_gpus
    renames = {"micro_batch": "micro_batch", "global_batch": "global_batch", "zero": "zero_stage"}
    overrides = {renames.get(k, k): v for k, v in overrides.items()}
    base = _apply_overrides(plan_from_workload(workload, num_gpus, arch), overrides, num_gpus)
    comm = design_comm(design)
    tokens = workload.tokens_b * 1e9
    if search:
        with Progress(
            TextColumn("searching plans"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("search", total=None)
            found = search_plans(
                arch,
                base,
                design.compute.gpu,
                comm,
                design.compute.nvlink_domain_gpus,
                top=top,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        title = f"best {len(found)} plans: {arch.id} on {num_gpus} x {design.compute.gpu.id}"
        _render(found, as_json, tokens, title)
        return
    prediction = predict_plan(design, base, arch, comm)
    _render([prediction], as_json, tokens, f"{arch.id} on {num_gpus} x {design.compute.gpu.id}")
