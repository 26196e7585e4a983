"""Parallelism plans: a job layout plus what a training step needs, validated, and its groups.

A :class:`ParallelPlan` is plain data: its :class:`~clusterforge.job.JobLayout` (the
TP/PP/CP/EP/DP degrees and the interleaving, with their rank grid, groups and structural
checks in Megatron-LM rank order) plus batch, sequence, recomputation, ZeRO stage and
precision; :func:`validate_plan` raises :class:`PlanError` naming the field, the value and
the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.job import GroupKind, JobLayout, require
from clusterforge.perf.flops import Recompute
from clusterforge.perf.optimizer_state import OptimizerState

__all__ = [
    "GroupKind",
    "ParallelPlan",
    "Precision",
    "num_micro_batches",
    "rank_groups",
    "recompute_fraction",
    "shard_groups",
    "tokens_per_gpu",
    "validate_plan",
]

# mxfp8, nvfp4: Transformer Engine's block-scaled recipes on Blackwell (:mod:`.blockscale`).
Precision = Literal["bf16", "fp16", "fp8", "mxfp8", "nvfp4"]


@dataclass(frozen=True)
class ParallelPlan:
    """One way to run a training step on the ``layout.num_gpus`` GPUs of its job layout.

    ``offload_layers``: layers per stage whose saved activations wait in host memory between
    their forward and backward (Megatron-Core activation offloading; :mod:`.offload`).
    ``offload_modules``: modules of every layer whose saved inputs wait in host memory
    (Megatron-Core fine-grained activation offloading, ``--offload-modules``;
    :mod:`.offload_modules`): ``"expert_fc1"``, ``"moe_act"``.
    ``optimizer_offload``: the FP32 master weights, Adam moments and the optimizer step live
    on the host CPU (DeepSpeed ZeRO-Offload, ``offload_optimizer {device: cpu}``;
    :mod:`.optimizer_offload`). ``optimizer_state``: how the optimizer stores Adam's state
    and the master weights (:mod:`.optimizer_state`; ``"fp32"``: the stack's layout).
    """

    layout: JobLayout
    micro_batch: int = 1
    global_batch: int = 1024
    seq_length: int = 4096
    sequence_parallel: bool = True
    recompute: Recompute = "selective"
    zero_stage: int = 1
    precision: Precision = "bf16"
    pipeline_layers: tuple[int, ...] | None = None
    shard_size: int | None = None
    recompute_layers: int | None = None
    offload_layers: int = 0
    offload_modules: tuple[str, ...] = ()
    optimizer_offload: bool = False
    optimizer_state: OptimizerState = "fp32"

    def with_(self, **changes: object) -> ParallelPlan:
        """A copy with some fields changed (plans are frozen)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def recompute_fraction(plan: ParallelPlan, stage_layers: tuple[int, ...]) -> float:
    """Share of a stage's layers whose forward is recomputed in the backward.

    ``recompute = "full"`` recomputes every layer, or, with ``recompute_layers = k``, the
    first ``k`` layers of each stage and keeps the others' activations (Megatron-LM
    ``--recompute-granularity full --recompute-method block --recompute-num-layers k``;
    Korthikanti et al. 2022 §5 discuss recomputing only some layers). Other modes: 0.
    """
    if plan.recompute != "full":
        return 0.0
    if plan.recompute_layers is None:
        return 1.0
    return min(1.0, plan.recompute_layers / max(stage_layers))


def tokens_per_gpu(plan: ParallelPlan) -> float:
    """Tokens one GPU processes per micro-batch (CP splits the sequence)."""
    return plan.micro_batch * plan.seq_length / plan.layout.cp


def num_micro_batches(plan: ParallelPlan) -> int:
    """Micro-batches per pipeline per step: ``global / (micro x DP)``."""
    return plan.layout.num_micro_batches(plan.global_batch, plan.micro_batch)


def validate_plan(arch: ModelArch, plan: ParallelPlan, num_gpus: int) -> tuple[int, ...]:
    """Check a plan against the model and the GPU count; return layers per pipeline stage.

    The structural checks are :class:`~clusterforge.job.JobLayout`'s (degrees, GPU count,
    heads over TP, sequence over CP, experts over EP, batch split, interleaving); this adds
    only what a layout does not know: the ZeRO stage, the HSDP shard group and the layer split.
    """
    layout = plan.layout
    layout.check_gpus(num_gpus)
    layout.check_model(arch, plan.seq_length)
    layout.check_batch(plan.global_batch, plan.micro_batch)
    require(plan.zero_stage in (0, 1, 2, 3), f"zero_stage = {plan.zero_stage}: use 0, 1, 2 or 3")
    require(
        plan.recompute_layers is None or plan.recompute_layers >= 0,
        f"recompute_layers = {plan.recompute_layers}: use 0 or more layers per stage",
    )
    require(
        0 <= plan.offload_layers < arch.num_layers,
        f"offload_layers = {plan.offload_layers}: use 0 to {arch.num_layers - 1} layers "
        "whose activations go to host memory (Megatron-Core cpu_offloading_num_layers)",
    )
    require(
        set(plan.offload_modules) <= {"expert_fc1", "moe_act"},
        f"offload_modules = {plan.offload_modules}: the model prices expert_fc1 and moe_act",
    )
    # DeepSpeed builds its offloading optimizer only with ZeRO on: ``zero_enabled`` is
    # ``stage > 0`` (deepspeed/runtime/config.py) and ``_do_optimizer_sanity_check`` returns
    # the ZeRO wrapper, the one consumer of ``offload_optimizer``, only then (engine.py,
    # deepspeedai/DeepSpeed at edaa7221).
    require(
        not plan.optimizer_offload or plan.zero_stage >= 1,
        f"optimizer_offload with zero_stage = {plan.zero_stage}: DeepSpeed offloads the "
        "optimizer only under ZeRO stage 1, 2 or 3; use zero_stage 1-3 or no offload",
    )
    replicas = layout.dp * layout.cp
    require(
        plan.shard_size is None or (plan.shard_size >= 1 and replicas % plan.shard_size == 0),
        f"fsdp_shard_size = {plan.shard_size} must divide DP x CP = {replicas} (hybrid "
        "sharding replicates whole shard groups)",
    )
    return layout.split_layers(arch.num_layers, plan.pipeline_layers)


def rank_groups(plan: ParallelPlan, kind: GroupKind, stage: int = 0) -> np.ndarray:
    """Concurrent communication groups of one kind in pipeline stage ``stage``.

    Returns ``(num_groups, group_size)`` global ranks from the plan's
    :class:`~clusterforge.job.JobLayout`; for ``"pp"`` the pairs (stage, stage + 1). Only one
    stage is returned: the groups that run at the same time and contend for the same links
    (the other stages repeat the pattern on other nodes).
    """
    if kind == "pp":
        return plan.layout.pipeline_pairs(stage)
    return plan.layout.groups(kind, stage=stage)


def shard_groups(plan: ParallelPlan) -> tuple[np.ndarray, np.ndarray]:
    """(shard groups, replica groups) of ZeRO-3/FSDP in stage 0.

    Full sharding: the DP x CP groups, no replicas. Hybrid sharding (HSDP, Zhao et al. 2023
    §3.2.2): consecutive blocks of ``shard_size`` members of each DP x CP group shard the
    model; members at the same position of different blocks form the replica groups that
    all-reduce the sharded gradients once per step.
    """
    dpcp = rank_groups(plan, "dpcp")
    size = plan.shard_size or dpcp.shape[1]
    blocks = dpcp.reshape(dpcp.shape[0], -1, size)  # [tp, replicas, shard]
    replicas = blocks.transpose(0, 2, 1).reshape(-1, blocks.shape[1])
    return blocks.reshape(-1, size), replicas
