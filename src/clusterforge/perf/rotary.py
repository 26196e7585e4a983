"""Megatron-Core's unfused rotary embedding, which a YaRN-scaled rotary runs.

Megatron-Core applies the rotary embedding to Q and K through ``apply_rotary_pos_emb``
(megatron/core/models/common/embeddings/rope_utils.py, NVIDIA/Megatron-LM tags core_v0.15.0
to core_v0.18.0). YaRN multiplies the cosines and sines by its attention factor
``0.1 ln(factor) + 1`` (``_yarn_get_concentration_factor``, 1.35 at gpt-oss's factor 32),
which Transformer Engine's fused kernel does not take: with ``mscale != 1`` the function
falls back to ``_apply_rotary_pos_emb_bshd`` ("mscale ... is not supported by TE's fused
RoPE. Using unfused implementation", core_v0.17.0 on; core_v0.15.0/0.16.0 reach the same
path because Megatron-Bridge's ``GPTModelProvider.provide`` turns ``apply_rope_fusion`` off
for any ``position_embedding_type`` other than "rope", ``validate_rope_fusion_compatibility``
in src/megatron/bridge/utils/fusions.py, tags v0.2.0 to v0.5.0, and gpt-oss's is "yarn").
The model's element-wise pass (:mod:`clusterforge.perf.compute`) already counts one fused
rotary (read and write Q and K, and twice that in the backward); this module adds what the
unfused ops move beyond it.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import kv_dim, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["UNFUSED_ROTARY_BYTES", "unfused_rotary_s"]

# ``_apply_rotary_pos_emb_bshd`` on one BF16 tensor t of E elements, bytes per element [D]
# by counting each op's reads and writes. Forward: ``t * cos_`` (2 + 2); ``_rotate_half``:
# ``-x2`` over half of t (1 + 1) and ``torch.cat((-x2, x1))`` (2 + 2); ``* sin_`` (2 + 2); the
# sum (4 + 2); ``torch.cat((t, t_pass))`` with an empty ``t_pass`` (2 + 2) = 24. Backward
# (autograd): the gradient times ``sin_`` (2 + 2) and times ``cos_`` (2 + 2), the negation's
# backward over half (1 + 1), ``chunk``'s backward joining the halves (2 + 2), the two
# gradients of t summed (4 + 2), and ``t[..., :rot_dim]``'s ``slice_backward`` writing zeros
# and copying the gradient in (2 + 2 + 2) = 26. The cosine and sine tables (sequence x head
# width, FP32, per call) are too small to count in bytes but not in kernels.
UNFUSED_ROTARY_BYTES = (24.0, 26.0)
# What the element-wise pass already charges for the rotary: a fused read and write (4) and
# twice that in the backward (``ELEMENTWISE_BACKWARD_RATIO``).
FUSED_ROTARY_BYTES = (4.0, 8.0)
# Kernels per tensor: forward the six ops above plus ``cos``, ``sin``, their scaling and
# casts (6 small); backward the six gradient ops.
UNFUSED_ROTARY_KERNELS = (12, 6)


def unfused_rotary_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds one layer's unfused YaRN rotary adds beyond the fused
    rotary of the element-wise pass, on one GPU for one micro-batch; zero unless the model
    scales its rotary with YaRN (``ModelArch.rotary_scaling``) and the stack runs
    Megatron-Core's rotary (``Stack.yarn_rotary_unfused``)."""
    if arch.position_embedding != "rope" or arch.rotary_scaling != "yarn":
        return 0.0, 0.0
    if not stack.yarn_rotary_unfused:
        return 0.0, 0.0
    elements = tokens_per_gpu(plan) * (q_dim(arch) + kv_dim(arch)) / plan.layout.tp
    times = []
    for unfused, fused, kernels in zip(
        UNFUSED_ROTARY_BYTES, FUSED_ROTARY_BYTES, UNFUSED_ROTARY_KERNELS, strict=True
    ):
        # Q and K are two tensors: twice the kernels; the fused kernel's one is in compute.py
        times.append(memory_time_s((unfused - fused) * elements, perf, num_kernels=2 * kernels))
    return times[0], times[1]
