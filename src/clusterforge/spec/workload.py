"""The training job a cluster is planned for: model, tokens and parallel layout."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from clusterforge.catalog import ModelArch
from clusterforge.job import JobLayout
from clusterforge.spec.base import (
    MAX_GPUS,
    MAX_LAYERS,
    MODEL_LIMITS,
    Section,
)
from clusterforge.spec.optimizer_state import OptimizerState, optimizer_state_error

__all__ = ["MEGATRON_CORE_STACKS", "OptimizerState", "WorkloadSpec"]

# The stacks that run Megatron-Core's training loop, and so its EP all-to-all overlap.
MEGATRON_CORE_STACKS = ("megatron-core", "nemo", "megatron-bridge")


class WorkloadSpec(Section):
    """The training job the cluster is for, and the parallelism the user intends."""

    model: str | ModelArch = Field(
        "llama3-70b", description="Catalog model preset id, or explicit dimensions"
    )
    params_b: float | None = Field(
        None, gt=0, le=100_000, description="Parameters, billions (None = from the model)"
    )
    tokens_b: float = Field(
        2000.0, gt=0, le=1e6, description="Training tokens, billions (at most 10^15 tokens)"
    )
    tensor_parallel: int = Field(8, ge=1, le=1024, description="TP degree")
    pipeline_parallel: int = Field(1, ge=1, le=1024, description="PP degree")
    context_parallel: int = Field(1, ge=1, le=1024, description="CP (sequence/context) degree")
    expert_parallel: int = Field(1, ge=1, le=1024, description="EP degree (MoE)")
    data_parallel: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="DP degree (None = GPUs / (TP x PP x CP))"
    )
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism with TP")
    virtual_pipeline_stages: int = Field(
        1, ge=1, le=128, description="Interleaved 1F1B chunks per stage"
    )
    expert_parallel_overlap: bool = Field(
        False,
        description="Megatron-Core's EP all-to-all overlap (overlap_moe_expert_parallel_comm, "
        "Megatron-LM --overlap-moe-expert-parallel-comm): one micro-batch's dispatch and "
        "combine run behind another's compute. MoE models on stacks megatron-core, nemo, "
        "megatron-bridge; needs expert_parallel >= 2, recompute none or selective, and "
        "virtual_pipeline_stages >= 2 when pipeline_parallel > 1",
    )
    global_batch: int = Field(1024, ge=1, le=2**24, description="Sequences per optimizer step")
    micro_batch: int = Field(1, ge=1, le=65536, description="Sequences per micro-batch")
    seq_length: int | None = Field(
        None, gt=0, le=2**24, description="Tokens per sequence (None = model's)"
    )
    precision: Literal["bf16", "fp16", "fp8", "mxfp8", "nvfp4"] = Field(
        "bf16",
        description="Matmul precision; mxfp8 and nvfp4 are Transformer Engine's block-scaled "
        "recipes (Blackwell GPUs, stacks megatron-core, nemo, megatron-bridge)",
    )
    recompute: Literal["none", "selective", "full"] = Field(
        "selective", description="Activation recomputation"
    )
    zero_stage: Literal[0, 1, 2, 3] = Field(1, description="ZeRO stage / FSDP (3 = full shard)")
    optimizer_offload: bool = Field(
        False,
        description="DeepSpeed ZeRO-Offload: FP32 master weights, Adam moments and the "
        "optimizer step on the host CPU (offload_optimizer device cpu; ZeRO stage 1-3, "
        "stack deepspeed)",
    )
    optimizer_state: OptimizerState = Field(
        "fp32",
        description="How the optimizer stores Adam's state: fp32 = the stack's FP32 moments "
        "and master weights (12 B/param with BF16 weights); fp32-remainders = the low 16 "
        "bits of each FP32 master beside FP32 moments, 10 B/param (Apex DistributedFusedAdam "
        "store_param_remainders under NeMo 1.0 with BF16 weights, Transformer Engine FusedAdam "
        "in Megatron-Core's precision-aware optimizer; stacks megatron-core, nemo, "
        "megatron-bridge; not fp16); bf16 = Apex's BF16 moments without masters, 4 B/param "
        "(6 with NeMo's FP8 parameters; stack nemo, optim.dtype bf16)",
    )
    pipeline_layers: list[Annotated[int, Field(ge=1, le=MAX_LAYERS)]] | None = Field(
        None,
        max_length=1024,
        description="Explicit layers per pipeline stage (None = automatic split)",
    )
    stack: Literal[
        "megatron-2021",
        "megatron-core",
        "nemo",
        "megatron-bridge",
        "deepspeed",
        "fsdp",
        "torchtitan",
        "maxtext",
        "automodel",
    ] = Field(
        "megatron-core",
        description="Training software stack: its documented kernels, overlaps, memory "
        "layout and FP8 recipe (see clusterforge.perf.stack)",
    )
    fsdp_shard_size: int | None = Field(
        None,
        ge=1,
        le=MAX_GPUS,
        description="ZeRO-3/FSDP: GPUs per shard group for hybrid sharding (HSDP); None = "
        "shard over all of DP x CP",
    )

    @field_validator("model")
    @classmethod
    def _model_in_range(cls, model: str | ModelArch) -> str | ModelArch:
        """A custom model's dimensions stay within :data:`MODEL_LIMITS`."""
        if isinstance(model, str):
            return model
        for name, limit in MODEL_LIMITS.items():
            value = getattr(model, name)
            if value is not None and value > limit:
                raise ValueError(f"{name} = {value} is more than {limit:,}; use 1 to {limit:,}")
        return model

    @model_validator(mode="after")
    def _offload_needs_deepspeed_zero(self) -> WorkloadSpec:
        """ZeRO-Offload is DeepSpeed's and exists only under ZeRO 1-3: DeepSpeed builds the
        offloading optimizer only when ``zero_enabled`` (``stage > 0``,
        deepspeed/runtime/config.py; ``_do_optimizer_sanity_check`` in engine.py,
        deepspeedai/DeepSpeed at edaa7221)."""
        if not self.optimizer_offload:
            return self
        if self.zero_stage == 0:
            raise ValueError(
                "optimizer_offload = true with zero_stage = 0: DeepSpeed offloads the optimizer "
                "only under ZeRO stage 1, 2 or 3; set zero_stage to 1, 2 or 3, or "
                "optimizer_offload to false"
            )
        if self.stack != "deepspeed":
            raise ValueError(
                f"optimizer_offload = true with stack = {self.stack!r}: the model prices "
                "DeepSpeed's ZeRO-Offload only; set stack to 'deepspeed', or "
                "optimizer_offload to false"
            )
        return self

    @model_validator(mode="after")
    def _overlap_needs_megatron_core(self) -> WorkloadSpec:
        """The EP overlap is Megatron-Core's (``overlap_moe_expert_parallel_comm``,
        :mod:`clusterforge.perf.ep_overlap_rules`); the plan's own rules are checked where a
        plan is predicted, so that a search or a command-line degree can still satisfy them."""
        if self.expert_parallel_overlap and self.stack not in MEGATRON_CORE_STACKS:
            raise ValueError(
                f"expert_parallel_overlap = true with stack = {self.stack!r}: the overlap is "
                "Megatron-Core's overlap_moe_expert_parallel_comm; set stack to "
                f"{', '.join(repr(s) for s in MEGATRON_CORE_STACKS)}, or "
                "expert_parallel_overlap to false"
            )
        return self

    @model_validator(mode="after")
    def _optimizer_state_priced(self) -> WorkloadSpec:
        """The optimizer state is one the stack runs with these weights
        (:func:`clusterforge.spec.optimizer_state.optimizer_state_error`)."""
        error = optimizer_state_error(self.optimizer_state, self.precision, self.stack)
        if error is not None:
            raise ValueError(error)
        return self

    def with_layout(self, layout: JobLayout) -> WorkloadSpec:
        """This workload run with ``layout``: every degree and the interleaving from it, the
        explicit ``pipeline_layers`` kept only while they still have one count per stage."""
        layers = self.pipeline_layers
        return self.model_copy(
            update={
                "tensor_parallel": layout.tp,
                "pipeline_parallel": layout.pp,
                "context_parallel": layout.cp,
                "expert_parallel": layout.ep,
                "data_parallel": layout.dp,
                "virtual_pipeline_stages": layout.vpp,
                "pipeline_layers": layers if layers and len(layers) == layout.pp else None,
            }
        )

    def data_parallel_at(self, num_gpus: int) -> WorkloadSpec:
        """This workload as pure data parallelism over ``num_gpus`` GPUs with one sequence per
        GPU and step: a layout that every whole number of GPUs admits."""
        layout = JobLayout.for_gpus(num_gpus)
        return self.with_layout(layout).model_copy(
            update={"global_batch": num_gpus, "micro_batch": 1}
        )
