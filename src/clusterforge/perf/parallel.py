"""Parallelism plans: the TP/PP/CP/EP/DP layout of a training job, validated, and its groups.

A :class:`ParallelPlan` is plain data: the degrees plus what a training step needs (batch,
sequence, recomputation, ZeRO stage, precision). Its rank grid, communication groups and
structural checks are those of its :class:`~clusterforge.job.JobLayout` (Megatron-LM rank
order); :func:`validate_plan` raises :class:`PlanError` naming the field, the value and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import GroupKind, JobLayout
from clusterforge.perf.flops import Recompute

__all__ = [
    "GroupKind",
    "ParallelPlan",
    "Precision",
    "num_micro_batches",
    "rank_groups",
    "recompute_fraction",
    "shard_groups",
    "split_layers",
    "validate_plan",
]

Precision = Literal["bf16", "fp16", "fp8"]


@dataclass(frozen=True)
class ParallelPlan:
    """One way to run a training step on ``num_gpus`` GPUs (degrees multiply to it).

    ``offload_layers``: layers per stage whose saved activations wait in host memory between
    their forward and backward (Megatron-Core activation offloading; :mod:`.offload`).
    """

    tp: int
    pp: int
    dp: int
    cp: int = 1
    ep: int = 1
    vpp: int = 1
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

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @cached_property
    def layout(self) -> JobLayout:
        """The plan's job layout: its rank grid, groups and structural checks."""
        return JobLayout(tp=self.tp, pp=self.pp, dp=self.dp, cp=self.cp, ep=self.ep)

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


def num_micro_batches(plan: ParallelPlan) -> int:
    """Micro-batches per pipeline per step: ``global / (micro x DP)``."""
    return plan.layout.num_micro_batches(plan.global_batch, plan.micro_batch)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PlanError(message)


def validate_plan(arch: ModelArch, plan: ParallelPlan, num_gpus: int) -> tuple[int, ...]:
    """Check a plan against the model and the GPU count; return layers per pipeline stage.

    The structural checks are :class:`~clusterforge.job.JobLayout`'s (degrees, GPU count,
    heads over TP, sequence over CP, experts over EP, batch split, interleaving); this adds
    only what a layout does not know: the ZeRO stage, the HSDP shard group and the layer split.
    """
    layout = JobLayout.for_gpus(
        num_gpus, tp=plan.tp, pp=plan.pp, cp=plan.cp, ep=plan.ep, dp=plan.dp
    )
    layout.check_model(arch, plan.seq_length)
    layout.check_batch(plan.global_batch, plan.micro_batch, plan.vpp)
    _require(plan.zero_stage in (0, 1, 2, 3), f"zero_stage = {plan.zero_stage}: use 0, 1, 2 or 3")
    _require(
        plan.recompute_layers is None or plan.recompute_layers >= 0,
        f"recompute_layers = {plan.recompute_layers}: use 0 or more layers per stage",
    )
    _require(
        0 <= plan.offload_layers < arch.num_layers,
        f"offload_layers = {plan.offload_layers}: use 0 to {arch.num_layers - 1} layers "
        "whose activations go to host memory (Megatron-Core cpu_offloading_num_layers)",
    )
    replicas = plan.dp * plan.cp
    _require(
        plan.shard_size is None or (plan.shard_size >= 1 and replicas % plan.shard_size == 0),
        f"fsdp_shard_size = {plan.shard_size} must divide DP x CP = {replicas} (hybrid "
        "sharding replicates whole shard groups)",
    )
    return split_layers(arch.num_layers, plan.pp, plan.vpp, plan.pipeline_layers)


def split_layers(
    num_layers: int, pp: int, vpp: int = 1, explicit: tuple[int, ...] | list[int] | None = None
) -> tuple[int, ...]:
    """Layers per pipeline stage, explicit or automatic.

    Automatic: as even as possible; when the layers do not divide, the stages that get one
    layer fewer are the first and the last (they also carry the embedding and the loss), the
    Llama 3 405B layout (126 layers on 16 stages: 7 + 14 x 8 + 7; Llama Team 2024, §3.3.2).
    With interleaving (``vpp`` chunks per stage) a stage's chunks may differ by a layer, as
    in Llama 3's interleaved schedule; each chunk needs at least one layer.
    """
    if explicit is not None:
        stages = tuple(int(n) for n in explicit)
        _require(
            len(stages) == pp and sum(stages) == num_layers and min(stages) >= 1,
            f"pipeline_layers = {list(stages)}: need {pp} positive counts summing to "
            f"{num_layers} layers",
        )
    else:
        _require(
            num_layers >= pp,
            f"pp = {pp} is more than the {num_layers} layers; use pp <= {num_layers}",
        )
        base, extra = divmod(num_layers, pp)
        short = pp - extra
        order = _stage_order_ends_first(pp)
        counts = [base + 1] * pp
        for stage in order[:short]:
            counts[stage] = base
        stages = tuple(counts)
    _require(
        min(stages) >= vpp,
        f"vpp = {vpp} needs at least {vpp} layers on every pipeline stage {list(stages)}; "
        "choose a smaller vpp",
    )
    return stages


def _stage_order_ends_first(pp: int) -> list[int]:
    """Stage indices ordered first, last, second, second-to-last, ... (ends first)."""
    order: list[int] = []
    low, high = 0, pp - 1
    while low <= high:
        order.append(low)
        if high != low:
            order.append(high)
        low, high = low + 1, high - 1
    return order


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
