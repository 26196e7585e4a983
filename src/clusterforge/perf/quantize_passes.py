"""Per-layer quantization passes of an FP8, MXFP8 or NVFP4 run, in seconds.

FP8: the cast/transpose passes of :func:`~clusterforge.perf.fp8.fp8_layer_bytes`. MXFP8 and
NVFP4 (:mod:`~clusterforge.perf.blockscale`): every GEMM input in the forward and every
output gradient in the backward is quantized from BF16 into a row-wise and a column-wise
copy (:func:`~clusterforge.perf.blockscale.operand_cast`), over the element counts of the
Transformer Engine FP8 casts (:func:`~clusterforge.perf.fp8.expert_widths`: four GEMM
inputs and four output gradients per layer, the routed copies of an MoE layer counted).
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.blockscale import is_block_scaled, operand_cast
from clusterforge.perf.fp8 import (
    FP8_KERNELS_PER_LAYER,
    expert_widths,
    fp8_layer_bytes,
    torchao_kernels,
)
from clusterforge.perf.moe import expert_fp8_extra_kernels
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["blockscale_layer_bytes", "quantize_passes_s"]

GEMMS_PER_LAYER = FP8_KERNELS_PER_LAYER // 2  # QKV, projection, FC1, FC2


def blockscale_layer_bytes(arch: ModelArch, plan: ParallelPlan) -> tuple[float, float]:
    """HBM bytes of one layer's MXFP8 / NVFP4 quantization per micro-batch: (fwd, bwd)."""
    if not is_block_scaled(plan.precision):
        return 0.0, 0.0
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    norm_fed, others, grads = expert_widths(arch, plan)
    per_element, _ = operand_cast(plan.precision)
    return (norm_fed + others) * per_element * tokens, grads * per_element * tokens


def quantize_passes_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one layer's quantization passes (0 in BF16/FP16)."""
    if is_block_scaled(plan.precision):
        forward, backward = blockscale_layer_bytes(arch, plan)
        kernels = GEMMS_PER_LAYER * operand_cast(plan.precision)[1]
        fwd_kernels, bwd_kernels = kernels, kernels
    else:
        forward, backward = fp8_layer_bytes(arch, plan, stack, perf.gpu_id)
        if forward <= 0:
            return 0.0, 0.0
        kernels = GEMMS_PER_LAYER + expert_fp8_extra_kernels(arch, plan, stack)
        fwd_kernels, bwd_kernels = (
            torchao_kernels(arch, stack) if stack.fp8_torchao else (kernels, kernels)
        )
    return (
        memory_time_s(forward, perf, num_kernels=fwd_kernels),
        memory_time_s(backward, perf, num_kernels=bwd_kernels),
    )
