"""The output layer and its loss on the last pipeline stage: the logits GEMM (vocab-parallel
over TP) and the cross-entropy, a chain of memory-bound passes over the logits whose bytes
depend on the kernel the stack runs (``Stack.cross_entropy``), plus the training metrics some
trainers compute on the same logits (:mod:`clusterforge.perf.train_metrics`).
"""

from __future__ import annotations

from typing import assert_never

from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.train_metrics import train_metrics_s

__all__ = ["logits_times"]

# Megatron's vocab-parallel cross-entropy in FP32, unfused, bytes per logit over forward and
# backward: cast BF16->FP32 (2 + 4), max (4), subtract max (4 + 4), exp (4 + 4), sum (4),
# normalise (4 + 4); backward: softmax - one-hot, scaled (4 + 4), cast to BF16 (4 + 2). [D]
# by counting passes of megatron/core/tensor_parallel/cross_entropy.py.
CROSS_ENTROPY_BYTES_PER_LOGIT = 52.0
# Fused cross-entropy (Transformer Engine's Triton kernels, ``cross_entropy_fusion_impl =
# "te"``; ``transformer_engine/common/triton/cross_entropy.py``): an online-softmax pass reads
# the BF16 logits (2), a second pass reads them again and writes the gradient in place (2 + 2)
# in the forward; the backward scales the gradient in place (2 + 2). [D] by counting the
# kernels' loads and stores.
FUSED_CROSS_ENTROPY_BYTES = (6.0, 4.0)
# The fused CUDA softmax cross-entropy of apex / flash-attention ``csrc/xentropy``
# (``xentropy_kernel.cu``) on BF16 logits: the forward kernel reads each row twice (max and
# sum, then the sum of exponentials) and writes one loss and one log-sum-exp per row (2 + 2);
# the backward kernel reads the logits and writes a new gradient tensor (2 + 2). [D] by
# counting the kernels' loads and stores.
XENTROPY_BYTES = (4.0, 4.0)
# PyTorch's eager ``F.cross_entropy(logits.float(), labels)`` (torchtitan), bytes per logit:
# forward the FP32 cast (2 + 4) and ``log_softmax`` reading a row too wide for shared memory
# for its max, its sum of exponentials and its write (4 + 4 + 4 + 4); backward the NLL
# gradient's zeros (4), ``log_softmax``'s backward (sum, then read it and the output, write:
# 4 + 4 + 4 + 4), the cast back (4 + 2). [D] counting ATen's SoftMax.cu, LossNLL.cu kernels.
TORCH_CROSS_ENTROPY_BYTES = (22.0, 26.0)
TORCH_CROSS_ENTROPY_KERNELS = (3, 4)


def _cross_entropy_s(logits: float, perf: GpuPerf, stack: Stack) -> tuple[float, float]:
    """Forward and backward seconds of the loss over ``logits`` logits on one GPU."""
    match stack.cross_entropy:
        case "te" | "xentropy":
            kernels = 2 if stack.cross_entropy == "te" else 1
            forward, backward = (
                FUSED_CROSS_ENTROPY_BYTES if stack.cross_entropy == "te" else XENTROPY_BYTES
            )
            return (
                memory_time_s(forward * logits, perf, kernels),
                memory_time_s(backward * logits, perf),
            )
        case "torch":
            forward, backward = TORCH_CROSS_ENTROPY_BYTES
            fwd_kernels, bwd_kernels = TORCH_CROSS_ENTROPY_KERNELS
            return (
                memory_time_s(forward * logits, perf, num_kernels=fwd_kernels),
                memory_time_s(backward * logits, perf, num_kernels=bwd_kernels),
            )
        case "unfused":
            loss = memory_time_s(CROSS_ENTROPY_BYTES_PER_LOGIT * logits, perf, num_kernels=9)
            return loss * 34 / 52, loss * 18 / 52
        case _:
            assert_never(stack.cross_entropy)


def logits_times(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack | None = None
) -> tuple[float, float]:
    """Forward and backward time of the output layer and the cross-entropy (last stage).

    The logits GEMM is split over TP (vocab-parallel); the FP32 cross-entropy is a chain of
    memory-bound passes over the ``tokens x V / t`` logits (``CROSS_ENTROPY_BYTES_PER_LOGIT``),
    which matters for small models with large vocabularies, or, with a fused cross-entropy
    (``Stack.cross_entropy``), one or two passes and a gradient pass. The output layer stays in BF16
    in FP8 runs (Megatron-Core's output layer is not a Transformer Engine module; torchtitan
    filters ``output`` out of its float8 conversion).
    """
    perf = perf.at_bf16()
    tokens = tokens_per_gpu(plan)
    vocab = arch.vocab_size / plan.layout.tp
    gemm = gemm_time_s(tokens, vocab, arch.hidden_size, perf)
    stack = stack or Stack()
    loss_forward, loss_backward = _cross_entropy_s(tokens * vocab, perf, stack)
    metrics = train_metrics_s(tokens * vocab, perf, stack)  # after the backward
    return gemm + loss_forward, 2.0 * gemm + loss_backward + metrics
