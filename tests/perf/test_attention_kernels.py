"""Fused attention kernels: cuDNN's where it is measured, FlashAttention-2 elsewhere."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.attention import _fused_attention_rates
from clusterforge.perf.compute import layer_times
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

PLAN = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), micro_batch=1, seq_length=8192, recompute="none")


def _attention_s(gpu_id: str, attention: str, models) -> float:
    stack = replace(stack_named("nemo"), attention=attention)
    perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
    times = layer_times(models["llama3-8b"], PLAN, perf, stack)
    return times.attention_forward_s + times.attention_backward_s


def test_cudnn_attention_is_faster_than_flash_attention_2_on_h100(models) -> None:
    flash = _attention_s("h100-sxm", "flash", models)
    cudnn = _attention_s("h100-sxm", "cudnn", models)
    # cuDNN 644/541 (cudnn-frontend, H200/H100, 8k causal) vs FlashAttention-2 ~350/310 TFLOP/s.
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
    from clusterforge.perf.logits import logits_times

    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    arch = models["llama3-8b"]
    plain = sum(logits_times(arch, PLAN, perf, stack_named("nemo")))
    fused = sum(logits_times(arch, PLAN, perf, stack_named("megatron-bridge")))
    assert fused < 0.75 * plain


def test_triton_flash_attention_is_slower_than_flash_attention_2_by_its_measured_ratios(
    models,
) -> None:
    """Dao 2023 §4.1: FlashAttention-2 is 1.3-1.5x faster forward, ~2x faster backward."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    flash = layer_times(models["llama3-8b"], PLAN, perf, stack_named("fsdp"))
    triton = layer_times(
        models["llama3-8b"], PLAN, perf, replace(stack_named("fsdp"), attention="triton")
    )
    forward_ratio = (triton.attention_forward_s - 4e-6) / (flash.attention_forward_s - 4e-6)
    assert 1.3 <= forward_ratio <= 1.5
    backward_ratio = triton.attention_backward_s / flash.attention_backward_s
    assert 1.9 <= backward_ratio <= 2.1
    assert triton.gemm_forward_s == flash.gemm_forward_s


def test_xentropy_loss_moves_fewer_bytes_than_the_te_kernels_and_the_fp32_chain(models) -> None:
    """Per logit: xentropy 4 + 4 B, Transformer Engine 6 + 4 B, the FP32 chain 52 B."""
    from clusterforge.perf.logits import logits_times

    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    arch = models["llama3-8b"]
    fsdp = stack_named("fsdp")

    def loss_s(kernel: str) -> float:
        return sum(logits_times(arch, PLAN, perf, replace(fsdp, cross_entropy=kernel)))

    assert loss_s("xentropy") < loss_s("te") < 0.75 * loss_s("unfused")


def test_flash_attention_2_runs_at_its_measured_a100_rates(models) -> None:
    """Dao 2023 §1: FlashAttention-2 reaches up to 73 % (forward) and 63 % (backward) of the
    A100's 312 TFLOP/s, far above the H100-derived share of MAMF (~35 % of H100 peak)."""
    stack = stack_named("fsdp")
    perf = gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")
    times = layer_times(models["llama3-8b"], PLAN, perf, stack)
    arch = models["llama3-8b"]
    head_dim = arch.hidden_size / arch.num_heads
    forward_flops = 4.0 * arch.num_heads * head_dim * PLAN.seq_length**2 * 0.5  # causal
    forward_tflops = forward_flops / (times.attention_forward_s - 4e-6) / 1e12
    backward_tflops = 2.5 * forward_flops / times.attention_backward_s / 1e12
    assert forward_tflops == pytest.approx(0.73 * 312, rel=0.01)
    assert backward_tflops == pytest.approx(0.63 * 312, rel=0.02)


def test_flash_attention_2_gains_less_from_h100_than_the_gemms(models) -> None:
    """The same Ampere-instruction kernel: up to 335 TFLOP/s forward + backward on H100
    (Dao 2023 §4.1) against ~205 on A100, about 1.5x, where the GEMM ceilings (MAMF) differ
    2.9x."""
    a100 = _attention_s("a100-80gb", "flash", models)
    h100 = _attention_s("h100-sxm", "flash", models)
    assert 1.3 < a100 / h100 < 1.8


