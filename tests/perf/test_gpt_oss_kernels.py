"""gpt-oss's kernels under Megatron-Bridge: cuDNN's measured sliding-window attention rate
(perf/window_attention.py) and Megatron-Core's unfused YaRN rotary (perf/rotary.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.attention import attention_backward_s, attention_forward_s
from clusterforge.perf.compute import layer_times
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import gpu_perf, load_constants
from clusterforge.perf.rotary import unfused_rotary_s
from clusterforge.perf.stack import stack_named
from clusterforge.perf.window_attention import window_rate, windowed_pairs, windowed_times

PLAN = ParallelPlan(
    JobLayout(tp=1, pp=1, dp=64, ep=64), micro_batch=4, seq_length=4096, recompute="none"
)


def _perf(gpu_id: str):
    return gpu_perf(load_catalog().gpus[gpu_id], "bf16")


def test_windowed_layers_run_at_cudnns_measured_window_rate(models) -> None:
    # cudnn-frontend gpt_oss benchmark, GB300, window 128, head dim 64, 4,096 tokens:
    # 167 TFLOP/s forward, 191 backward over the band's pairs.
    arch, perf, stack = models["gpt-oss-120b"], _perf("gb300"), stack_named("megatron-bridge")
    rate = window_rate(arch, PLAN, perf, stack)
    assert rate is not None and (rate.forward_tflops, rate.backward_tflops) == (167.0, 191.0)
    pairs = 128 * 129 / 2 + (4096 - 128) * 128
    assert windowed_pairs(arch, PLAN) == pytest.approx(pairs)
    flops = 4.0 * 4 * 64 * 64 * pairs
    forward, backward = windowed_times(arch, PLAN, perf, rate)
    assert forward == pytest.approx(flops / 167e12)
    assert backward == pytest.approx(2.5 * flops / 191e12)
    # half the layers windowed: the layer average is half a causal and half a windowed layer
    full = arch.model_copy(update={"sliding_window": None, "sliding_window_layers": 0.0})
    causal = attention_forward_s(full, PLAN, perf, stack)
    overhead = load_constants().kernel_overhead_s
    got = attention_forward_s(arch, PLAN, perf, stack)
    assert got == pytest.approx(0.5 * causal + 0.5 * (forward + overhead))
    # the backward: the causal layers' forward at the causal kernel's backward ratio, the
    # windowed layers' at their measured backward rate
    ratio = attention_backward_s(full, PLAN, perf, stack) / causal
    got_bwd = attention_backward_s(arch, PLAN, perf, stack)
    assert got_bwd == pytest.approx((got - 0.5 * forward) * ratio + 0.5 * backward)


def test_a_narrow_window_costs_more_than_its_share_of_causal_pairs(models) -> None:
    # the measured rate is ~11 % of GB300's causal rate at 8,192 tokens (~1,000 TFLOP/s at
    # head dim 64): a windowed layer costs several times what its pairs would at that rate
    arch, perf, stack = models["gpt-oss-120b"], _perf("gb300"), stack_named("megatron-bridge")
    full = arch.model_copy(update={"sliding_window": None, "sliding_window_layers": 0.0})
    overhead = load_constants().kernel_overhead_s
    at_8k = PLAN.with_(seq_length=8192)
    per_pair = (attention_forward_s(full, at_8k, perf, stack) - overhead) / (8192.0**2 / 2)
    rate = window_rate(arch, PLAN, perf, stack)
    assert rate is not None
    windowed = windowed_times(arch, PLAN, perf, rate)[0]
    assert windowed > 5.0 * per_pair * windowed_pairs(arch, PLAN)
    # nemo's cuDNN attention is the same kernel
    nemo = replace(stack_named("nemo"), attention="cudnn")
    assert attention_forward_s(arch, PLAN, perf, nemo) == attention_forward_s(
        arch, PLAN, perf, stack
    )


def test_the_windowed_time_is_fixed_per_query_and_head(models) -> None:
    arch, perf, stack = models["gpt-oss-120b"], _perf("b200"), stack_named("megatron-bridge")
    rate = window_rate(arch, PLAN, perf, stack)
    assert rate is not None
    short = windowed_times(arch, PLAN, perf, rate)[0]
    long = windowed_times(arch, PLAN.with_(seq_length=8192), perf, rate)[0]
    assert long / short == pytest.approx(2.0, rel=0.02)


@pytest.mark.parametrize(
    ("change", "stack_name", "gpu_id"),
    [
        ({"sliding_window": 256}, "megatron-bridge", "gb300"),  # wider than measured (128)
        ({"head_dim": 128}, "megatron-bridge", "gb300"),  # another head width
        ({}, "megatron-core", "gb300"),  # FlashAttention-2, not cuDNN
        ({}, "megatron-bridge", "a100-80gb"),  # no measured row
        ({"sliding_window": None}, "megatron-bridge", "gb300"),  # no window
    ],
)
def test_no_measured_row_serves_other_layers(models, change, stack_name, gpu_id) -> None:
    arch = models["gpt-oss-120b"].model_copy(update=change)
    assert window_rate(arch, PLAN, _perf(gpu_id), stack_named(stack_name)) is None


def test_no_measured_row_under_context_parallelism(models) -> None:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, cp=2, dp=32, ep=32), micro_batch=1, seq_length=8192, recompute="none"
    )
    arch, perf = models["gpt-oss-120b"], _perf("gb300")
    assert window_rate(arch, plan, perf, stack_named("megatron-bridge")) is None


def test_hopper_takes_the_128_key_window_from_the_h200_tile_costs(models) -> None:
    # H200's only measured window is 1,024 keys (336 / 289 TFLOP/s); its sweep over lengths
    # takes it to gpt-oss's 128 keys by the kernel's tile counts: 72 / 99 TFLOP/s
    arch, perf = models["gpt-oss-120b"], _perf("h100-sxm")
    rate = window_rate(arch, PLAN, perf, stack_named("megatron-bridge"))
    assert rate is not None and rate.window == 128
    assert (rate.forward_tflops, rate.backward_tflops) == (72.0, 99.0)
    # a window up to the measured 1,024 keys takes the measured row; a wider one gets no row
    # (the causal rate)
    wider = arch.model_copy(update={"sliding_window": 1024})
    measured = window_rate(wider, PLAN, perf, stack_named("megatron-bridge"))
    assert measured is not None and measured.window == 1024
    assert (measured.forward_tflops, measured.backward_tflops) == (336.0, 289.0)
    widest = arch.model_copy(update={"sliding_window": 2048})
    assert window_rate(widest, PLAN, perf, stack_named("megatron-bridge")) is None


def test_yarn_rotary_runs_megatrons_unfused_ops(models) -> None:
    arch, perf, stack = models["gpt-oss-120b"], _perf("gb300"), stack_named("megatron-bridge")
    assert arch.rotary_scaling == "yarn"
    forward, backward = unfused_rotary_s(arch, PLAN, perf, stack)
    c = load_constants()
    bandwidth = perf.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency
    elements = 4 * 4096 * (64 * 64 + 8 * 64)  # tokens x (Q + K widths)
    assert forward == pytest.approx(20 * elements / bandwidth + 24 * c.kernel_overhead_s)
    assert backward == pytest.approx(18 * elements / bandwidth + 12 * c.kernel_overhead_s)
    # and it is in the layer's time
    plain = arch.model_copy(update={"rotary_scaling": "none"})
    with_yarn = layer_times(arch, PLAN, perf, stack)
    without = layer_times(plain, PLAN, perf, stack)
    assert with_yarn.forward_s - without.forward_s == pytest.approx(forward)
    assert with_yarn.backward_s - without.backward_s == pytest.approx(backward)


@pytest.mark.parametrize("name", ["megatron-core", "nemo", "megatron-bridge"])
def test_megatron_stacks_run_yarn_unfused(name) -> None:
    assert stack_named(name).yarn_rotary_unfused


@pytest.mark.parametrize(
    "name", ["fsdp", "torchtitan", "automodel", "maxtext", "deepspeed", "megatron-2021"]
)
def test_other_stacks_do_not_run_megatrons_rotary(models, name) -> None:
    arch, perf = models["gpt-oss-120b"], _perf("h100-sxm")
    assert unfused_rotary_s(arch, PLAN, perf, stack_named(name)) == (0.0, 0.0)


def test_plain_rope_models_keep_the_fused_rotary(models) -> None:
    perf, stack = _perf("h100-sxm"), stack_named("megatron-bridge")
    assert unfused_rotary_s(models["llama3-8b"], PLAN, perf, stack) == (0.0, 0.0)


def test_the_flex_dispatchers_fp32_probabilities_widen_the_eager_expert_bias(models) -> None:
    # DeepEP / HybridEP take FP32 probabilities (MoEFlexTokenDispatcher casts them), so the
    # eager ``t + b * p`` of TEGroupedMLP._apply_bias runs in FP32 until its final cast.
    from clusterforge.perf.moe import (
        EXPERT_BIAS_BYTES,
        EXPERT_BIAS_FP32_PROBS_BYTES,
        expert_output_bias_s,
    )

    arch, perf = models["gpt-oss-120b"], _perf("b300")
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, dp=64, ep=8), micro_batch=4, seq_length=4096, recompute="none"
    )
    alltoall = stack_named("megatron-bridge")
    flex = replace(alltoall, moe_dispatcher="flex", moe_flex_sms=32)
    c = load_constants()
    bandwidth = perf.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency
    elements = 4 * 4096 * 4 * 2880  # routed copies x hidden
    local = 128 // 8
    bf16 = expert_output_bias_s(arch, plan, perf, alltoall)
    fp32 = expert_output_bias_s(arch, plan, perf, flex)
    assert bf16[0] == pytest.approx(
        EXPERT_BIAS_BYTES[0] * elements / bandwidth + (2 * local + 1) * c.kernel_overhead_s
    )
    assert fp32[0] == pytest.approx(
        EXPERT_BIAS_FP32_PROBS_BYTES[0] * elements / bandwidth
        + (2 * local + 2) * c.kernel_overhead_s
    )
    assert fp32[1] == pytest.approx(
        EXPERT_BIAS_FP32_PROBS_BYTES[1] * elements / bandwidth
        + (5 * local + 2) * c.kernel_overhead_s
    )
    assert EXPERT_BIAS_FP32_PROBS_BYTES == (28.0, 40.0)
