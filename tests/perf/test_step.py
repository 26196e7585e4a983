"""Step-time model: structure (bubble, breakdown, MFU vs HFU) and 'bad plans look bad'."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step, search
from clusterforge.perf.comm import InterpolatingComm
from clusterforge.perf.stack import Stack, stack_named

LLAMA70 = {"global_batch": 512, "seq_length": 8192, "recompute": "selective"}


@pytest.fixture
def predict(models, h100, h100_comm):
    def run(layout: JobLayout, model_id: str = "llama3-70b", comm=None, gpu=None, **plan):
        arch = models[model_id]
        return predict_step(arch, ParallelPlan(layout, **plan), gpu or h100, comm or h100_comm, 8)

    return run


def test_breakdown_adds_up_and_mfu_below_hfu(predict) -> None:
    pred = predict(JobLayout(tp=8, pp=4, dp=16, vpp=5), **LLAMA70)
    assert pred.breakdown.total_s == pytest.approx(pred.step_time_s)
    assert 0 < pred.mfu < pred.hfu < 1
    full = predict(JobLayout(tp=8, pp=4, dp=16, vpp=5), **{**LLAMA70, "recompute": "full"})
    assert full.hfu / full.mfu == pytest.approx(4 / 3, rel=0.05)  # Narayanan eq. 3 vs MFU
    assert full.step_time_s > pred.step_time_s


def test_good_plan_lands_in_published_mfu_range(predict) -> None:
    # Published H100 BF16 dense training: 38-49 % MFU (Megatron-LM README r0.8 table; Llama 3 paper Table 4).
    pred = predict(JobLayout(tp=8, pp=4, dp=16, vpp=5), **LLAMA70)
    assert 0.35 < pred.mfu < 0.60
    assert pred.fits


def test_bubble_follows_p_minus_1_over_v_m(predict) -> None:
    for vpp in (1, 2, 5):
        pred = predict(JobLayout(tp=8, pp=4, dp=16, vpp=vpp), **LLAMA70)
        m = 512 // 16
        busy = pred.step_time_s - pred.breakdown.bubble_s
        other = pred.breakdown.dp_comm_s + pred.breakdown.pp_comm_s
        other += pred.breakdown.optimizer_s + pred.breakdown.other_s
        ratio = pred.breakdown.bubble_s / (busy - other)
        assert ratio == pytest.approx(3 / (vpp * m), rel=0.05)


def test_tp16_across_nodes_is_much_worse_than_tp8(predict) -> None:
    good = predict(JobLayout(tp=8, pp=4, dp=16), **LLAMA70)
    bad = predict(JobLayout(tp=16, pp=4, dp=8), **LLAMA70)
    assert bad.tokens_per_s < 0.6 * good.tokens_per_s
    assert bad.breakdown.largest_overhead() == "tp_comm_s"


def test_tiny_batches_on_a_deep_pipeline_are_bubble_bound(predict) -> None:
    small = {"global_batch": 64, "seq_length": 8192, "recompute": "selective"}
    good = predict(JobLayout(tp=8, pp=4, dp=16, vpp=5), **small)
    bad = predict(JobLayout(tp=8, pp=16, dp=4), **small)
    assert bad.tokens_per_s < 0.7 * good.tokens_per_s
    assert bad.breakdown.largest_overhead() == "bubble_s"


def test_a_prediction_classes_zero2_by_what_its_stack_runs(models, h100, h100_comm) -> None:
    """SHARD_GRAD_OP on the fsdp stack gathers unit by unit: an FSDP class and its range;
    Megatron's ZeRO-2 distributed optimizer stays megatron-3d."""
    plan = ParallelPlan(
        JobLayout(dp=64), global_batch=512, seq_length=4096, zero_stage=2, recompute="full"
    )
    arch = models["llama3-8b"]
    fsdp = predict_step(arch, plan, h100, h100_comm, 8, stack_named("fsdp"))
    mcore = predict_step(arch, plan, h100, h100_comm, 8, Stack.megatron_core())
    assert fsdp.run_class == "fsdp-small"
    assert mcore.run_class == "megatron-3d"


def test_zero3_at_large_dp_with_small_per_gpu_batch_is_dp_bound(predict) -> None:
    # One 1k-token sequence per GPU: ZeRO-3 re-gathers 70B weights every micro-batch.
    plan = {"global_batch": 512, "seq_length": 1024}
    good = predict(JobLayout(tp=8, pp=4, dp=16, vpp=5), zero_stage=1, recompute="selective", **plan)
    bad = predict(JobLayout(tp=1, pp=1, dp=512), zero_stage=3, recompute="full", **plan)
    assert bad.tokens_per_s < 0.75 * good.tokens_per_s
    assert bad.breakdown.largest_overhead() == "dp_comm_s"


def test_slower_network_lowers_mfu(predict, h100_comm) -> None:
    slow = dataclasses.replace(h100_comm, nic_gbyte_per_s=h100_comm.nic_gbyte_per_s / 4)
    fast = predict(JobLayout(tp=8, pp=4, dp=16), **LLAMA70)
    slowed = predict(JobLayout(tp=8, pp=4, dp=16), comm=slow, **LLAMA70)
    assert slowed.mfu < fast.mfu
    assert slowed.breakdown.dp_comm_s > fast.breakdown.dp_comm_s


