"""The element-wise work of fms-fsdp's eager Llama block (IBM foundation-model-stack
``LLaMABlock`` at f29e546d), as the op census counts it (benchmarks/eager_llama_census.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.attention import attention_backward_s
from clusterforge.perf.compute import _weight_gemms_s, layer_times
from clusterforge.perf.eager_llama import llama_census_backward, llama_census_forward
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

PLAN = ParallelPlan(JobLayout(), micro_batch=2, seq_length=256, recompute="none")


def _llama(kv_heads: int) -> ModelArch:
    return ModelArch(
        num_layers=1,
        hidden_size=256,
        num_heads=4,
        num_kv_heads=kv_heads,
        ffn_hidden_size=682,
        vocab_size=32000,
        seq_length=256,
        gated_mlp=True,
    )


def _charged_s(arch: ModelArch, pass_name: str) -> float:
    """The layer's element-wise seconds: its time less its GEMMs and its attention."""
    stack = stack_named("fsdp")
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    times = layer_times(arch, PLAN, perf, stack)
    gemm_fwd, gemm_bwd = _weight_gemms_s(arch, PLAN, perf, stack)
    if pass_name == "forward":
        return times.forward_s - gemm_fwd - times.attention_forward_s
    return times.backward_s - gemm_bwd - attention_backward_s(arch, PLAN, perf, stack)


@pytest.mark.parametrize("kv_heads", [2, 4])
@pytest.mark.parametrize("pass_name", ["forward", "backward"])
def test_fms_eager_block_is_charged_as_the_census_counts(pass_name: str, kv_heads: int) -> None:
    """The fsdp stack's eager Llama layer costs the census's bytes and kernels: FP32
    RMSNorm, the real-valued rotary (per-token table gather, broadcast mul and sum in FP32),
    K and V expanded to the query heads under GQA (and dV copied back), SwiGLU."""
    pytest.importorskip("torch")
    from benchmarks.eager_llama_census import llama_census

    recorded = llama_census(
        h=256, heads=4, kv_heads=kv_heads, seq=PLAN.seq_length, batch=PLAN.micro_batch, code="fms"
    )[pass_name]
    nbytes = sum(b for _, b in recorded.ops)
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    expected = memory_time_s(nbytes, perf, num_kernels=len(recorded.ops))
    assert _charged_s(_llama(kv_heads), pass_name) == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("kv_heads", [2, 4])
def test_fms_kernel_counts_match_the_census(kv_heads: int) -> None:
    pytest.importorskip("torch")
    from benchmarks.eager_llama_census import llama_census

    recorded = llama_census(h=256, heads=4, kv_heads=kv_heads, seq=64, code="fms")
    plan = PLAN.with_(seq_length=64)
    arch, stack = _llama(kv_heads), stack_named("fsdp")
    forward, backward = (
        llama_census_forward(arch, plan, stack),
        llama_census_backward(arch, plan, stack),
    )
    assert forward is not None and backward is not None
    assert (forward[1], backward[1]) == (
        len(recorded["forward"].ops),
        len(recorded["backward"].ops),
    )


def test_compiled_fms_block_keeps_the_fused_charge() -> None:
    compiled = replace(stack_named("fsdp"), fused_elementwise=True)
    assert llama_census_forward(_llama(2), PLAN, compiled) is None
    assert llama_census_backward(_llama(2), PLAN, compiled) is None


def test_the_two_llama_codes_differ_where_their_rotaries_do() -> None:
    """fms rotates in FP32 through a 2x2 table (36 B per Q/K element a pass) where torchtitan
    multiplies complex numbers (20 B), so the same layer costs fms more."""
    arch = _llama(2)
    fms = llama_census_forward(arch, PLAN, stack_named("fsdp"))
    titan = llama_census_forward(arch, PLAN, stack_named("torchtitan"))
    assert fms is not None and titan is not None
    assert fms[0] > titan[0]