def test_torchtitan_runs_pytorch_sdpa_flash_attention_at_its_measured_rate(models) -> None:
    """torchtitan's attention is SDPA's in-tree FlashAttention-2 (cuDNN is opt-in in the
    PyTorch of its Dec 2024 runs, and its CP allows only flash and efficient attention):
    measured at 329.5 TFLOP/s forward on H100 without a causal mask, below the
    FlashAttention-2 estimate (0.44 x 794.5 = 350), with FlashAttention-2's backward ratio,
    and this 8K causal call at FlashAttention-2's causal share of it (333/370); GPUs without a
    measurement keep the FlashAttention-2 estimate."""
    assert stack_named("torchtitan").attention == "sdpa_flash"
    flash = _attention_s("h100-sxm", "flash", models)
    sdpa = _attention_s("h100-sxm", "sdpa_flash", models)
    estimate = 0.44 * 794.5
    assert sdpa / flash == pytest.approx(estimate / 329.5 / (333 / 370), rel=0.01)
    assert _attention_s("a100-80gb", "sdpa_flash", models) == _attention_s(
        "a100-80gb", "flash", models
    )


def test_b200_cudnn_attention_runs_at_its_measured_rate() -> None:
    """Transformer Engine's cuDNN attention on B200 runs at NVIDIA's measured rate (cudnn-
    frontend SDPA training benchmark, cuDNN 9.13.1, 8k causal), not at the FlashAttention-2
    estimate."""
    b200 = gpu_perf(load_catalog().gpus["b200"], "fp8")
    forward, ratio = _fused_attention_rates(stack_named("megatron-bridge"), b200)
    assert forward == pytest.approx(1171.0)
    assert ratio == pytest.approx(2.5 * 1171.0 / 943.0)


BLACKWELL = ("b200", "gb200", "b300", "gb300")


def _cudnn_rows() -> dict[str, dict[str, object]]:
    import tomllib
    from importlib import resources

    text = resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    return {row["gpu"]: row for row in tomllib.loads(text)["cudnn_attention"]}


def test_blackwell_cudnn_attention_rates_share_one_benchmark_shape() -> None:
    """Every Blackwell GPU has a cuDNN rate, read (or derived) at one benchmark shape and
    cuDNN release, so that no GPU falls back to the FlashAttention-2 estimate while its
    sibling runs at a measured rate."""
    rows = _cudnn_rows()
    assert set(BLACKWELL) <= set(rows)
    bases = {rows[gpu]["basis"] for gpu in BLACKWELL}
    assert len(bases) == 1, bases


def test_b200_runs_attention_no_faster_than_gb200(models) -> None:
    """Same Blackwell die; GB200's runs at a higher power limit (1,200 W against 1,000 W), so
    its attention cannot be slower than B200's, nor B300's faster than GB300's."""
    assert _attention_s("b200", "cudnn", models) >= _attention_s("gb200", "cudnn", models)
    assert _attention_s("b300", "cudnn", models) >= _attention_s("gb300", "cudnn", models)
    assert _attention_s("gb200", "cudnn", models) >= _attention_s("gb300", "cudnn", models)


def test_narrow_heads_run_cudnn_attention_at_its_head_dim_64_rates(models) -> None:
    # Shah et al. 2024 (FlashAttention-3, Figs. 5-6, H100, 4k): cuDNN 408 / 417 TFLOP/s
    # forward / backward with head dim 64 against 609 / 499 with head dim 128. The same
    # query width in twice as many heads of 64 does the same FLOPs at the lower rates.
    from clusterforge.perf.roofline import load_constants

    wide = models["llama3-8b"]
    narrow = wide.model_copy(update={"num_heads": 2 * wide.num_heads, "head_dim": 64})
    stack = stack_named("megatron-bridge")
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    overhead = load_constants().kernel_overhead_s
    t128 = layer_times(wide, PLAN, perf, stack)
    t64 = layer_times(narrow, PLAN, perf, stack)
    forward = (t64.attention_forward_s - overhead) / (t128.attention_forward_s - overhead)
    assert forward == pytest.approx(609.0 / 408.0)
    # backward/forward time ratio: 2.5 x forward rate / backward rate
    ratio64 = t64.attention_backward_s / t64.attention_forward_s
    ratio128 = t128.attention_backward_s / t128.attention_forward_s
    assert ratio64 / ratio128 == pytest.approx((408.0 / 417.0) / (609.0 / 499.0))