def test_fp8_is_faster_but_below_twice(predict) -> None:
    bf16 = predict(JobLayout(tp=8, pp=4, dp=16), **LLAMA70)
    fp8 = predict(JobLayout(tp=8, pp=4, dp=16), **{**LLAMA70, "precision": "fp8"})
    assert 1.1 < bf16.step_time_s / fp8.step_time_s < 2.0


def test_newer_gpu_is_faster(predict, models, h100_comm) -> None:
    from clusterforge.catalog import load_catalog

    b200 = load_catalog().gpus["b200"]
    h100 = predict(JobLayout(tp=8, pp=4, dp=16), **LLAMA70)
    blackwell = predict(JobLayout(tp=8, pp=4, dp=16), gpu=b200, **LLAMA70)
    assert blackwell.tokens_per_s > 1.5 * h100.tokens_per_s


def test_moe_with_expert_parallel(predict) -> None:
    plan = {"global_batch": 256, "seq_length": 4096, "recompute": "selective"}
    pred = predict(JobLayout(tp=2, pp=1, dp=32, ep=8), "mixtral-8x7b", **plan)
    assert pred.breakdown.ep_comm_s > 0
    assert 0.1 < pred.mfu < 0.6


def test_search_ranks_fitting_plans_and_avoids_bad_ones(models, h100, h100_comm) -> None:
    base = ParallelPlan(JobLayout(tp=8, pp=1, dp=64), global_batch=512, seq_length=8192)
    comm = InterpolatingComm(h100_comm.collective_time_s)
    top = search(models["llama3-70b"], base, h100, comm, 8, top=5).predictions
    assert len(top) == 5
    rates = [p.tokens_per_s for p in top]
    assert rates == sorted(rates, reverse=True)
    assert all(p.fits and p.plan.layout.tp <= 8 for p in top)
    assert top[0].mfu > 0.4


def _with_stack(models, h100, h100_comm, stack, model_id="llama3-70b", **plan):
    arch = models[model_id]
    return predict_step(arch, ParallelPlan(**plan), h100, h100_comm, 8, stack)


def test_unfused_gradient_accumulation_costs_a_pass_per_micro_batch(models, h100, h100_comm):
    from clusterforge.perf import Stack

    fused = Stack.megatron_core()
    unfused = dataclasses.replace(fused, fused_grad_accumulation=False)
    plan = {"layout": JobLayout(tp=8, pp=4, dp=16), **LLAMA70}
    base = _with_stack(models, h100, h100_comm, fused, **plan)
    extra = _with_stack(models, h100, h100_comm, unfused, **plan)
    # ~70 B params / (TP 8 x PP 4) = 2.2 B per GPU x (2 + 2 x 4) B = 22 GB per micro-batch at
    # 0.85 x 3.35 TB/s: ~7.7 ms, x 32 micro-batches (+ the bubble's 3/32 share): ~0.27 s.
    added = extra.step_time_s - base.step_time_s
    assert 0.2 < added < 0.4
    assert added < 0.1 * base.step_time_s
    # Fewer, larger micro-batches amortise it.
    base_mb4 = _with_stack(models, h100, h100_comm, fused, micro_batch=4, **plan)
    extra_mb4 = _with_stack(models, h100, h100_comm, unfused, micro_batch=4, **plan)
    assert extra_mb4.step_time_s - base_mb4.step_time_s < 0.4 * added


def test_tied_embeddings_add_a_stage_to_stage_gradient_all_reduce(models, h100, h100_comm):
    from clusterforge.perf import Stack

    untied = models["llama3-70b"]
    tied = untied.model_copy(update={"tied_embeddings": True})
    plan = ParallelPlan(JobLayout(tp=8, pp=4, dp=16), **LLAMA70)
    args = (h100, h100_comm, 8, Stack.megatron_core())
    gap = (
        predict_step(tied, plan, *args).breakdown.pp_comm_s
        - predict_step(untied, plan, *args).breakdown.pp_comm_s
    )
    assert gap > 0  # 128256 x 8192 / 8 FP32 gradients between stage 0 and stage 3
    one_stage = plan.with_(layout=JobLayout(tp=8, dp=64))
    assert predict_step(tied, one_stage, *args).breakdown.pp_comm_s == 0.0


def test_sharded_gradients_are_normed_and_zeroed_per_shard(predict) -> None:
    # ZeRO-3 holds 1/DP of the gradients: the norm and zeroing pass shrinks with DP; under
    # ZeRO-1 every rank still holds its whole gradient buffer.
    plan = {**LLAMA70, "recompute": "full"}
    z3_small = predict(JobLayout(tp=1, pp=1, dp=64), zero_stage=3, **plan)
    z3_large = predict(JobLayout(tp=1, pp=1, dp=512), zero_stage=3, **plan)
    assert z3_large.breakdown.other_s < 0.2 * z3_small.breakdown.other_s
    z1_small = predict(JobLayout(tp=8, pp=4, dp=2), zero_stage=1, **plan)
    z1_large = predict(JobLayout(tp=8, pp=4, dp=16), zero_stage=1, **plan)
    assert z1_large.breakdown.other_s == pytest.approx(z1_small.breakdown.other_s)
