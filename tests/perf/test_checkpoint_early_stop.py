"""PyTorch's non-reentrant activation checkpointing stops the backward's rerun of a block
once every tensor the forward saved is rebuilt: the MLP output projection, whose saved
inputs are packed before its GEMM runs, and the residual add after it are not rerun."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.early_stop import early_stop_skipped_s, recomputed_flops_per_token
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.roofline import gemm_time_s, gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named


def _plan(recompute: str = "full", *, tp: int = 1, precision: str = "bf16") -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=tp, pp=1, dp=8 // tp),
        global_batch=96,
        micro_batch=12,
        seq_length=512,
        recompute=recompute,  # type: ignore[arg-type]
        zero_stage=3,
        sequence_parallel=False,
        precision=precision,  # type: ignore[arg-type]
    )


@pytest.fixture
def dense(models):
    return models["gpt3-1.3b"]


def test_fsdp_rerun_skips_the_mlp_output_projection_and_last_residual_add(dense) -> None:
    perf = gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")
    plan = _plan()
    times = layer_times(dense, plan, perf, stack_named("fsdp"))
    h, tokens = dense.hidden_size, 12 * 512
    skipped = gemm_time_s(tokens, h, ffn_size(dense), perf) + memory_time_s(6 * h * tokens, perf)
    assert times.recompute_s == pytest.approx(times.forward_s - skipped, rel=1e-9)
    assert times.recompute_s < 0.8 * times.forward_s  # a third of the GEMMs and more


@pytest.mark.parametrize(
    ("stack_name", "plan"),
    [
        ("megatron-core", _plan()),  # Megatron's own (reentrant) checkpoint function
        ("torchtitan", _plan()),  # not established for torchtitan's releases
        ("fsdp", _plan(precision="fp8")),  # torchao's float8 matmul saves after its GEMM
        ("fsdp", _plan(tp=2)),
        ("fsdp", _plan("selective")),
    ],
)
def test_the_whole_forward_reruns_where_the_early_stop_is_not_established(
    dense, stack_name, plan
) -> None:
    perf = gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")
    assert early_stop_skipped_s(dense, plan, perf, stack_named(stack_name)) == 0.0


def test_a_compiled_fsdp_block_reruns_whole(dense) -> None:
    perf = gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")
    compiled = replace(stack_named("fsdp"), fused_elementwise=True)
    times = layer_times(dense, _plan(), perf, compiled)
    assert times.recompute_s == times.forward_s


def test_hfu_counts_the_rerun_without_the_skipped_projection(dense) -> None:
    """The HFU numerator counts what the GPU re-executes: 2 h f FLOPs per token and layer
    fewer than a whole forward when the rerun stops early."""
    from clusterforge.perf.flops import recompute_flops_per_token

    plan = _plan()
    rerun = recomputed_flops_per_token(dense, plan, stack_named("fsdp"))
    whole = recompute_flops_per_token(dense, 512, "full")
    skipped = dense.num_layers * 2.0 * dense.hidden_size * ffn_size(dense)
    assert rerun == pytest.approx(whole - skipped, rel=1e-12)
    assert recomputed_flops_per_token(dense, plan, stack_named("megatron-core")) is None
