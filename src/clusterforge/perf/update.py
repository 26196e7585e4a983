"""The weight-update side of a step: gradient accumulation passes and the optimizer.

After each micro-batch's backward an unfused stack adds the weight gradients into an
accumulation buffer in a memory-bound pass (:func:`grad_accumulation_s`); once per step the
optimizer updates the parameters a rank owns and the gradient norm is read and the buffers
zeroed (:func:`optimizer_step_s`). Both are HBM traffic on the roofline of
:mod:`clusterforge.perf.roofline`.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.host import HOST_OP_S, HostCpu
from clusterforge.perf.memory import deferred_fsdp_reduce, stage_expert_params, stage_params
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, load_constants, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.train_metrics import train_metrics_sync_s

__all__ = [
    "OPTIMIZER_HOST_CALLS_PER_TENSOR",
    "PARAM_TENSORS_PER_LAYER",
    "grad_accumulation_s",
    "optimizer_step_s",
    "owned_params",
    "stage_weights",
]


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


# Composer's ``DecoupledAdamW`` (``Stack.optimizer = "per_tensor_sync"``), per parameter tensor
# with a gradient: ``state['step'] += 1`` and ``.item()`` on it, then ``exp_avg.mul_().add_()``,
# ``exp_avg_sq.mul_().addcmul_()``, ``sqrt()``, the division by the bias correction,
# ``add_(eps)`` and ``param.addcdiv_()`` (weight decay 0 in LLM Foundry's MPT yamls): ten host
# calls and eight kernels. HBM bytes per FP32 parameter: 8 + 12 + 8 + 12 + 8 + 8 + 8 + 16 = 80
# (each op's reads and writes; [D] by counting).
OPTIMIZER_HOST_CALLS_PER_TENSOR = 10
UNFUSED_ADAMW_BYTES = 80.0
UNFUSED_ADAMW_KERNELS = 8
# Tensors besides the blocks': token and position embeddings and the final norm's two.
ROOT_PARAM_TENSORS = 4


def _per_tensor_sync_s(owned: float, layers: int, shard: int, perf: GpuPerf, cpu: HostCpu) -> float:
    """Seconds of an optimizer step that waits on the GPU before each tensor it updates.

    Under FSDP1 with ``use_orig_params`` (Composer's default) a rank's shard is a contiguous
    ``1 / shard`` of each unit's flat parameter and it updates the tensors that shard
    overlaps: one, plus each of the unit's other tensors with probability ``1 / shard``
    (a cut at a position independent of the tensors' boundaries). Each tensor costs the host
    its calls, or the GPU its eight passes when they take longer; with the owned
    parameters spread evenly over the tensors the step takes the larger of the two sums."""
    tensors = layers * (1 + (PARAM_TENSORS_PER_LAYER - 1) / shard)
    tensors += 1 + (ROOT_PARAM_TENSORS - 1) / shard
    host = tensors * OPTIMIZER_HOST_CALLS_PER_TENSOR * HOST_OP_S[cpu]
    gpu = memory_time_s(
        owned * UNFUSED_ADAMW_BYTES, perf, num_kernels=round(tensors * UNFUSED_ADAMW_KERNELS)
    )
    return max(host, gpu)


def owned_params(arch: ModelArch, plan: ParallelPlan, first_stage: int) -> float:
    """Parameters whose optimizer state one rank of the first stage owns: the stage's, or
    under ZeRO 1-3 its ``1 / shard`` of the dense ones and ``EP / shard`` of the experts'
    (expert states are sharded over the expert-data-parallel group, DP x CP / EP ranks, as
    in :func:`~clusterforge.perf.memory.memory_per_gpu`)."""
    params = stage_params(arch, plan, first_stage, first=True)
    if plan.zero_stage < 1:
        return params
    shard = plan.shard_size or plan.layout.dp * plan.layout.cp
    expert = stage_expert_params(arch, plan, first_stage)
    return params / shard + expert / max(1, shard // plan.layout.ep) - expert / shard


def optimizer_step_s(
    arch: ModelArch,
    plan: ParallelPlan,
    perf: GpuPerf,
    first_stage: int,
    *,
    stack: Stack | None = None,
    cpu: HostCpu = "x86",
) -> tuple[float, float]:
    """Optimizer step over the parameters a rank owns, and the gradient-norm read and buffer
    zeroing over the FP32 gradients it holds: all of its stage's under ZeRO 0/1 (a full
    gradient buffer), its shard under ZeRO-2/3 and FSDP (gradients are reduce-scattered and
    the unsharded ones freed; Rajbhandari et al. 2020). A stack whose optimizer waits on the
    GPU before each tensor (``Stack.optimizer``) runs on the ``cpu`` host's issue rate; the
    second figure includes the host time of the training metrics' synchronisation."""
    params = stage_params(arch, plan, first_stage, first=True)
    shard = plan.shard_size or plan.layout.dp * plan.layout.cp
    owned = owned_params(arch, plan, first_stage)
    held = owned if plan.zero_stage >= 2 else params
    norm_and_zero = memory_time_s(held * 4 * 2, perf, num_kernels=4)
    if stack is not None:
        norm_and_zero += train_metrics_sync_s(stack, plan.layout.num_gpus, cpu)
    if stack is not None and stack.optimizer == "per_tensor_sync":
        return _per_tensor_sync_s(owned, first_stage, shard, perf, cpu), norm_and_zero
    optimizer_bytes = load_constants().optimizer_bytes_per_param
    return memory_time_s(owned * optimizer_bytes, perf, num_kernels=4), norm_and_zero
