"""Memory per GPU against Korthikanti et al. 2022 (eqs. 1-5) and ZeRO (Rajbhandari 2020)."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.job import JobLayout
from clusterforge.perf.memory import activation_bytes_per_layer, memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import Stack, stack_named

GPT = ModelArch(num_layers=96, hidden_size=12288, num_heads=96, vocab_size=51200)
S, B, H, A = 2048, 1, 12288, 96
UNFUSED = stack_named("megatron-2021")  # explicit attention + dropout: Korthikanti's setting


def plan(tp: int = 1, **kw) -> ParallelPlan:
    base = {"seq_length": S, "micro_batch": B, "global_batch": 8}
    fields = {**base, "recompute": "none", "sequence_parallel": False, **kw}
    return ParallelPlan(JobLayout(tp=tp), **fields)


def test_no_parallelism_is_34_plus_5as_over_h() -> None:
    expected = S * B * H * (34 + 5 * A * S / H)
    assert activation_bytes_per_layer(GPT, plan(), UNFUSED) == pytest.approx(expected)


def test_tensor_parallel_without_sp_is_eq2() -> None:
    t = 8
    expected = S * B * H * (10 + 24 / t + 5 * A * S / (H * t))
    assert activation_bytes_per_layer(GPT, plan(tp=t), UNFUSED) == pytest.approx(expected)


def test_tensor_and_sequence_parallel_is_eq4() -> None:
    t = 8
    expected = S * B * H / t * (34 + 5 * A * S / H)
    got = activation_bytes_per_layer(GPT, plan(tp=t, sequence_parallel=True), UNFUSED)
    assert got == pytest.approx(expected)


def test_selective_and_full_recompute() -> None:
    t = 8
    selective = plan(tp=t, sequence_parallel=True, recompute="selective")
    full = plan(tp=t, sequence_parallel=True, recompute="full")
    assert activation_bytes_per_layer(GPT, selective, UNFUSED) == pytest.approx(34 * S * B * H / t)
    assert activation_bytes_per_layer(GPT, full, UNFUSED) == pytest.approx(2 * S * B * H / t)


def test_distributed_checkpoints_split_the_full_recompute_input_over_tp() -> None:
    """Megatron-LM's --distribute-checkpointed-activations: without SP each TP rank keeps
    1/t of the layer input it recomputes from (OPT-175B's metaseq launcher sets it)."""
    from dataclasses import replace

    t = 8
    full = plan(tp=t, recompute="full")
    distributed = replace(UNFUSED, distribute_checkpoints=True)
    assert activation_bytes_per_layer(GPT, full, UNFUSED) == pytest.approx(2 * S * B * H)
    assert activation_bytes_per_layer(GPT, full, distributed) == pytest.approx(2 * S * B * H / t)


def test_zero_stages_shrink_model_states_monotonically(models) -> None:
    arch = models["llama3-70b"]
    stages = JobLayout(pp=1).split_layers(arch.num_layers)
    totals = []
    for zero in (0, 1, 2, 3):
        p = ParallelPlan(
            JobLayout(tp=8, pp=1, dp=64), global_batch=512, seq_length=8192, zero_stage=zero
        )
        totals.append(memory_per_gpu(arch, p, stages, Stack()).total_gib)
    assert totals[0] > totals[1] > totals[2] > totals[3]


def test_70b_does_not_fit_one_node_without_sharding_but_fits_with_pp(models, h100) -> None:
    arch = models["llama3-70b"]
    one_node = ParallelPlan(
        JobLayout(tp=8, pp=1, dp=1), global_batch=8, seq_length=8192, zero_stage=0
    )
    mem = memory_per_gpu(arch, one_node, JobLayout(pp=1).split_layers(80), Stack())
    assert mem.total_gib > h100.hbm_gib  # 70B x 18 B / 8 GPUs ~ 150 GiB
    piped = ParallelPlan(
        JobLayout(tp=8, pp=8, dp=8),
        global_batch=512,
        seq_length=8192,
        recompute="full",
        zero_stage=1,
    )
    assert (
        memory_per_gpu(arch, piped, JobLayout(pp=8).split_layers(80), Stack()).total_gib
        < h100.hbm_gib
    )


def test_interleaving_raises_first_stage_activations(models) -> None:
    arch = models["llama3-70b"]
    base = ParallelPlan(JobLayout(tp=8, pp=4, dp=4), global_batch=64, seq_length=8192)
    plain = memory_per_gpu(arch, base, JobLayout(pp=4).split_layers(80), Stack()).activations_gib
    inter = memory_per_gpu(
        arch,
        base.with_(layout=JobLayout(tp=8, pp=4, dp=4, vpp=4)),
        JobLayout(pp=4, vpp=4).split_layers(80),
        Stack(),
    )
    assert inter.activations_gib > plain


def test_fsdp_units_gathered_in_fp8_hold_half_the_bf16_bytes() -> None:
    """A stack that gathers FP8 weights (``fp8_all_gather``) holds its gathered units in FP8:
    GPT-3 175B's 12 h^2 = 1.81e9 parameters per layer, the unit in use plus one prefetched,
    1 byte each instead of 2, i.e. 3.62 GB less per GPU; a BF16 run is unchanged."""
    stages = (GPT.num_layers,)
    layout = {"seq_length": S, "global_batch": 128, "zero_stage": 3}
    fp8 = ParallelPlan(JobLayout(dp=128), precision="fp8", **layout)
    gathers_fp8 = stack_named("maxtext")
    assert gathers_fp8.gathered_weight_bytes("fp8") == 1.0
    gathers_bf16 = dataclasses.replace(gathers_fp8, fp8_all_gather=False)
    saved = (
        memory_per_gpu(GPT, fp8, stages, gathers_bf16).weights_gib
        - memory_per_gpu(GPT, fp8, stages, gathers_fp8).weights_gib
    )
    layer = 12 * GPT.hidden_size**2 + 13 * GPT.hidden_size  # with biases and norms
    assert saved * 2**30 == pytest.approx(layer * (1 + gathers_fp8.fsdp_prefetch), rel=0.01)
    bf16 = ParallelPlan(JobLayout(dp=128), precision="bf16", **layout)
    assert memory_per_gpu(GPT, bf16, stages, gathers_fp8) == memory_per_gpu(
        GPT, bf16, stages, gathers_bf16
    )


def test_jax_units_hold_their_unsharded_gradients_in_bf16() -> None:
    """Under JAX/XLA (``maxtext``) a gathered layer's weight gradients are the BF16 output of
    the weight-gradient dot until their reduce-scatter: 2 bytes per weight of the unit, not
    the 4 of an FP32 buffer (``unit_grad_bytes``); the sharded states are unchanged."""
    stages = (GPT.num_layers,)
    layout = {"seq_length": S, "global_batch": 128, "zero_stage": 3}
    jax = stack_named("maxtext")
    assert jax.unit_grad_bytes == 2.0
    fp32_units = dataclasses.replace(jax, unit_grad_bytes=0.0)  # falls back to the buffer's 4 B
    for precision in ("bf16", "fp8"):
        fsdp = ParallelPlan(JobLayout(dp=128), precision=precision, **layout)
        bf16_mem = memory_per_gpu(GPT, fsdp, stages, jax)
        fp32_mem = memory_per_gpu(GPT, fsdp, stages, fp32_units)
        layer = 12 * GPT.hidden_size**2 + 13 * GPT.hidden_size
        saved = (fp32_mem.weights_gib - bf16_mem.weights_gib) * 2**30
        assert saved == pytest.approx(2.0 * layer, rel=0.01)
        assert bf16_mem.gradients_gib == fp32_mem.gradients_gib
        assert bf16_mem.optimizer_gib == fp32_mem.optimizer_gib


def test_other_stacks_keep_the_gradient_buffer_bytes_for_a_unit() -> None:
    for name in ("fsdp", "torchtitan", "deepspeed", "automodel"):
        assert stack_named(name).unit_grad_bytes == 0.0, name


def test_loss_parallel_holds_16_bytes_per_logit_with_tp_only() -> None:
    """torchtitan runs the loss under PyTorch's ``loss_parallel()`` when TP > 1: its fused
    backward holds 16 B per logit of the rank's vocabulary shard, 4 more than the fused
    ``log_softmax`` backward; without TP, or with a pipeline, nothing changes."""
    titan = stack_named("torchtitan")
    assert titan.loss_parallel and not stack_named("fsdp").loss_parallel
    plain = dataclasses.replace(titan, loss_parallel=False)
    layout = {"seq_length": 8192, "global_batch": 64, "zero_stage": 3}
    stages = (GPT.num_layers,)
    tp = ParallelPlan(JobLayout(tp=8, dp=8), micro_batch=2, **layout)
    extra = (
        memory_per_gpu(GPT, tp, stages, titan).total_gib
        - memory_per_gpu(GPT, tp, stages, plain).total_gib
    )
    assert extra * 2**30 == pytest.approx(4.0 * 2 * 8192 * GPT.vocab_size / 8)
    no_tp = ParallelPlan(JobLayout(dp=64), micro_batch=1, **layout)
    assert memory_per_gpu(GPT, no_tp, stages, titan) == memory_per_gpu(GPT, no_tp, stages, plain)


def test_deepspeed_zero3_keeps_its_gradient_bucket_on_the_gpu() -> None:
    """DeepSpeed ZeRO-3 allocates its contiguous gradient bucket once, ``reduce_bucket_size``
    (5e8) elements of the communication dtype; ZeRO-1/2 and other stacks are unchanged."""
    deepspeed = stack_named("deepspeed")
    no_bucket = dataclasses.replace(deepspeed, zero3_reduce_bucket_params=0.0)
    layout = {"seq_length": 2048, "global_batch": 64}
    stages = (GPT.num_layers,)
    zero3 = ParallelPlan(JobLayout(dp=64), zero_stage=3, **layout)
    extra = (
        memory_per_gpu(GPT, zero3, stages, deepspeed).gradients_gib
        - memory_per_gpu(GPT, zero3, stages, no_bucket).gradients_gib
    )
    assert extra * 2**30 == pytest.approx(5e8 * deepspeed.grad_reduce_bytes)
    zero1 = ParallelPlan(JobLayout(dp=64), zero_stage=1, **layout)
    assert memory_per_gpu(GPT, zero1, stages, deepspeed) == memory_per_gpu(
        GPT, zero1, stages, no_bucket
    )
