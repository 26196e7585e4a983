"""FSDP under pipeline parallelism (torchtitan on ``torch.distributed.pipelining``).

The pipelining stage turns FSDP's gradient sync off for every backward and runs FSDP's
post-backward only after the last micro-batch (``torch/distributed/pipelining/stage.py``),
so (1) the stage's gradients wait unsharded in an FP32 accumulator, (2) each micro-batch
adds its BF16 gradient into it in a separate pass, and (3) the one reduce-scatter runs
after the schedule with no compute left to hide behind. PyTorch's 1F1B schedule also
waits on every batched send/receive. Each test fails on a model that overlaps the
reduce-scatter with the last backward, keeps only sharded gradients, or fuses the
accumulation, as it does for Megatron's distributed optimizer.
"""

from __future__ import annotations

from dataclasses import replace

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.memory import memory_per_gpu, stage_params
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named
from clusterforge.perf.update import PARAM_TENSORS_PER_LAYER, grad_accumulation_s

TORCHTITAN = stack_named("torchtitan")
MEGATRON = stack_named("megatron-core")
GIB = 1024**3


def _pipelined(num_micro: int = 8) -> ParallelPlan:
    """Llama 3.1 405B on 512 GPUs as torchtitan's 3-D benchmark ran it: FSDP 8 x TP 8 x PP 8,
    local batch 32 = ``num_micro`` micro-batches."""
    return ParallelPlan(
        JobLayout(tp=8, pp=8, dp=8),
        global_batch=256,
        micro_batch=256 // 8 // num_micro,
        seq_length=8192,
        sequence_parallel=True,
        recompute="full",
        zero_stage=3,
        precision="fp8",
    )


def test_pipelined_fsdp_reduce_scatters_after_the_last_backward(models, h100, h100_comm) -> None:
    """The stage's FP32 gradients (126/8 layers of a 405B model / TP 8: ~6.3e9 parameters,
    25 GB) are reduce-scattered once over the 8 data-parallel ranks, exposed whole: the
    step's data-parallel time is at least that collective. With the reduce hidden behind
    the last backward (Megatron's overlap) it is well under it."""
    arch, plan = models["llama3.1-405b"], _pipelined()
    stages = plan.layout.split_layers(arch.num_layers)
    grads = stage_params(arch, plan, stages[0], first=True) * TORCHTITAN.grad_reduce_bytes
    reduce_s = h100_comm.collective_time_s("reduce_scatter", grads, rank_groups(plan, "dpcp"))
    deferred = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
    overlapped = predict_step(
        arch, plan, h100, h100_comm, 8, replace(TORCHTITAN, pipelined_fsdp_no_sync=False)
    )
    assert deferred.breakdown.dp_comm_s >= reduce_s > 0.1
    assert overlapped.breakdown.dp_comm_s < 0.5 * reduce_s


def test_pipelined_fsdp_holds_the_stages_unsharded_fp32_gradients(models) -> None:
    """6.3e9 parameters x 4 B = 23.5 GiB of unsharded FP32 gradients on top of the sharded
    state; torchtitan measured 82.5 GiB for this run (Table 5, 1F1B), where sharded
    gradients alone would leave the model near 45 GiB."""
    arch, plan = models["llama3.1-405b"], _pipelined()
    stages = plan.layout.split_layers(arch.num_layers)
    unsharded = stage_params(arch, plan, stages[0], first=True) * 4 / GIB
    deferred = memory_per_gpu(arch, plan, stages, TORCHTITAN)
    sharded = memory_per_gpu(arch, plan, stages, replace(TORCHTITAN, pipelined_fsdp_no_sync=False))
    assert deferred.gradients_gib - sharded.gradients_gib >= 0.99 * unsharded
    assert unsharded > 20


def test_pipelined_fsdp_adds_each_micro_batchs_gradient_in_a_separate_pass(models, h100) -> None:
    """Per micro-batch, read the BF16 gradient (2 B) and read and write the FP32 accumulator
    (8 B), except the first micro-batch, which only casts (2 + 4 B): averaged over 8
    micro-batches 2 + 4 x (1 + 7/8) = 9.5 B per parameter, memory-bound. Megatron fuses
    the accumulation into the weight-gradient GEMM: no pass."""
    arch, plan = models["llama3.1-405b"], _pipelined(num_micro=8)
    perf = gpu_perf(h100, plan.precision)
    layers = plan.layout.split_layers(arch.num_layers)[1]
    params = stage_params(arch, plan, layers, first=False)
    expected = memory_time_s(params * 9.5, perf, num_kernels=PARAM_TENSORS_PER_LAYER * layers)
    assert grad_accumulation_s(arch, plan, TORCHTITAN, perf, 1, layers) == expected
    assert grad_accumulation_s(arch, plan, MEGATRON, perf, 1, layers) == 0.0


def test_pytorch_1f1b_waits_on_its_pipeline_sends(models, h100, h100_comm) -> None:
    """``Schedule1F1B`` waits on each fused send/receive before the next forward or
    backward: every micro-batch's sends are on the critical path, not only fill and drain.
    8 stages, 8 micro-batches: 2 (p - 1) = 14 fill/drain sends are exposed either way, and
    waiting adds the 2 m = 16 steady ones whole instead of their overlap interference
    (0.25 of them): (14 + 16) / (14 + 4) = 1.67."""
    arch, plan = models["llama3.1-405b"], _pipelined()
    waited = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
    hidden = predict_step(arch, plan, h100, h100_comm, 8, replace(TORCHTITAN, pp_overlap=True))
    assert waited.breakdown.pp_comm_s > 1.6 * hidden.breakdown.pp_comm_s
