"""Named-tensor rematerialisation: JAX's ``save_only_these_names`` checkpoint policies.

MaxText tags a decoder layer's tensors with ``jax.ad_checkpoint.checkpoint_name`` and wraps
the layer in ``nn.remat`` with a policy that keeps only some names
(``MaxText/layers/models.py``, ``remat_policy``, AI-Hypercomputer/maxtext at 8e55ab1,
2024-12-09): ``query_proj``, ``key_proj``, ``value_proj`` (after the rotary embedding,
``layers/attentions.py``), ``context`` (the attention kernel's output), ``out_proj``,
``mlpwi`` (the MLP input GEMMs, ``mlpwi_0``/``mlpwi_1`` when gated) and ``mlpwo``
(``layers/linears.py``); the layer's input (``decoder_layer_input``) is always kept, as
the scan's carry. Everything else the backward needs is recomputed from the saved tensors
in the backward, and what it does not need is dead code (XLA removes it):

* a Q, K or V GEMM whose output is not saved (the attention backward reads Q, K, V);
* the attention forward when ``context`` is not saved (its backward and the output
  projection's weight gradient read the output and its log-sum-exp; with
  ``attention=cudnn_flash_te`` Transformer Engine's JAX fused attention tags its output,
  softmax statistics and RNG state ``context`` itself, ``_fused_attn_fwd_rule`` in
  ``transformer_engine/jax/attention.py``, NVIDIA/TransformerEngine at 1975ace, 2024-12-14);
* the output projection when ``out_proj`` is not saved (the residual sum it feeds is the
  second norm's input);
* the MLP input GEMMs when ``mlpwi`` is not saved (the activation's backward reads them);
* never the MLP output GEMM: only the residual add, whose gradient needs no operand, reads
  its output, so saving ``mlpwo`` costs memory and saves no FLOPs;
* the norms and the activation, never named (element-wise, fused by XLA).
"""

from __future__ import annotations

from collections.abc import Collection

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, kv_dim, layer_forward_flops, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, gemm_time_s
from clusterforge.perf.stack import Stack

__all__ = [
    "named_recompute_flops",
    "named_recompute_s",
    "named_saved_bytes",
    "saves_named_tensors",
]


def saves_named_tensors(plan: ParallelPlan, stack: Stack) -> bool:
    """True when ``recompute = "selective"`` runs the stack's named-tensor policy."""
    return plan.recompute == "selective" and stack.selective_recompute == "saved_names"


def _recomputed_gemms(arch: ModelArch, t: int, saved: Collection[str]) -> list[tuple[float, float]]:
    """(output columns, inner dimension) per token of the weight GEMMs the policy reruns on
    one GPU (column-parallel outputs split over ``t``-way TP), in the order of the module
    docstring; the MLP output GEMM never (its output is dead in the backward)."""
    h, q, kv = arch.hidden_size, q_dim(arch), kv_dim(arch)
    widths = {"query_proj": q, "key_proj": kv, "value_proj": kv}
    gemms: list[tuple[float, float]] = [
        (width / t, float(h)) for name, width in widths.items() if name not in saved
    ]
    if "out_proj" not in saved:
        gemms.append((float(h), q / t))
    if "mlpwi" not in saved and arch.num_experts == 1:
        gemms.append(((2 if arch.gated_mlp else 1) * ffn_size(arch) / t, float(h)))
    return gemms


def named_recompute_s(
    arch: ModelArch,
    plan: ParallelPlan,
    perf: GpuPerf,
    stack: Stack,
    attention_forward_s: float,
    elementwise_s: float,
) -> float:
    """Seconds of one layer's backward recomputation under the policy: the GEMMs, the
    attention forward and the element-wise passes that rebuild what the backward reads and
    ``stack.remat_saved`` does not keep (see the module docstring)."""
    saved, tokens = set(stack.remat_saved), tokens_per_gpu(plan)
    gemms = _recomputed_gemms(arch, plan.layout.tp, saved)
    recompute = elementwise_s + sum(gemm_time_s(tokens, n, k, perf) for n, k in gemms)
    if "context" not in saved:
        recompute += attention_forward_s
    return recompute


def named_recompute_flops(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float | None:
    """Forward FLOPs per trained token that the policy re-executes (all layers, no TP split):
    the rerun GEMMs and, unless ``context`` is kept, the attention core (HFU numerator,
    :func:`~clusterforge.perf.flops.hardware_flops_per_step`). None when the plan does not
    run a named-tensor policy."""
    if not saves_named_tensors(plan, stack):
        return None
    saved = set(stack.remat_saved)
    layer = sum((2.0 * n * k for n, k in _recomputed_gemms(arch, 1, saved)), 0.0)
    if "context" not in saved:
        layer += layer_forward_flops(arch, plan.seq_length).attn_core
    return arch.num_layers * layer


def named_saved_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """Kept bytes of one layer and micro-batch on one GPU under the policy (BF16): the
    layer's input and each saved tensor. Column-parallel outputs (Q, K, V, the attention
    output, the MLP input GEMMs) split over TP; the layer input and the projections'
    outputs (after their reduction) only with sequence parallelism."""
    t, h = plan.layout.tp, arch.hidden_size
    replicated = t if plan.sequence_parallel else 1
    up = (2 if arch.gated_mlp else 1) * ffn_size(arch) if arch.num_experts == 1 else 0.0
    widths = {
        "query_proj": q_dim(arch) / t,
        "key_proj": kv_dim(arch) / t,
        "value_proj": kv_dim(arch) / t,
        "context": q_dim(arch) / t,
        "out_proj": h / replicated,
        "mlpwi": up / t,
        "mlpwo": h / replicated,
    }
    saved = h / replicated + sum(widths.get(name, 0.0) for name in set(stack.remat_saved))
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    return BF16_BYTES * tokens * saved
