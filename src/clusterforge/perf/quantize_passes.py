"""Per-layer quantization passes of an FP8, MXFP8 or NVFP4 run, in seconds.

FP8: the cast/transpose passes of :func:`~clusterforge.perf.fp8.fp8_layer_bytes`. MXFP8 and
NVFP4 (:mod:`~clusterforge.perf.blockscale`): every GEMM input in the forward and every
output gradient in the backward is quantized from BF16 into a row-wise and a column-wise
copy (:func:`~clusterforge.perf.blockscale.operand_cast`), over the element counts of the
Transformer Engine FP8 casts (:func:`~clusterforge.perf.fp8.expert_widths`: four GEMM
inputs and four output gradients per layer, the routed copies of an MoE layer counted),
plus one MXFP8 launch per further local expert on each expert GEMM
(:func:`mxfp8_expert_extra_kernels`).
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

__all__ = ["blockscale_layer_bytes", "mxfp8_expert_extra_kernels", "quantize_passes_s"]

GEMMS_PER_LAYER = FP8_KERNELS_PER_LAYER // 2  # QKV, projection, FC1, FC2
# Transformer Engine's GroupedLinear quantizes the tokens of every local expert with
# tex.split_quantize (forward: the FC1 and FC2 inputs; backward: their output gradients),
# transformer_engine/pytorch/module/grouped_linear.py at NVIDIA/TransformerEngine v2.8
# (40c69e751a47) and v2.12 (5671fd367590). split_quantize hands the splits to
# multi_tensor_quantize_impl, whose one fused kernel serves FP8 delayed scaling only ("Currently
# only have fused kernel for FP8 delayed scaling"); MXFP8 splits are quantized "individually",
# one kernel per local expert (transformer_engine/pytorch/csrc/extensions/cast.cpp at both
# tags; v2.12's grouped kernels are NVFP4's).
EXPERT_GEMMS = 2  # FC1 and FC2 of each local expert, each way


def mxfp8_expert_extra_kernels(arch: ModelArch, plan: ParallelPlan) -> int:
    """MXFP8 quantize kernels per direction of one MoE layer beyond one per expert GEMM."""
    if arch.num_experts == 1 or plan.precision != "mxfp8":
        return 0
    return EXPERT_GEMMS * max(0, arch.num_experts // plan.layout.ep - 1)


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
        kernels += mxfp8_expert_extra_kernels(arch, plan)
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
