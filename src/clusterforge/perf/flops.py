"""FLOPs of a decoder-only transformer: per layer, embedding/logits, model vs hardware FLOPs.

Conventions (declared everywhere a number is printed; MFU as defined by Chowdhery et al. 2022,
PaLM, arXiv 2204.02311, Appendix B, and Korthikanti et al. 2022, arXiv 2205.05198, §6):

* One multiply-add = 2 FLOPs. A GEMM ``(m x k) @ (k x n)`` costs ``2 m n k``.
* Backward = 2 x forward (gradients w.r.t. inputs and weights), so a training step costs
  3 forward passes of model FLOPs (Narayanan et al. 2021, §5.1, derivation of eq. (3)).
* Attention scores ``Q K^T`` and ``softmax(.) V`` are counted over the full ``s x s`` matrix
  (no causal halving), as Megatron-LM does: for multi-head attention with ``ffn = 4h`` the
  model FLOPs per step reduce to Korthikanti et al. 2022's
  ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))`` (their MFU convention).
* Hardware FLOPs add what activation recomputation re-executes: full recomputation adds one
  forward of every transformer layer (not of the logits), which gives Narayanan et al. 2021
  eq. (3) ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))`` (their "achieved teraFLOP/s", HFU-like);
  selective recomputation adds the forward of the attention core ``Q K^T``, ``softmax V``
  (Korthikanti et al. 2022, §5 and Table 4).
* Grouped-query attention, gated (SwiGLU) MLPs and top-k mixture-of-experts follow
  Megatron-LM's ``num_floating_point_operations`` generalisation: K/V projections scale with
  ``kv_heads/heads``, a gated MLP has three ``h x ffn`` matrices, an MoE token passes
  through ``top_k`` experts plus a router of ``h x experts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clusterforge.catalog import ModelArch

__all__ = [
    "LayerForwardFlops",
    "Recompute",
    "ffn_size",
    "hardware_flops_per_step",
    "head_dim",
    "kv_dim",
    "kv_heads",
    "layer_forward_flops",
    "logits_forward_flops_per_token",
    "model_flops_per_step",
    "model_flops_per_token",
    "num_params",
    "q_dim",
    "recompute_flops_per_token",
]

Recompute = Literal["none", "selective", "full"]


def ffn_size(arch: ModelArch) -> int:
    """FFN inner size: the preset's, or 4 x hidden (GPT convention, Vaswani et al. 2017)."""
    return arch.ffn_hidden_size or 4 * arch.hidden_size


def kv_heads(arch: ModelArch) -> int:
    """Key/value heads: the preset's (GQA, Ainslie et al. 2023) or all heads (MHA)."""
    return arch.num_kv_heads or arch.num_heads


def head_dim(arch: ModelArch) -> int:
    """Width of one attention head: the preset's (Qwen3, gpt-oss: ``head_dim`` in their
    config.json) or ``hidden / heads`` (Vaswani et al. 2017)."""
    return arch.head_dim or arch.hidden_size // arch.num_heads


def q_dim(arch: ModelArch) -> int:
    """Width of the queries and of the attention output: ``heads x head_dim``."""
    return arch.num_heads * head_dim(arch)


def kv_dim(arch: ModelArch) -> int:
    """Width of the keys (and of the values): ``kv_heads x head_dim``."""
    return kv_heads(arch) * head_dim(arch)


@dataclass(frozen=True)
class LayerForwardFlops:
    """Forward FLOPs of one transformer layer per token (sequence length ``s``)."""

    qkv_proj: float
    attn_core: float
    out_proj: float
    mlp: float
    router: float

    @property
    def total(self) -> float:
        return self.qkv_proj + self.attn_core + self.out_proj + self.mlp + self.router

    @property
    def gemm(self) -> float:
        """FLOPs in weight GEMMs (everything except the attention core)."""
        return self.total - self.attn_core