def test_sliding_window_layers_score_only_the_band_of_keys(models) -> None:
    # gpt-oss: every other layer attends over the last 128 keys. At 4,096 tokens such a
    # layer scores 4096 x 128 - 128^2 / 2 pairs against 4096^2 / 2 for a causal one.
    from clusterforge.perf.roofline import load_constants

    windowed = models["gpt-oss-120b"]
    assert (windowed.sliding_window, windowed.sliding_window_layers) == (128, 0.5)
    full = windowed.model_copy(update={"sliding_window": None, "sliding_window_layers": 0.0})
    plan = PLAN.with_(seq_length=4096)
    # FlashAttention-2 (megatron-core): the band counted at the causal kernel's rate; cuDNN's
    # measured windowed rates are tested in test_gpt_oss_kernels.py
    stack = stack_named("megatron-core")
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    overhead = load_constants().kernel_overhead_s
    s, w = 4096.0, 128.0
    want = 0.5 * (s * w - w * w / 2) / (s * s / 2) + 0.5
    got = (layer_times(windowed, plan, perf, stack).attention_forward_s - overhead) / (
        layer_times(full, plan, perf, stack).attention_forward_s - overhead
    )
    assert got == pytest.approx(want)
    # a window as long as the sequence changes nothing
    long_window = windowed.model_copy(update={"sliding_window": 4096})
    assert layer_times(long_window, plan, perf, stack) == layer_times(full, plan, perf, stack)


def _sdpa_forward_s(models, seq_length: int, cp: int, gpu_id: str = "h100-sxm") -> float:
    """Forward seconds of torchtitan's SDPA FlashAttention-2 for Llama 3.1 8B, less the launch."""
    from clusterforge.perf.attention import attention_forward_s
    from clusterforge.perf.roofline import load_constants

    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, cp=cp, dp=8 // cp),
        micro_batch=1,
        seq_length=seq_length,
        recompute="none",
    )
    perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
    arch = models["llama3-8b"]
    seconds = attention_forward_s(arch, plan, perf, stack_named("torchtitan"))
    return seconds - load_constants().kernel_overhead_s


def _sdpa_noncausal_s(models, seq_length: int, cp: int) -> float:
    """The same FLOPs at SDPA's measured (non-causal) H100 rate, scaled to the part's peak."""
    from clusterforge.perf.roofline import load_constants

    arch = models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    flops = 4.0 * arch.num_heads * (arch.hidden_size / arch.num_heads) * seq_length**2 / 2 / cp
    rate = load_constants().sdpa_flash_tflops["h100-sxm"] * perf.attention_scale * 1e12
    return flops / rate


@pytest.mark.parametrize(
    ("seq_length", "causal_over_noncausal"),
    [(8192, 333 / 370), (16384, 335 / 370), (32768, 335 / 370), (4096, 319 / 368)],
)
def test_a_causal_sdpa_flash_call_runs_at_flash_attention_2_s_causal_rate(
    models, seq_length, causal_over_noncausal
) -> None:
    """SDPA's measured H100 rate is non-causal; FlashAttention-2's causal forward keeps
    333/370 of it at 8K and 335/370 from 16K on (Shah et al. 2024, Fig. 5, head dim 128)."""
    causal = _sdpa_forward_s(models, seq_length, cp=1)
    expected = _sdpa_noncausal_s(models, seq_length, cp=1) / causal_over_noncausal
    assert causal == pytest.approx(expected, rel=1e-6)


def test_under_pytorch_context_parallelism_only_the_diagonal_step_is_causal(models) -> None:
    """PyTorch's load-balanced ring runs its first step (the rank's own K, V: 1/cp of its
    pairs) with is_causal and every later step without a mask (``_is_causal_behavior``)."""
    cp, seq = 4, 131072
    noncausal = _sdpa_noncausal_s(models, seq, cp)
    expected = noncausal * (1 / cp / (335 / 370) + (1 - 1 / cp))
    assert _sdpa_forward_s(models, seq, cp) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("length", "measured"), [(512, 50.0), (4096, 74.0), (2**12.5, 76.0)])
def test_triton_attention_on_a100_runs_at_dao_2023_fig_4d_by_length(length, measured) -> None:
    """Forward + backward at the figure's causal bars (backward FLOPs 2.5x the forward's),
    interpolated in log2 of the length; the backward/forward ratio is the summary one."""
    perf = gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")
    triton = replace(stack_named("fsdp"), attention="triton")
    forward, ratio = _fused_attention_rates(triton, perf, length=length)
    flash_ratio = _fused_attention_rates(stack_named("fsdp"), perf, length=length)[1]
    assert ratio == pytest.approx(flash_ratio * 2.0 / 1.4)
    fwd_bwd_tflops = forward * 3.5 / (1.0 + ratio)
    assert fwd_bwd_tflops == pytest.approx(measured * perf.attention_scale)


def test_triton_attention_without_a_measured_length_keeps_the_summary_slowdowns() -> None:
    """H100 has no Triton bars, and an A100 call without a length has no point on them."""
    for gpu_id, length in (("h100-sxm", 4096.0), ("a100-80gb", None)):
        perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
        triton = replace(stack_named("fsdp"), attention="triton")
        flash = _fused_attention_rates(stack_named("fsdp"), perf, length=length)
        forward, _ = _fused_attention_rates(triton, perf, length=length)
        assert forward == pytest.approx(flash[0] / 1.4)
