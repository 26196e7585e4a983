"""``clusterforge predict``: step time, MFU/HFU, memory and a breakdown for a training plan.

Parse the options into :class:`PredictOptions`, design the cluster, call
:func:`clusterforge.assess.predict` once, render with :mod:`clusterforge.report.predict`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, get_args

import click

from clusterforge.assess import STACK_NAMES, PlanOverrides, Precision, Recompute
from clusterforge.job import JobLayout

__all__ = ["PredictOptions", "command"]

# Options that change the plan's step settings (option -> PlanOverrides field); the degree
# options (--tp, --pp, --cp, --ep, --dp, --vpp) are the job layout's own field names.
_PLAN_OPTIONS = {
    "micro_batch": "micro_batch",
    "global_batch": "global_batch",
    "zero": "zero_stage",
    "recompute": "recompute",
    "precision": "precision",
    "optimizer_offload": "optimizer_offload",
}
_DEGREES = tuple(f.name for f in fields(JobLayout))


@dataclass(frozen=True)
class PredictOptions:
    """Everything ``clusterforge predict`` was asked, parsed."""

    spec: str | None
    overrides: PlanOverrides
    stack: str | None
    search: bool
    top: int
    gpu_counts: tuple[int, ...]
    as_json: bool
    calibration: str | None = None
    gpu_power_limit_w: float | None = None


def _gpu_counts(gpus: str | None, max_gpus: int | None) -> tuple[int, ...]:
    """``--gpus 512,1024`` as given; ``--max-gpus N``: powers of two from 8 below N, and N."""
    if gpus:
        try:
            return tuple(sorted({int(v) for v in gpus.split(",")}))
        except ValueError:
            raise click.BadParameter(f"{gpus!r}: use comma-separated integers") from None
    if max_gpus:
        powers = {2**i for i in range(3, max_gpus.bit_length()) if 2**i < max_gpus}
        return tuple(sorted(powers | {max_gpus}))
    return ()


def _run(options: PredictOptions) -> None:
    from clusterforge.assess import PredictRequest, load_calibration, predict
    from clusterforge.design import plan as design_plan
    from clusterforge.report.predict import predict_json, print_predict
    from clusterforge.report.terminal import make_console
    from clusterforge.spec import load_spec

    spec = load_spec(options.spec)
    if options.gpu_power_limit_w is not None:
        spec = spec.model_copy(update={"gpu_power_limit_w": options.gpu_power_limit_w})
    design = design_plan(spec)
    calibration = load_calibration(Path(options.calibration)) if options.calibration else None
    request = PredictRequest(
        overrides=options.overrides,
        stack=options.stack,  # type: ignore[arg-type]  # a click.Choice of STACK_NAMES
        search=options.search,
        top=options.top,
        gpu_counts=options.gpu_counts,
        calibration=calibration,
    )
    assessment = predict(design, request)
    if options.as_json:
        click.echo(predict_json(assessment))
        return
    console = make_console()
    console.width = max(console.width, 132)  # ten columns stay readable when piped
    print_predict(assessment, console)


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
@click.option("--recompute", type=click.Choice(get_args(Recompute)))
@click.option("--precision", type=click.Choice(get_args(Precision)))
@click.option(
    "--optimizer-offload/--no-optimizer-offload",
    default=None,
    help="DeepSpeed ZeRO-Offload: optimizer states and step on the host CPU (ZeRO 1-3).",
)
@click.option(
    "--gpu-power-limit-w",
    type=click.FloatRange(min=0, min_open=True),
    help="Board power limit of every GPU, W (nvidia-smi -pl; default: the spec's, else TDP).",
)
@click.option("--stack", type=click.Choice(STACK_NAMES), help="Software stack (default: spec's).")
@click.option("--search", is_flag=True, help="Rank valid plans that fit in memory.")
@click.option("--gpus", help="GPU counts to predict or search, e.g. 512,1024.")
@click.option(
    "--max-gpus", type=click.IntRange(min=1), help="Search powers of two up to N, and N itself."
)
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per plan).")
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    help="The cluster's measured rates (clusterforge accept's report.json) in place of the "
    "catalog's GEMM, HBM and collective efficiencies.",
)
def command(**values: Any) -> None:
    """Predict training step time, MFU/HFU and memory per GPU (SPEC: YAML; none = default)."""
    plan = {_PLAN_OPTIONS[k]: v for k, v in values.items() if k in _PLAN_OPTIONS}
    layout = {k: values[k] for k in _DEGREES if values[k] is not None}
    options = PredictOptions(
        spec=values["spec"],
        overrides=PlanOverrides(layout=layout, **plan),
        stack=values["stack"],
        search=values["search"] or values["max_gpus"] is not None,
        top=values["top"],
        gpu_counts=_gpu_counts(values["gpus"], values["max_gpus"]),
        as_json=values["as_json"],
        calibration=values["calibration"],
        gpu_power_limit_w=values["gpu_power_limit_w"],
    )
    _run(options)
