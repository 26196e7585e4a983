"""Held-out published runs (``heldout_runs.toml``): Llama 3 405B on H100, BLOOM 176B on A100.

These rows were not used to choose any constant of the model. Each row is predicted on a
design that approximates its real cluster (``parse_spec`` + ``design.plan``, the fabric
simulated by ``clusterforge.netsim``). What the sources do not give is chosen the way
``published_runs.py`` chooses it: the best predicted plan that fits in memory among
micro-batch {1, 2, 4, 8} (unless the row fixes it), the interleaving degrees in common use
{1, 2, 3, 4, 6, 8} that every pipeline stage can hold (unless fixed), and the recomputation
modes the row allows (least recomputation wins when it fits, since it is faster).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.design import plan as design_cluster
from clusterforge.errors import PlanError
from clusterforge.perf.compute import Stack
from clusterforge.perf.parallel import ParallelPlan, split_layers
from clusterforge.perf.predict import design_comm
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.spec import parse_spec

HERE = Path(__file__).parent
PATH = HERE / "heldout_runs.toml"
MICRO_BATCHES = (1, 2, 4, 8)
VIRTUAL_STAGES = (1, 2, 3, 4, 6, 8)
STACKS = {
    "megatron-core": Stack.megatron_core(),
    # Megatron-DeepSpeed 2022 (BLOOM): the 2021 Megatron-LM kernels and schedule; DeepSpeed's
    # BF16_Optimizer accumulates the gradients of every micro-batch into an FP32 buffer (a
    # separate pass) and reduces that buffer.
    "megatron-deepspeed-2022": Stack(
        name="megatron-deepspeed-2022",
        attention="unfused",
        dropout=True,
        tp_overlap=False,
        dp_overlap=False,
        pp_overlap=False,
        grad_reduce_bytes=4,
        fused_grad_accumulation=False,
    ),
}


@dataclass(frozen=True)
class HeldoutRow:
    name: str
    arch: ModelArch
    base: ParallelPlan
    micro_batches: tuple[int, ...]
    virtual_stages: tuple[int, ...]
    recompute: tuple[str, ...]
    stack: Stack
    node: str
    network: tuple[tuple[str, Any], ...]
    metric: str
    published_tflops: float


def load_heldout() -> list[HeldoutRow]:
    rows = []
    for r in tomllib.loads(PATH.read_text())["row"]:
        arch = load_catalog().models[r["model"]]
        model_parallel = r["tp"] * r["cp"] * r["pp"]
        base = ParallelPlan(
            tp=r["tp"],
            pp=r["pp"],
            cp=r["cp"],
            dp=r["num_gpus"] // model_parallel,
            global_batch=r["global_batch"],
            seq_length=r["seq_length"],
            sequence_parallel=r["tp"] > 1,
            recompute=r["recompute"][0],
            zero_stage=r["zero_stage"],
            precision="bf16",
        )
        rows.append(
            HeldoutRow(
                name=r["name"],
                arch=arch,
                base=base,
                micro_batches=tuple(r.get("micro_batch", MICRO_BATCHES)),
                virtual_stages=tuple(r.get("vpp", VIRTUAL_STAGES)),
                recompute=tuple(r["recompute"]),
                stack=STACKS[r["stack"]],
                node=r["node"],
                network=tuple(sorted(r["network"].items())),
                metric=r["metric"],
                published_tflops=float(r["published_tflops"]),
            )
        )
    return rows


_DESIGNS: dict[str, Any] = {}


def heldout_design(row: HeldoutRow) -> Any:
    """The row's cluster as a clusterforge design, with the row's workload (built once)."""
    if row.name not in _DESIGNS:
        workload = {
            "model": row.arch.id,
            "tensor_parallel": row.base.tp,
            "pipeline_parallel": row.base.pp,
            "context_parallel": row.base.cp,
            "global_batch": row.base.global_batch,
            "seq_length": row.base.seq_length,
        }
        spec = parse_spec(
            {
                "num_gpus": row.base.num_gpus,
                "node": row.node,
                "network": dict(row.network),
                "workload": workload,
            },
            source=f"held-out {row.name}",
        )
        _DESIGNS[row.name] = design_cluster(spec, break_even=False)
    return _DESIGNS[row.name]


def candidates(row: HeldoutRow) -> list[ParallelPlan]:
    """Micro-batch x interleaving x recomputation plans the row allows.

    Interleaving degrees divide the pipeline slots of a stage into equal chunks, as
    ``published_runs.candidates`` requires of the layers: the slots are the layers plus the
    embedding and the loss when the stages are uneven (Llama 3: 126 + 2 = 128 slots, 8 per
    stage), and every stage keeps at least one layer per chunk (``split_layers``).
    """
    stages = split_layers(row.arch.num_layers, row.base.pp)
    slots = row.arch.num_layers + (2 if min(stages) < max(stages) else 0)
    per_stage = slots // row.base.pp
    vpps = [
        v
        for v in row.virtual_stages
        if slots % row.base.pp == 0 and per_stage % v == 0 and v <= min(stages)
    ]
    vpps = vpps if row.base.pp > 1 else [1]
    return [
        row.base.with_(micro_batch=mb, vpp=v, recompute=rc)
        for rc in row.recompute
        for mb in row.micro_batches
        for v in vpps
    ]


def predict_heldout(row: HeldoutRow) -> Prediction:
    """Best predicted plan that fits, on the row's designed cluster."""
    design = heldout_design(row)
    comm = design_comm(design)
    best: Prediction | None = None
    for plan in candidates(row):
        try:
            pred = predict_step(
                row.arch,
                plan,
                design.compute.gpu,
                comm,
                design.compute.nvlink_domain_gpus,
                row.stack,
            )
        except PlanError:
            continue
        if pred.fits and (best is None or pred.step_time_s < best.step_time_s):
            best = pred
    if best is None:
        raise PlanError(f"no candidate plan fits for held-out row {row.name}")
    return best


def predicted_tflops(row: HeldoutRow, pred: Prediction) -> float:
    return float(getattr(pred, row.metric))