def layer_forward_flops(arch: ModelArch, seq_length: int) -> LayerForwardFlops:
    """Forward FLOPs per token of one layer (Narayanan et al. 2021 §5.1 term by term).

    QKV: ``2 h (q + 2 h_kv)``; attention core: ``Q K^T`` and ``P V`` each ``2 s q``;
    output projection ``2 q h`` (``q = heads x head_dim``, ``h`` unless the model sets its
    head width apart); MLP ``2 h f`` per matrix (2 or 3 matrices) times top-k;
    router ``2 h E`` (MoE only).
    """
    h, q, kv = arch.hidden_size, q_dim(arch), kv_dim(arch)
    mlp_matrices = 3 if arch.gated_mlp else 2
    moe = arch.num_experts > 1
    return LayerForwardFlops(
        qkv_proj=2.0 * h * (q + 2 * kv),
        attn_core=4.0 * seq_length * q,
        out_proj=2.0 * q * h,
        mlp=2.0 * mlp_matrices * h * ffn_size(arch) * (arch.top_k if moe else 1),
        router=2.0 * h * arch.num_experts if moe else 0.0,
    )


def logits_forward_flops_per_token(arch: ModelArch) -> float:
    """Output projection to the vocabulary: ``2 h V`` per token (Narayanan et al. 2021 eq. 3)."""
    return 2.0 * arch.hidden_size * arch.vocab_size


def model_flops_per_token(arch: ModelArch, seq_length: int) -> float:
    """Model FLOPs per trained token, forward + backward (3x forward), no recomputation."""
    layers = arch.num_layers * layer_forward_flops(arch, seq_length).total
    return 3.0 * (layers + logits_forward_flops_per_token(arch))


def model_flops_per_step(arch: ModelArch, global_batch: int, seq_length: int) -> float:
    """Model FLOPs of one optimizer step (Korthikanti et al. 2022 MFU numerator)."""
    return model_flops_per_token(arch, seq_length) * global_batch * seq_length


def recompute_flops_per_token(arch: ModelArch, seq_length: int, recompute: Recompute) -> float:
    """FLOPs re-executed per token by activation recomputation (forward only)."""
    layer = layer_forward_flops(arch, seq_length)
    if recompute == "full":
        return arch.num_layers * layer.total
    if recompute == "selective":
        return arch.num_layers * layer.attn_core
    return 0.0


def hardware_flops_per_step(
    arch: ModelArch,
    global_batch: int,
    seq_length: int,
    recompute: Recompute,
    recomputed_share: float = 1.0,
    *,
    recompute_per_token: float | None = None,
) -> float:
    """Hardware FLOPs of one step: model FLOPs + recomputation (HFU numerator).

    With ``recompute="full"`` and MHA/4h this is Narayanan et al. 2021 eq. (3);
    ``recomputed_share`` is the share of layers recomputed (block recomputation);
    ``recompute_per_token`` replaces the recomputed FLOPs per token where the stack's policy
    states them (:func:`~clusterforge.perf.remat.named_recompute_flops`).
    """
    if recompute_per_token is None:
        recompute_per_token = recompute_flops_per_token(arch, seq_length, recompute)
    per_token = recompute_per_token * recomputed_share
    extra = per_token * global_batch * seq_length
    return model_flops_per_step(arch, global_batch, seq_length) + extra


def num_params(arch: ModelArch) -> float:
    """Parameter count: layers (attention, MLP/experts, router, 2 norms) + embedding (+ head)."""
    h, q = arch.hidden_size, q_dim(arch)
    attention = h * (q + 2 * kv_dim(arch)) + q * h
    mlp = (3 if arch.gated_mlp else 2) * h * ffn_size(arch) * arch.num_experts
    router = h * arch.num_experts if arch.num_experts > 1 else 0
    per_layer = attention + mlp + router + 2 * h
    embeddings = arch.vocab_size * h * (1 if arch.tied_embeddings else 2)
    return float(arch.num_layers * per_layer + embeddings + h)
