"""Fused attention kernels: cuDNN's where it is measured, FlashAttention-2 elsewhere."""

from __future__ import annotations

from dataclasses import replace

from clusterforge.catalog import load_catalog
from clusterforge.perf.compute import gpu_perf, layer_times
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import stack_named

PLAN = ParallelPlan(tp=1, pp=1, dp=8, micro_batch=1, seq_length=8192, recompute="none")


def _attention_s(gpu_id: str, attention: str, models) -> float:
    stack = replace(stack_named("nemo"), attention=attention)
    perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
    times = layer_times(models["llama3-8b"], PLAN, perf, stack)
    return times.attention_forward_s + times.attention_backward_s


def test_cudnn_attention_is_faster_than_flash_attention_2_on_h100(models) -> None:
    flash = _attention_s("h100-sxm", "flash", models)
    cudnn = _attention_s("h100-sxm", "cudnn", models)
    # Shah et al. 2024: cuDNN 609/499 vs FlashAttention-2 ~350/310 TFLOP/s forward/backward.
    assert 1.4 < flash / cudnn < 1.9


def test_cudnn_attention_without_a_measurement_falls_back_to_flash(models) -> None:
    assert _attention_s("a100-80gb", "cudnn", models) == _attention_s("a100-80gb", "flash", models)


def test_megatron_bridge_stack_runs_cudnn_attention_and_current_scaling() -> None:
    stack = stack_named("megatron-bridge")
    assert stack.attention == "cudnn"
    assert stack.fp8_scaling == "dynamic"
    assert stack.fp8_weight_bytes == stack_named("nemo").fp8_weight_bytes


def test_fused_cross_entropy_cuts_the_loss_of_a_large_vocabulary(models) -> None:
    """TE's fused cross-entropy moves 10 B per logit instead of the FP32 chain's 52."""
    from clusterforge.perf.compute import logits_times

    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    arch = models["llama3-8b"]
    plain = sum(logits_times(arch, PLAN, perf, stack_named("nemo")))
    fused = sum(logits_times(arch, PLAN, perf, stack_named("megatron-bridge")))
    assert fused < 0.75 * plain
