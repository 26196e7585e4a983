"""The weight-update side of a step: gradient accumulation passes and the optimizer.

After each micro-batch's backward an unfused stack adds the weight gradients into an
accumulation buffer in a memory-bound pass (:func:`grad_accumulation_s`); once per step the
optimizer updates the parameters a rank owns and the gradient norm is read and the buffers
zeroed (:func:`optimizer_step_s`). Both are HBM traffic on the roofline of
:mod:`clusterforge.perf.roofline`.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.memory import deferred_fsdp_reduce, stage_expert_params, stage_params
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, load_constants, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["PARAM_TENSORS_PER_LAYER", "grad_accumulation_s", "optimizer_step_s", "stage_weights"]


# Parameter tensors per transformer layer that receive their own gradient-accumulation
# kernel (QKV, projection, two MLP matrices, their biases, two norms' weight and bias).
PARAM_TENSORS_PER_LAYER = 12


def stage_weights(arch: ModelArch, plan: ParallelPlan, index: int, layers: int) -> float:
    """Parameters one GPU of stage ``index`` holds: its layers, the embedding on the first
    stage and the output layer on the last (a copy of the embedding when tied, Megatron)."""
    params = stage_params(arch, plan, layers, first=index == 0)
    if plan.layout.pp > 1 and index == plan.layout.pp - 1:
        params += arch.vocab_size * arch.hidden_size / plan.layout.tp
    return params


def grad_accumulation_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, index: int, layers: int
) -> float:
    """Seconds per micro-batch to add its weight gradients into the accumulation buffer.

    Unfused stacks run a separate memory-bound ``acc.add_(grad)`` per parameter tensor after
    each micro-batch's backward: read the BF16/FP16 gradient (2 B), read and write the
    accumulator in its precision (``grad_buffer_bytes`` each): 6 B/parameter for
    Megatron-LM 2021 (FP16 ``main_grad``, ``megatron/model/distributed.py`` param hook),
    10 B for DeepSpeed's BF16_Optimizer (FP32 accumulation; bigscience-workshop/bigscience
    ``train/tr11-176B-ml/README.md``). With gradient-accumulation fusion the weight-gradient
    GEMM accumulates in its epilogue and no pass remains (Megatron-LM
    ``--gradient-accumulation-fusion``; Transformer Engine ``fuse_wgrad_accumulation``).

    A pipelined FSDP2 stage (:func:`~clusterforge.perf.exposure.deferred_fsdp_reduce`) has
    no such fusion: autograd writes each micro-batch's BF16 gradient and FSDP2 casts the
    first into an unsharded accumulator of the reduce dtype (read 2 B, write
    ``grad_reduce_bytes``) and adds every later one into it (read 2 B, read and write the
    accumulator): ``FSDPParam.to_accumulated_grad_if_needed`` and
    ``accumulate_unsharded_grad_if_needed`` in ``torch/distributed/fsdp/_fully_shard/
    _fsdp_param.py``. Averaged over the step's micro-batches.
    """
    if deferred_fsdp_reduce(plan, stack):
        m = num_micro_batches(plan)
        bytes_per_param = BF16_BYTES + stack.grad_reduce_bytes * (1 + (m - 1) / m)
    elif stack.fused_grad_accumulation:
        return 0.0
    else:
        bytes_per_param = BF16_BYTES + 2 * stack.grad_buffer_bytes
    params = stage_weights(arch, plan, index, layers)
    kernels = PARAM_TENSORS_PER_LAYER * layers
    return memory_time_s(params * bytes_per_param, perf, num_kernels=kernels)


def optimizer_step_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, first_stage: int
) -> tuple[float, float]:
    """Optimizer step over the parameters a rank owns, and the gradient-norm read and buffer
    zeroing over the FP32 gradients it holds: all of its stage's under ZeRO 0/1 (a full
    gradient buffer), its shard under ZeRO-2/3 and FSDP (gradients are reduce-scattered and
    the unsharded ones freed; Rajbhandari et al. 2020)."""
    params = stage_params(arch, plan, first_stage, first=True)
    shard = plan.shard_size or plan.layout.dp * plan.layout.cp
    owned = params / shard if plan.zero_stage >= 1 else params
    if plan.zero_stage >= 1:
        # Expert states are sharded over the expert-data-parallel group (DP x CP / EP ranks),
        # as in memory_per_gpu: a rank owns EP times more of them than of the dense ones.
        expert = stage_expert_params(arch, plan, first_stage)
        owned += expert / max(1, shard // plan.layout.ep) - expert / shard
    held = owned if plan.zero_stage >= 2 else params
    optimizer_bytes = load_constants().optimizer_bytes_per_param
    return (
        memory_time_s(owned * optimizer_bytes, perf, num_kernels=4),
        memory_time_s(held * 4 * 2, perf, num_kernels=4),
    )
