"""FSDP2's reduce-scatter copy-in: every unit's unsharded gradients are chunk-concatenated
into a reduce-scatter buffer of the reduce dtype before the reduce-scatter, and the compute
stream waits for that copy before it frees them (PyTorch ``foreach_reduce``)."""

from __future__ import annotations

from dataclasses import replace

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.memory import stage_params
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

TORCHTITAN = stack_named("torchtitan")
NO_COPY_IN = replace(TORCHTITAN, fsdp_copy_in=False)


def _plan(dp: int, pp: int = 1, **changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=pp, dp=dp),
        global_batch=16,
        micro_batch=2,
        seq_length=8192,
        sequence_parallel=False,
        recompute="none",
        zero_stage=3,
    )
    return plan.with_(**changes)


def test_fsdp2_stacks_copy_gradients_in_and_fsdp1_and_deepspeed_do_not() -> None:
    """FSDP2 (torchtitan, NeMo AutoModel) reduce-scatters from a separate buffer; FSDP1's
    flat gradient and DeepSpeed's bucket are reduced where they lie."""
    assert TORCHTITAN.fsdp_copy_in and stack_named("automodel").fsdp_copy_in
    assert not stack_named("fsdp").fsdp_copy_in
    assert not stack_named("deepspeed").fsdp_copy_in


def test_copy_in_reads_bf16_and_writes_fp32_every_micro_batch(models, h100, h100_comm) -> None:
    """Llama 3.1 8B on 8 H100 (one micro-batch a step): every gradient is read in BF16 (2 B)
    and written in the FP32 reduce dtype (4 B) once per micro-batch, on the critical path."""
    arch = models["llama3.1-8b"]
    plan = _plan(8)
    copied = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
    plain = predict_step(arch, plan, h100, h100_comm, 8, NO_COPY_IN)
    extra_s = copied.breakdown.compute_s - plain.breakdown.compute_s
    params = stage_params(arch, plan, arch.num_layers, first=True)  # ~8.0e9 with both vocabularies
    hbm_s = params * (2 + 4) / (gpu_perf(h100, "bf16").hbm_gbyte_per_s * 1e9)
    assert hbm_s < extra_s < 2 * hbm_s
    assert copied.breakdown.dp_comm_s == plain.breakdown.dp_comm_s


def test_no_copy_in_without_sharding(models, h100, h100_comm) -> None:
    """One data-parallel rank (nothing reduce-scattered) or ZeRO-1 costs nothing extra."""
    arch = models["llama3.1-8b"]
    for plan in (_plan(1, global_batch=2), _plan(8, zero_stage=1)):
        copied = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
        plain = predict_step(arch, plan, h100, h100_comm, 8, NO_COPY_IN)
        assert copied.step_time_s == plain.step_time_s


def test_pipelined_stage_copies_its_fp32_accumulator_once_per_step(models, h100, h100_comm) -> None:
    """Under PP the gradients accumulate unsharded in FP32 and are reduce-scattered after the
    schedule: the copy-in reads and writes 4 B per parameter once, exposed with the reduce."""
    arch = models["llama3.1-8b"]
    plan = _plan(4, pp=2)
    copied = predict_step(arch, plan, h100, h100_comm, 8, TORCHTITAN)
    plain = predict_step(arch, plan, h100, h100_comm, 8, NO_COPY_IN)
    assert copied.breakdown.compute_s == plain.breakdown.compute_s
    extra_s = copied.breakdown.dp_comm_s - plain.breakdown.dp_comm_s
    params = stage_params(arch, plan, copied.stage_layers[0], first=True)
    hbm_s = params * (4 + 4) / (gpu_perf(h100, "bf16").hbm_gbyte_per_s * 1e9)
    assert hbm_s < extra_s < 2 * hbm_s
