"""The layout of one training job: TP/PP/CP/EP/DP degrees, the rank grid and its groups.

:class:`JobLayout` is the one owner of these facts.  ``plan()`` makes it once from the spec
and stores it on the design (``design.job``); the performance model, the simulator and the
generators read it and never derive a degree themselves.  Every structural check lives here
and raises :class:`PlanError` naming the field, the value and the fix (the spec layer adds
its file name and field path).

Ranks follow Megatron-LM's default order (``megatron/core/parallel_state.py``, order
``tp-cp-ep-dp-pp``): tensor-parallel ranks are adjacent, then context parallel, then data
parallel, then pipeline parallel::

    rank = tp + TP·(cp + CP·(dp + DP·pp))

so a TP group is consecutive GPUs of one node whenever TP <= GPUs per node, and the DP/CP
peers of a GPU sit on the same local GPU index of other nodes (rail-aligned).  Expert
parallel groups are consecutive blocks of EP ranks inside the flattened (DP, CP) dimension.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, assert_never, get_args

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.errors import PlanError

__all__ = ["GROUP_KINDS", "GroupKind", "JobLayout", "require"]

# The communicator groups of a job: one per parallel dimension, plus DP x CP (the ZeRO/FSDP
# shard group), EP (blocks of DP x CP) and the expert-data-parallel groups (the ranks at the
# same position of every EP block, which hold the same experts; Megatron-LM
# ``parallel_state.get_expert_data_parallel_group``).
GroupKind = Literal["tp", "cp", "dp", "dpcp", "ep", "edp", "pp"]
GROUP_KINDS: tuple[GroupKind, ...] = get_args(GroupKind)


def require(condition: bool, message: str) -> None:
    """Raise :class:`PlanError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise PlanError(message)


@dataclass(frozen=True)
class JobLayout:
    """The parallel degrees of a job; ``num_gpus = TP x PP x CP x DP`` (EP divides DP x CP).

    ``vpp`` is the pipeline schedule's model chunks per stage (Megatron-LM's virtual pipeline
    stages, the interleaved 1F1B schedule of Narayanan et al. 2021 §2.2); it lives with PP
    because it only exists with PP: more than one chunk needs more than one stage.

    Build it with :meth:`for_gpus` (derives DP from a GPU count, the only place DP is ever
    derived) or directly with every degree (validated on construction).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1

    def __post_init__(self) -> None:
        for name, value in {**self.degrees(), "vpp": self.vpp}.items():
            require(isinstance(value, int) and value >= 1, f"{name} = {value}: must be at least 1")
        require(
            self.vpp == 1 or self.pp > 1, f"vpp = {self.vpp} (interleaved schedule) needs pp > 1"
        )
        require(
            (self.dp * self.cp) % self.ep == 0,
            f"expert_parallel = {self.ep} must divide DP x CP = {self.dp * self.cp} (experts are "
            "sharded across data-parallel ranks)",
        )

    @classmethod
    def for_gpus(
        cls,
        num_gpus: int,
        *,
        tp: int = 1,
        pp: int = 1,
        cp: int = 1,
        ep: int = 1,
        dp: int | None = None,
        vpp: int = 1,
    ) -> JobLayout:
        """The layout of ``num_gpus`` GPUs: DP = GPUs / (TP x PP x CP), or ``dp`` checked."""
        require(num_gpus >= 1, f"num_gpus = {num_gpus}: use at least 1")
        model_parallel = tp * pp * cp
        require(
            model_parallel >= 1 and num_gpus % model_parallel == 0,
            f"tensor_parallel x pipeline_parallel x context_parallel = {model_parallel} does "
            f"not divide num_gpus {num_gpus}; pick degrees whose product divides the GPU count",
        )
        derived = num_gpus // model_parallel
        if dp is not None and dp != derived:
            raise PlanError(
                f"data_parallel = {dp}: TP x PP x CP x DP = {tp} x {pp} x {cp} x {dp} = "
                f"{model_parallel * dp} but the job has {num_gpus} GPUs; set data_parallel = "
                f"{derived} or leave it out"
            )
        return cls(tp=tp, pp=pp, dp=derived, cp=cp, ep=ep, vpp=vpp)

    def on_gpus(self, num_gpus: int) -> JobLayout:
        """The same model-parallel degrees and schedule on ``num_gpus`` GPUs (DP re-derived)."""
        return JobLayout.for_gpus(
            num_gpus, tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep, vpp=self.vpp
        )

    def check_gpus(self, num_gpus: int) -> None:
        """Check that the layout fills exactly ``num_gpus`` GPUs (the errors of :meth:`for_gpus`)."""
        JobLayout.for_gpus(
            num_gpus, tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep, dp=self.dp, vpp=self.vpp
        )

    def degrees(self) -> dict[str, int]:
        """The degrees whose product is the GPU count, by short name (tp, pp, dp, cp, ep)."""
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "cp": self.cp, "ep": self.ep}

    @property
    def num_gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def model_parallel(self) -> int:
        """GPUs holding one replica of the model: TP x PP x CP."""
        return self.tp * self.pp * self.cp

    # --- batch -------------------------------------------------------------------------

    def num_micro_batches(self, global_batch: int, micro_batch: int) -> int:
        """Micro-batches per pipeline per step: ``global / (micro x DP)``."""
        return global_batch // (micro_batch * self.dp)

    def check_batch(self, global_batch: int, micro_batch: int) -> int:
        """Check that the global batch splits evenly; return micro-batches per pipeline."""
        require(micro_batch >= 1, f"micro_batch = {micro_batch}: must be at least 1")
        per_step = micro_batch * self.dp
        # 0 is a multiple of any per-step count; a positive batch below it leaves a remainder
        require(
            global_batch > 0,
            f"global_batch = {global_batch}: use at least micro_batch x DP = {micro_batch} x "
            f"{self.dp} = {per_step} (one micro-batch per data-parallel rank)",
        )
        if global_batch % per_step:
            nearest = max(1, round(global_batch / per_step)) * per_step
            raise PlanError(
                f"global_batch = {global_batch} is not a multiple of micro_batch x DP = "
                f"{micro_batch} x {self.dp}; use {nearest}",
                fix={"workload.global_batch": nearest},
            )
        m = self.num_micro_batches(global_batch, micro_batch)
        if self.vpp > 1:
            require(
                m % self.pp == 0,
                f"interleaved schedule: {m} micro-batches per pipeline must be a multiple of "
                f"pp = {self.pp} (Megatron-LM); change global_batch, micro_batch or set vpp = 1",
            )
        return m

    # --- model -------------------------------------------------------------------------

    def check_model(self, arch: ModelArch, seq_length: int) -> None:
        """Check that the model splits: heads over TP, sequence over CP, experts over EP."""
        require(
            arch.num_heads % self.tp == 0,
            f"tp = {self.tp} does not divide the {arch.num_heads} attention heads of "
            f"{arch.id}; use a TP degree that divides {arch.num_heads}",
        )
        kv = arch.num_kv_heads or arch.num_heads
        require(
            kv % self.tp == 0 or self.tp % kv == 0,
            f"tp = {self.tp} and the {kv} KV heads of {arch.id}: one must divide the other "
            "(KV heads are split or replicated across TP ranks)",
        )
        require(
            self.cp == 1 or seq_length % (2 * self.cp) == 0,
            f"cp = {self.cp}: the sequence {seq_length} must split into 2 x CP chunks "
            "(load-balanced causal context parallelism)",
        )
        require(
            arch.top_k <= arch.num_experts,
            f"top_k = {arch.top_k} is more than the {arch.num_experts} experts of {arch.id}; "
            "each token is routed to top_k distinct experts",
        )
        require(
            arch.num_kv_heads is None or arch.num_heads % arch.num_kv_heads == 0,
            f"num_kv_heads = {arch.num_kv_heads} must divide the {arch.num_heads} heads of "
            f"{arch.id} (grouped-query attention shares each KV head among equal groups)",
        )
        if self.ep > 1:
            require(
                arch.num_experts > 1 and arch.num_experts % self.ep == 0,
                f"ep = {self.ep} needs a MoE model whose experts ({arch.num_experts}) it divides",
            )
        require(
            arch.num_layers >= self.pp,
            f"pp = {self.pp} is more than the {arch.num_layers} layers; use pp <= "
            f"{arch.num_layers}",
        )

    def split_layers(
        self, num_layers: int, explicit: Sequence[int] | None = None
    ) -> tuple[int, ...]:
        """Layers per pipeline stage: ``explicit`` (checked) or as even as possible.

        Explicit: one count per stage, summing to the model's layers, at least ``vpp`` each.
        Automatic: when the layers do not divide, the stages that get one layer fewer are the
        first and the last (they also carry the embedding and the loss), the Llama 3 405B
        layout (126 layers on 16 stages: 7 + 14 x 8 + 7; Llama Team 2024, §3.3.2). With
        interleaving (``vpp`` chunks per stage) a stage's chunks may differ by a layer, as in
        Llama 3's interleaved schedule; each chunk needs at least one layer, except where
        the embedding and the loss take a chunk each (:meth:`accounts_embedding_and_loss`).
        """
        if explicit is not None:
            stages = tuple(int(n) for n in explicit)
            shown = f"{list(stages[:8])}{'...' if len(stages) > 8 else ''}"
            require(
                len(stages) == self.pp and sum(stages) == num_layers and min(stages) >= self.vpp,
                f"pipeline_layers = {shown}: need pp = {self.pp} counts of at least {self.vpp} "
                f"summing to {num_layers} layers",
            )
            return stages
        require(
            num_layers >= self.pp,
            f"pp = {self.pp} is more than the {num_layers} layers; use pp <= {num_layers}",
        )
        stages = _even_split(num_layers, self.pp)
        if self.accounts_embedding_and_loss(num_layers):
            return stages  # the slot split, first and last stage one layer fewer
        require(
            min(stages) >= self.vpp,
            f"vpp = {self.vpp} needs at least {self.vpp} layers on every pipeline stage "
            f"{list(stages)}; choose a smaller vpp",
        )
        return stages

    def accounts_embedding_and_loss(self, num_layers: int) -> bool:
        """Whether the interleaved split needs the embedding and the loss counted as
        pipeline slots: some chunk holds no transformer layer, and Megatron-Core's
        ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``
        make that layout.

        Megatron-Core counts ``num_layers + 2`` slots and asserts that they divide by PP and
        that each stage's slots divide by VP (``TransformerConfig.__post_init__``,
        megatron/core/transformer/transformer_config.py, NVIDIA/Megatron-LM@b0cc2706, the
        commit Megatron-Bridge v0.3.0 pins); ``get_transformer_layer_offset``
        (transformer_layer.py, same commit) then gives the first chunk of stage 0 the
        embedding alone and, by the same count, the last chunk of the last stage the loss
        alone when a chunk is one slot (Llama 3.1 405B: 128 slots on PP 16, VP 8). With
        two or more slots a chunk, every chunk keeps a layer and the plain split applies.
        """
        return self.vpp > 1 and num_layers + 2 == self.pp * self.vpp

    # --- ranks and groups ----------------------------------------------------------------

    def grid(self) -> np.ndarray:
        """Job ranks as an array indexed ``[pp, dp, cp, tp]`` (Megatron order, TP fastest)."""
        return np.arange(self.num_gpus).reshape(self.pp, self.dp, self.cp, self.tp)

    def groups(self, kind: GroupKind, *, stage: int | None = None) -> np.ndarray:
        """Every ``kind`` group, shape ``(num_groups, group_size)``, as job ranks.

        ``stage`` restricts TP/CP/DP/DPCP/EP groups to one pipeline stage (the groups that
        run at the same time and contend for the same links); ``pp`` groups always span
        every stage (one group per (dp, cp, tp) position).
        """
        grid = self.grid()
        if kind == "pp":
            return np.moveaxis(grid, 0, -1).reshape(-1, self.pp)
        stages = grid if stage is None else grid[stage : stage + 1]  # [s, dp, cp, tp]
        match kind:
            case "tp":
                return stages.reshape(-1, self.tp)
            case "cp":
                return stages.transpose(0, 1, 3, 2).reshape(-1, self.cp)
            case "dp":
                return stages.transpose(0, 2, 3, 1).reshape(-1, self.dp)
            case "dpcp":
                return stages.transpose(0, 3, 1, 2).reshape(-1, self.dp * self.cp)
            case "ep":
                flat = stages.transpose(0, 3, 1, 2).reshape(-1, self.dp * self.cp)
                return flat.reshape(-1, self.ep)
            case "edp":
                flat = stages.transpose(0, 3, 1, 2).reshape(-1, self.dp * self.cp)
                blocks = flat.reshape(flat.shape[0], -1, self.ep)  # [row, ep group, position]
                return blocks.transpose(0, 2, 1).reshape(-1, blocks.shape[1])
            case _:
                assert_never(kind)

    def pipeline_pairs(self, stage: int) -> np.ndarray:
        """(rank on ``stage``, rank on the next stage) pairs: the point-to-point sends of one
        pipeline boundary, shape ``(dp x cp x tp, 2)``; the last stage pairs with itself."""
        grid = self.grid()
        nxt = min(stage + 1, self.pp - 1)
        return np.stack([grid[stage].ravel(), grid[nxt].ravel()], axis=1)


def _even_split(num_layers: int, pp: int) -> tuple[int, ...]:
    """``num_layers`` over ``pp`` stages, one layer fewer on the ends first (first, last,
    second, second-to-last, ...) when they do not divide."""
    base, extra = divmod(num_layers, pp)
    ends_first = [i // 2 if i % 2 == 0 else pp - 1 - i // 2 for i in range(pp)]
    counts = [base + 1] * pp
    for stage in ends_first[: pp - extra]:
        counts[stage] = base
    return tuple(counts)
