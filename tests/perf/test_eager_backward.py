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
    assert census_backward(llama, PLAN, stack_named("torchtitan")) is None
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
