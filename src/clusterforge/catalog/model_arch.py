"""Transformer architectures of the model catalog (``data/models.toml``) and their
pre-training learning-rate schedules."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_LR_SCHEDULE", "LrSchedule", "ModelArch"]


class LrSchedule(BaseModel):
    """A pre-training learning-rate schedule: linear warm-up from 0, then decay to a floor.

    The warm-up is counted in optimizer steps, the unit papers give it in (or convert to);
    the decay spans the rest of the run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    peak_lr: float = Field(gt=0, le=1, description="Learning rate at the end of warm-up")
    min_lr: float = Field(ge=0, le=1, description="Learning rate the decay ends at")
    warmup_steps: int = Field(ge=0, le=10**7, description="Optimizer steps of linear warm-up")
    decay_style: Literal["cosine", "linear", "constant"] = Field(
        "cosine", description="Shape of the decay from peak_lr to min_lr"
    )
    source: str = "user-provided"


DEFAULT_LR_SCHEDULE = LrSchedule(
    peak_lr=3e-4,
    min_lr=3e-5,
    warmup_steps=2000,
    decay_style="cosine",
    source="[U] none published for this model: the Llama 2 recipe for its 7B model "
    "(Touvron et al. 2023, 'Llama 2', §2.2 and Table 1: 3e-4 peak, 2000 warm-up steps, "
    "cosine to 10 % of the peak)",
)


class ModelArch(BaseModel):
    """A transformer architecture (dense or MoE). Published presets live in data/models.toml.

    The defaults describe a Llama-style decoder (RMSNorm, no linear biases, RoPE with the
    RoFormer base of 10,000): what the performance model's parameter count assumes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = "custom"
    name: str = "custom model"
    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int | None = Field(None, description="GQA key/value heads; None = num_heads")
    head_dim: int | None = Field(
        None,
        gt=0,
        description="Width of one attention head; None = hidden_size / num_heads (models "
        "such as Qwen3 and gpt-oss set it apart, so Q is num_heads x head_dim wide)",
    )
    ffn_hidden_size: int | None = Field(None, description="None = 4 x hidden (non-gated)")
    gated_mlp: bool = Field(
        False,
        description="SwiGLU MLP (SiLU-gated, three matrices); False = GeLU MLP (two matrices)",
    )
    vocab_size: int = Field(gt=0)
    seq_length: int = Field(2048, gt=0)
    num_experts: int = Field(1, ge=1, description="MoE experts per MoE layer (1 = dense)")
    top_k: int = Field(1, ge=1, description="Experts each token is routed to")
    sliding_window: int | None = Field(
        None,
        gt=0,
        description="Keys each query attends to in the sliding-window layers (None = none)",
    )
    sliding_window_layers: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the layers that attend over sliding_window keys (gpt-oss: 0.5, "
        "every other layer); the others attend over the whole causal prefix",
    )
    glu_clamp: float | None = Field(
        None,
        gt=0.0,
        description="Limit the gated MLP clamps its two input halves to (gpt-oss: 7.0, its "
        "config's swiglu_limit); None = no clamp",
    )
    tied_embeddings: bool = Field(
        False, description="The output layer reuses the input embedding matrix"
    )
    parallel_block: bool = Field(
        False,
        description="Attention and MLP read one norm's output in parallel (GPT-J, PaLM)",
    )
    position_embedding: Literal["rope", "learned", "alibi"] = Field(
        "rope", description="Rotary (RoPE), learned absolute, or ALiBi attention biases"
    )
    rotary_base: int = Field(
        10_000, gt=0, description="RoPE base frequency theta (RoFormer's 10,000; Llama 3 500,000)"
    )
    rotary_scaling: Literal["none", "yarn"] = Field(
        "none",
        description="Rotary frequency scaling: YaRN (Peng et al. 2023, arXiv 2309.00071) scales "
        "the cosines and sines by its attention factor (gpt-oss: rope_scaling yarn, factor 32)",
    )
    normalization: Literal["rmsnorm", "layernorm"] = Field(
        "rmsnorm", description="Norm before attention, before the MLP and after the last layer"
    )
    linear_bias: bool = Field(
        False, description="The attention and MLP linear layers have bias vectors (GPT-2/3)"
    )
    tokenizer: str | None = Field(
        None,
        description="Hugging Face Hub id of the model's tokenizer (None = none published: "
        "the training job gets a placeholder tokenizer of vocab_size tokens)",
    )
    lr_schedule: LrSchedule = Field(
        DEFAULT_LR_SCHEDULE, description="Pre-training learning-rate schedule"
    )
    source: str = "user-provided"
