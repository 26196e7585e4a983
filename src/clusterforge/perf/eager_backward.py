"""The element-wise work of one eager PyTorch layer's backward, counted op by op.

The model charges a layer's backward element-wise work as ``ELEMENTWISE_BACKWARD_RATIO``
times its forward (:mod:`clusterforge.perf.compute`). For the eager PyTorch block that an op
census has recorded (``benchmarks/eager_op_census.py``: LLM Foundry v0.3.0's ``MPTBlock`` run
forward and backward under a ``TorchDispatchMode``, every ATen op with its tensor sizes) the
backward is charged as the census counts it instead, per token in BF16:

* each LayerNorm's backward: the input gradient reads the output gradient and the input and
  writes the input gradient (6 B per element), then ``GammaBetaBackwardCUDAKernel`` reads the
  gradient and the input again (4 B): 10 B and 2 kernels per norm
  (``aten/src/ATen/native/cuda/layer_norm_kernel.cu``);
* each residual branch point sums two gradients (autograd's accumulation, an ``add``: 6 B,
  one kernel);
* the MLP activation's backward (``gelu_backward``) reads the gradient and the saved input
  and writes the input gradient: 6 B per FFN element, one kernel;
* with linear biases (``ModelArch.linear_bias``), each bias gradient is a ``sum`` over the
  tokens of the output gradient, one kernel reading 2 B per output column (``addmm``'s
  backward; the forward's bias add is the GEMM's epilogue);
* with LLM Foundry's Triton FlashAttention (``attention = "triton"``), the wrapper around the
  kernels (``flash_attn_triton.py`` ``_flash_attn_backward``) zeroes an FP32 ``dq_accum``
  (4 B per query element, the autotuner's ``init_to_zero('DQ')``), copies it into the BF16
  ``dq`` (4 + 2 B): 2 kernels;
* with either LLM Foundry wrapper (``triton``, or FlashAttention-2 through ``flash_attn_fn``'s
  unpadding, ``Stack.flash_unpad``), autograd concatenates the gradients of the
  ``qkv.split`` views of the fused ``Wqkv`` output (``SplitWithSizesBackward``, a
  ``torch.cat``: 2 + 2 B per Q, K and V element), one kernel (the unpadding's own scatters are
  :func:`~clusterforge.perf.attention.flash_unpad_passes`).

The eager Llama blocks (torchtitan's, fms-fsdp's) are counted by
:func:`~clusterforge.perf.eager_llama.llama_census_backward`;
other blocks (RMSNorm, gated MLP, rotary, parallel blocks, MoE, dropout) keep the ratio.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.eager_llama import llama_census_backward
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.stack_base import Stack

__all__ = ["census_backward"]

LAYERNORM_BACKWARD_BYTES = 10  # per element: dx (2 + 2 + 2), d(gamma), d(beta) (2 + 2)
LAYERNORM_BACKWARD_KERNELS = 2
RESIDUAL_GRAD_SUM_BYTES = 6  # add: read 2 + 2, write 2
ACTIVATION_BACKWARD_BYTES = 6  # gelu_backward: read 2 + 2, write 2
BIAS_GRAD_BYTES = 2  # sum over tokens: read each output-gradient element once
TRITON_DQ_BYTES = 10  # dq_accum.zero_() 4, dq.copy_(dq_accum) 4 + 2
QKV_CAT_BYTES = 4  # cat of the split views' gradients: read 2, write 2


def _census_covers(arch: ModelArch, stack: Stack) -> bool:
    """Whether the layer is the block the census recorded (eager, LayerNorm, plain MLP)."""
    return (
        not stack.fused_elementwise
        and not stack.dropout
        and arch.normalization == "layernorm"
        and not arch.gated_mlp
        and not arch.parallel_block
        and arch.num_experts <= 1
        and arch.position_embedding != "rope"
    )


def census_backward(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, int] | None:
    """(HBM bytes, kernels) of the element-wise ops of one layer's backward on one GPU, as
    the op census counts them; ``None`` where the census does not cover the layer."""
    if not _census_covers(arch, stack):
        return llama_census_backward(arch, plan, stack)
    h, f, t = arch.hidden_size, ffn_size(arch), plan.layout.tp
    q, kv = q_dim(arch), kv_dim(arch)
    replicated = 2 * (LAYERNORM_BACKWARD_BYTES + RESIDUAL_GRAD_SUM_BYTES) * h
    split = ACTIVATION_BACKWARD_BYTES * f
    kernels = 2 * (LAYERNORM_BACKWARD_KERNELS + 1) + 1
    if arch.linear_bias:
        replicated += BIAS_GRAD_BYTES * 2 * h  # the row-parallel biases (attention out, MLP down)
        split += BIAS_GRAD_BYTES * (q + 2 * kv + f)
        kernels += 4
    if stack.attention == "triton":
        split += TRITON_DQ_BYTES * q
        kernels += 2
    if stack.attention == "triton" or stack.flash_unpad:
        split += QKV_CAT_BYTES * (q + 2 * kv)
        kernels += 1
    sp = t if plan.sequence_parallel else 1
    return (replicated / sp + split / t) * tokens_per_gpu(plan), kernels
