"""Stack mechanisms: ZeRO-3/FSDP per unit, HSDP, FP8 costs and layouts, block recomputation,
parallel blocks, ALiBi/RoPE. Each test checks a behaviour the earlier model did not have."""

from __future__ import annotations

import typing
from dataclasses import replace

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.compute import layer_times
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.search import least_recompute
from clusterforge.perf.stack import STACK_NAMES, stack_named
from clusterforge.spec import WorkloadSpec

FSDP = stack_named("fsdp")


def _fsdp_plan(num_gpus: int, **changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, dp=num_gpus),
        global_batch=2 * num_gpus,
        micro_batch=2,
        seq_length=8192,
        sequence_parallel=False,
        recompute="full",
        zero_stage=3,
    )
    return plan.with_(**changes)


def test_every_stack_name_builds_and_the_spec_offers_the_same_names() -> None:
    assert {stack_named(n).name for n in STACK_NAMES} == set(STACK_NAMES)
    annotation = WorkloadSpec.model_fields["stack"].annotation
    assert set(typing.get_args(annotation)) == set(STACK_NAMES)


def test_zero3_exposure_grows_with_the_shard_group(models, h100, h100_comm) -> None:
    """Per-layer gathers pay a ring latency per member: the cost grows with DP (same work per
    GPU), where one whole-model gather at full bandwidth would stay flat."""
    arch = models["llama3-8b"]
    small = predict_step(arch, _fsdp_plan(64), h100, h100_comm, 8, FSDP)
    large = predict_step(arch, _fsdp_plan(2048), h100, h100_comm, 8, FSDP)
    assert large.breakdown.dp_comm_s > 2 * small.breakdown.dp_comm_s
    assert large.tokens_per_s_per_gpu < small.tokens_per_s_per_gpu


def test_zero3_without_prefetch_exposes_every_gather(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    eager = predict_step(arch, _fsdp_plan(256), h100, h100_comm, 8, FSDP)
    lazy = predict_step(arch, _fsdp_plan(256), h100, h100_comm, 8, replace(FSDP, fsdp_prefetch=0))
    assert lazy.breakdown.dp_comm_s > 3 * eager.breakdown.dp_comm_s


def test_hsdp_shards_inside_groups_and_replicates_across(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    hybrid = _fsdp_plan(256, shard_size=8)
    shard, replicas = shard_groups(hybrid)
    assert shard.shape == (32, 8) and replicas.shape == (8, 32)
    full_pred = predict_step(arch, _fsdp_plan(256), h100, h100_comm, 8, FSDP)
    hybrid_pred = predict_step(arch, hybrid, h100, h100_comm, 8, FSDP)
    assert hybrid_pred.breakdown.dp_comm_s < full_pred.breakdown.dp_comm_s
    assert hybrid_pred.memory.optimizer_gib > 10 * full_pred.memory.optimizer_gib


def test_fp8_costs_casts_so_small_models_gain_less(models, h100) -> None:
    stack = stack_named("megatron-core")
    speedups = []
    for model in ("llama3-8b", "llama3-70b"):
        plan = ParallelPlan(JobLayout(tp=8, pp=1, dp=1), global_batch=1, seq_length=8192)
        bf16 = layer_times(models[model], plan, gpu_perf(h100, "bf16"), stack)
        fp8_plan = plan.with_(precision="fp8")
        fp8 = layer_times(models[model], fp8_plan, gpu_perf(h100, "fp8"), stack)
        speedups.append(bf16.total_s / fp8.total_s)
    assert 1.0 < speedups[0] < speedups[1] < 1402.6 / 794.5  # never the full FP8 MAMF ratio


def test_fp8_memory_layout_follows_the_stack(models) -> None:
    arch = models["llama3-70b"]
    plan = ParallelPlan(
        JobLayout(tp=4, pp=4, dp=4), global_batch=128, precision="fp8", seq_length=8192
    )
    stages = JobLayout(pp=4).split_layers(arch.num_layers)
    te = memory_per_gpu(arch, plan, stages, stack_named("megatron-core"))
    nemo = memory_per_gpu(arch, plan, stages, stack_named("nemo"))
    assert nemo.weights_gib == pytest.approx(te.weights_gib / 3)  # FP8 only vs BF16 + FP8
    bf16 = memory_per_gpu(arch, plan.with_(precision="bf16"), stages, stack_named("nemo"))
    assert nemo.activations_gib < bf16.activations_gib  # GEMM inputs saved in FP8


def test_block_recomputation_sits_between_none_and_full(models, h100, h100_comm) -> None:
    arch = models["llama3-70b"]
    plan = ParallelPlan(
        JobLayout(tp=8, pp=4, dp=2), global_batch=64, seq_length=8192, micro_batch=1
    )
    preds = {
        k: predict_step(arch, plan.with_(recompute="full", recompute_layers=k), h100, h100_comm, 8)
        for k in (None, 10)
    }
    none = predict_step(arch, plan.with_(recompute="none"), h100, h100_comm, 8)
    assert none.step_time_s < preds[10].step_time_s < preds[None].step_time_s
    assert none.memory_per_gpu_gib > preds[10].memory_per_gpu_gib > preds[None].memory_per_gpu_gib
    assert none.hfu < preds[10].hfu < preds[None].hfu


def test_least_recompute_picks_the_fewest_recomputed_layers_that_fit(models, h100) -> None:
    arch = models["llama3-70b"]
    plan = ParallelPlan(
        JobLayout(tp=8, pp=2, dp=4), global_batch=64, seq_length=8192, micro_batch=2
    )
    chosen = least_recompute(arch, plan, h100, stack_named("megatron-core"))
    assert chosen is not None and chosen.recompute == "full"
    assert chosen.recompute_layers is not None and 0 < chosen.recompute_layers < 40
    fewer = chosen.with_(recompute_layers=chosen.recompute_layers - 1)
    stages = JobLayout(pp=2).split_layers(arch.num_layers)
    stack = stack_named("megatron-core")
    assert memory_per_gpu(arch, fewer, stages, stack).total_gib > h100.hbm_gib


def test_parallel_block_halves_tp_communication(models, h100, h100_comm) -> None:
    serial = models["gpt3-175b"]
    parallel = ModelArch(**{**serial.model_dump(), "id": "gpt3-parallel", "parallel_block": True})
    plan = ParallelPlan(JobLayout(tp=8, pp=8, dp=1), global_batch=64, seq_length=2048)
    a = predict_step(serial, plan, h100, h100_comm, 8, stack_named("megatron-2021"))
    b = predict_step(parallel, plan, h100, h100_comm, 8, stack_named("megatron-2021"))
    assert b.breakdown.tp_comm_s == pytest.approx(a.breakdown.tp_comm_s / 2, rel=0.01)
    assert b.memory.activations_gib < a.memory.activations_gib


def test_alibi_costs_a_bias_read_in_unfused_attention(models, h100) -> None:
    bloom = models["bloom-176b"]
    rope = ModelArch(**{**bloom.model_dump(), "id": "rope", "position_embedding": "rope"})
    plan = ParallelPlan(JobLayout(tp=4, pp=12, dp=8), global_batch=2048, seq_length=2048)
    perf = gpu_perf(h100, "bf16")
    old = stack_named("megatron-2021")
    assert (
        layer_times(bloom, plan, perf, old).attention_forward_s
        > layer_times(rope, plan, perf, old).attention_forward_s
    )
    new = stack_named("megatron-core")  # flash: ALiBi in-kernel, RoPE costs its own pass
    assert (
        layer_times(bloom, plan, perf, new).forward_s < layer_times(rope, plan, perf, new).forward_s
    )
