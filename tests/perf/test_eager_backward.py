"""The backward element-wise work of an eager PyTorch MPT block, as the op census counts it
(benchmarks/eager_op_census.py; LLM Foundry v0.3.0 ``MPTBlock``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.attention import attention_backward_s, flash_unpad_passes
from clusterforge.perf.compute import _weight_gemms_s, layer_times
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

H = 2048
MPT = ModelArch(
    num_layers=24,
    hidden_size=H,
    num_heads=16,
    vocab_size=50368,
    seq_length=2048,
    position_embedding="learned",
    normalization="layernorm",
    linear_bias=True,
)
PLAN = ParallelPlan(JobLayout(), micro_batch=4, seq_length=2048, recompute="none")
TRITON = replace(stack_named("fsdp"), attention="triton")
FLASH = replace(stack_named("fsdp"), attention="flash", flash_unpad=True)


def _elementwise_backward_s(stack) -> float:  # type: ignore[no-untyped-def]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    times = layer_times(MPT, PLAN, perf, stack)
    _, gemm_bwd = _weight_gemms_s(MPT, PLAN, perf, stack)
    attention = attention_backward_s(MPT, PLAN, perf, stack)
    _, (unpad, unpad_kernels) = flash_unpad_passes(MPT, PLAN, stack)
    if unpad:
        attention += memory_time_s(unpad, perf, num_kernels=unpad_kernels)
    return times.backward_s - gemm_bwd - attention


@pytest.mark.parametrize(("stack", "per_token_h", "kernels"), [(TRITON, 96, 14), (FLASH, 86, 12)])
def test_mpt_backward_is_charged_as_the_census_counts(stack, per_token_h, kernels) -> None:  # type: ignore[no-untyped-def]
    # LayerNorm backward 2 x 10, residual-gradient sums 2 x 6, gelu_backward 6 x 4h, bias
    # gradients 2 x 9h, + Triton's dq_accum zero/copy 10 and the Wqkv split's cat 4 x 3
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    expected = memory_time_s(per_token_h * H * tokens_per_gpu(PLAN), perf, num_kernels=kernels)
    assert _elementwise_backward_s(stack) == pytest.approx(expected)


def test_rmsnorm_blocks_keep_the_backward_ratio() -> None:
    from clusterforge.perf.eager_backward import census_backward

    llama = ModelArch(num_layers=32, hidden_size=4096, num_heads=32, vocab_size=128256)
    assert census_backward(llama, PLAN, stack_named("fsdp")) is None
    assert census_backward(MPT, PLAN, stack_named("megatron-core")) is None


@pytest.mark.parametrize("attention", ["triton", "flash"])
def test_the_census_counts_what_the_model_charges(attention: str) -> None:
    """Runs the census on CPU tensors and compares bytes and kernels with the model."""
    pytest.importorskip("torch")
    from benchmarks.eager_op_census import census

    from clusterforge.perf.eager_backward import census_backward

    h, batch, seq = 256, 2, 256
    recorded = census(attention, h=h, batch=batch, seq=seq)["backward"]
    arch = MPT.model_copy(update={"hidden_size": h, "num_heads": 4})
    plan = PLAN.with_(micro_batch=batch, seq_length=seq)
    stack = TRITON if attention == "triton" else FLASH
    counted = census_backward(arch, plan, stack)
    assert counted is not None
    nbytes = sum(b for _, b in recorded.ops)
    assert counted[1] == len(recorded.ops)
    assert counted[0] == pytest.approx(nbytes, rel=0.02)  # the census adds the bias vectors


LLAMA = ModelArch(
    num_layers=1,
    hidden_size=256,
    num_heads=4,
    num_kv_heads=2,
    ffn_hidden_size=682,
    vocab_size=32000,
    seq_length=256,
    gated_mlp=True,
)


@pytest.mark.parametrize("pass_name", ["forward", "backward"])
def test_torchtitan_eager_block_is_charged_as_the_census_counts(pass_name: str) -> None:
    """torchtitan's eager Llama block (9dec370): the layer's element-wise time is the
    census's bytes and kernels (RMSNorm's FP32 upcast, complex rotary, repeat_kv, SwiGLU)."""
    pytest.importorskip("torch")
    from benchmarks.eager_llama_census import llama_census

    batch, seq = 2, 256
    recorded = llama_census(h=256, heads=4, kv_heads=2, seq=seq, batch=batch)[pass_name]
    nbytes = sum(b for _, b in recorded.ops)
    plan = PLAN.with_(micro_batch=batch, seq_length=seq)
    stack = stack_named("torchtitan")
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    times = layer_times(LLAMA, plan, perf, stack)
    gemm_fwd, gemm_bwd = _weight_gemms_s(LLAMA, plan, perf, stack)
    if pass_name == "forward":
        charged = times.forward_s - gemm_fwd - times.attention_forward_s
    else:
        charged = times.backward_s - gemm_bwd - attention_backward_s(LLAMA, plan, perf, stack)
    expected = memory_time_s(nbytes, perf, num_kernels=len(recorded.ops))
    assert charged == pytest.approx(expected, rel=0.02)


def test_torchtitan_compiled_block_keeps_the_fused_charge() -> None:
    from clusterforge.perf.eager_backward import census_backward

    compiled = replace(stack_named("torchtitan"), fused_elementwise=True)
    assert census_backward(LLAMA, PLAN, compiled) is None


def test_census_reads_an_expanded_tensor_once() -> None:
    """repeat_kv's copy reads K (V) as stored, kv_dim wide, and writes all q_dim columns."""
    pytest.importorskip("torch")
    from benchmarks.eager_llama_census import llama_census

    h, tokens = 256, 2 * 64
    recorded = llama_census(h=h, heads=4, kv_heads=2)["forward"]
    clones = [b for name, b in recorded.ops if name == "clone"]
    assert clones == [(2 * 128 + 2 * 256) * tokens] * 2
