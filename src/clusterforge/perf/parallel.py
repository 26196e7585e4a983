"""Parallelism plans: the TP/PP/CP/EP/DP layout of a training job, validated, and its groups.

A :class:`ParallelPlan` is plain data. :func:`validate_plan` raises :class:`PlanError` naming
the field, the value and the fix. Ranks follow Megatron-LM's default order (TP fastest, then
CP, then DP, then PP; ``megatron/core/parallel_state.py``, order ``tp-cp-ep-dp-pp``), so TP
groups are consecutive GPUs of one node whenever TP <= GPUs per node, and the DP/CP peers of
a GPU sit on the same local GPU index of other nodes (rail-aligned).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.errors import PlanError
from clusterforge.perf.flops import Recompute, kv_heads

__all__ = [
    "GroupKind",
    "ParallelPlan",
    "Precision",
    "num_micro_batches",
    "rank_groups",
    "split_layers",
    "validate_plan",
]

Precision = Literal["bf16", "fp16", "fp8"]
GroupKind = Literal["tp", "cp", "dp", "dpcp", "ep", "pp"]


@dataclass(frozen=True)
class ParallelPlan:
    """One way to run a training step on ``num_gpus`` GPUs (degrees multiply to it)."""

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

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    def with_(self, **changes: object) -> ParallelPlan:
        """A copy with some fields changed (plans are frozen)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def num_micro_batches(plan: ParallelPlan) -> int:
    """Micro-batches per pipeline per step: ``global / (micro x DP)``."""
    return plan.global_batch // (plan.micro_batch * plan.dp)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PlanError(message)


def validate_plan(arch: ModelArch, plan: ParallelPlan, num_gpus: int) -> tuple[int, ...]:
    """Check a plan against the model and the GPU count; return layers per pipeline stage."""
    degrees = {"tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "cp": plan.cp, "ep": plan.ep}
    for name, value in {**degrees, "vpp": plan.vpp, "micro_batch": plan.micro_batch}.items():
        _require(value >= 1, f"{name} = {value}: must be at least 1")
    _require(
        plan.num_gpus == num_gpus,
        f"TP x PP x CP x DP = {plan.tp} x {plan.pp} x {plan.cp} x {plan.dp} = {plan.num_gpus} "
        f"but the cluster has {num_gpus} GPUs; choose degrees whose product is {num_gpus}",
    )
    _check_model_split(arch, plan)
    _check_batch(plan)
    _require(plan.zero_stage in (0, 1, 2, 3), f"zero_stage = {plan.zero_stage}: use 0, 1, 2 or 3")
    return split_layers(arch.num_layers, plan.pp, plan.vpp, plan.pipeline_layers)


def _check_model_split(arch: ModelArch, plan: ParallelPlan) -> None:
    _require(
        arch.num_heads % plan.tp == 0,
        f"tp = {plan.tp} does not divide the {arch.num_heads} attention heads of "
        f"{arch.id}; use a TP degree that divides {arch.num_heads}",
    )
    kv = kv_heads(arch)
    _require(
        kv % plan.tp == 0 or plan.tp % kv == 0,
        f"tp = {plan.tp} and the {kv} KV heads of {arch.id}: one must divide the other "
        "(KV heads are split or replicated across TP ranks)",
    )
    _require(
        plan.seq_length % (2 * plan.cp) == 0 or plan.cp == 1,
        f"cp = {plan.cp}: the sequence {plan.seq_length} must split into 2 x CP chunks "
        "(load-balanced causal context parallelism)",
    )
    if plan.ep > 1:
        _require(
            arch.num_experts > 1 and arch.num_experts % plan.ep == 0,
            f"ep = {plan.ep} needs a MoE model whose experts ({arch.num_experts}) it divides",
        )
        _require(
            (plan.dp * plan.cp) % plan.ep == 0,
            f"ep = {plan.ep} must divide DP x CP = {plan.dp * plan.cp} (experts are "
            "sharded across data-parallel ranks)",
        )


def _check_batch(plan: ParallelPlan) -> None:
    per_step = plan.micro_batch * plan.dp
    _require(
        plan.global_batch % per_step == 0,
        f"global_batch = {plan.global_batch} is not a multiple of micro_batch x DP = "
        f"{plan.micro_batch} x {plan.dp}; use "
        f"{max(1, round(plan.global_batch / per_step)) * per_step}",
    )
    if plan.vpp > 1:
        _require(plan.pp > 1, f"vpp = {plan.vpp} (interleaved schedule) needs pp > 1")
        m = num_micro_batches(plan)
        _require(
            m % plan.pp == 0,
            f"interleaved schedule: {m} micro-batches per pipeline must be a multiple of "
            f"pp = {plan.pp} (Megatron-LM); change global_batch, micro_batch or set vpp = 1",
        )


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


def _rank_grid(plan: ParallelPlan) -> np.ndarray:
    """Global ranks as an array indexed [pp, dp, cp, tp] (Megatron order, TP fastest)."""
    return np.arange(plan.num_gpus).reshape(plan.pp, plan.dp, plan.cp, plan.tp)


def rank_groups(plan: ParallelPlan, kind: GroupKind, stage: int = 0) -> np.ndarray:
    """Concurrent communication groups of one kind in pipeline stage ``stage``.

    Returns ``(num_groups, group_size)`` global ranks; for ``"pp"`` the pairs
    (stage, stage + 1). Only one stage is returned: the groups that run at the same time and
    contend for the same links (the other stages repeat the pattern on other nodes).
    """
    grid = _rank_grid(plan)
    if kind == "pp":
        nxt = min(stage + 1, plan.pp - 1)
        return np.stack([grid[stage].ravel(), grid[nxt].ravel()], axis=1)
    stage_grid = grid[stage]  # [dp, cp, tp]
    if kind == "tp":
        return stage_grid.reshape(-1, plan.tp)
    if kind == "cp":
        return stage_grid.transpose(0, 2, 1).reshape(-1, plan.cp)
    if kind == "dp":
        return stage_grid.transpose(1, 2, 0).reshape(-1, plan.dp)
    if kind == "dpcp":
        return stage_grid.transpose(2, 0, 1).reshape(plan.tp, plan.dp * plan.cp)
    # EP: consecutive blocks of ep ranks inside the flattened (dp, cp) dimension.
    flat = stage_grid.reshape(plan.dp * plan.cp, plan.tp).T  # [tp, dp*cp]
    return flat.reshape(plan.tp * (plan.dp * plan.cp // plan.ep), plan.ep)
