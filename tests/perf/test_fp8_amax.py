"""Delayed scaling's amax reductions: Transformer Engine all-reduces the stage's amaxes over
its TP x DP x CP GPUs, blocking, after each model chunk's forward and backward of every
micro-batch (Megatron-Core's one ``fp8_autocast`` per ``TransformerBlock``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.fp8_amax import (
    amax_reduction_s,
    amax_reductions_per_micro,
    fp8_tensors_per_layer,
)
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named
from clusterforge.perf.step import predict_step

NEMO = stack_named("nemo")
LAYOUT = JobLayout(tp=4, pp=4, dp=4, vpp=5)
STAGES = (20, 20, 20, 20)


def _plan(layout: JobLayout = LAYOUT, **changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        layout, global_batch=64, micro_batch=1, seq_length=4096, recompute="none", precision="fp8"
    )
    return plan.with_(**changes)


@dataclass
class ReduceCounter:
    """Every all-reduce takes 1 s and is recorded (size, group size)."""

    calls: list[tuple[float, int]]

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        assert collective == "all_reduce"
        self.calls.append((size_bytes, groups.shape[1]))
        return 1.0


def test_one_reduction_per_chunk_each_way_over_the_whole_stage() -> None:
    arch = load_catalog().models["llama3-70b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "fp8")
    fabric = ReduceCounter([])
    seconds = amax_reduction_s(arch, _plan(), fabric, NEMO, perf, STAGES, 20)  # type: ignore[arg-type]
    # the forward's 12 amaxes per layer (3 x 4 GEMMs), the backward's 8 (2 x 4), 4 B each,
    # over every GPU of the stage (TP 4 x DP 4)
    assert sorted(set(fabric.calls)) == [(20 * 8 * 4, 16), (20 * 12 * 4, 16)]
    assert amax_reductions_per_micro(_plan(), NEMO, STAGES, 20) == (5, 5)
    # each reduction's concatenation and fused update read and write its amaxes and their
    # 1,024-long histories (NeMo's recipe)
    updates_s = sum(
        memory_time_s(20 * n * 4 * (2 + 2 * 1024), perf, num_kernels=2) for n in (12, 8)
    )
    assert seconds == pytest.approx(2 * 5 * 1.0 + 5 * updates_s, rel=1e-9)


def test_grouped_experts_carry_an_amax_per_local_expert_gemm() -> None:
    mixtral = load_catalog().models["mixtral-8x7b"]
    plan = _plan(JobLayout(tp=1, pp=1, dp=16, ep=4))
    assert fp8_tensors_per_layer(mixtral, plan) == (3 * (2 + 2 * 2), 2 * (2 + 2 * 2))


@pytest.mark.parametrize(
    ("plan", "stack"),
    [
        (_plan(precision="bf16"), NEMO),
        (_plan(), stack_named("megatron-bridge")),  # current scaling: no amax buffer
        (_plan(), stack_named("torchtitan")),  # torchao's dynamic scaling
        (_plan(), replace(stack_named("maxtext"), fp8_scaling="delayed")),  # not TE's autocast
    ],
)
def test_no_reduction_outside_transformer_engine_delayed_scaling(plan, stack) -> None:
    assert amax_reductions_per_micro(plan, stack, STAGES, 20) == (0, 0)


def test_full_recomputation_reduces_the_forward_amaxes_again_per_recomputed_layer() -> None:
    full = _plan(recompute="full")
    assert amax_reductions_per_micro(full, NEMO, STAGES, 20) == (5 + 20, 5)
    partial = _plan(recompute="full", recompute_layers=4)
    assert amax_reductions_per_micro(partial, NEMO, STAGES, 20) == (5 + 4, 5)


def test_delayed_scaling_step_pays_the_reductions_in_every_micro_batch(h100, h100_comm) -> None:
    arch = load_catalog().models["llama3-70b"]
    plan = _plan()
    with_reductions = predict_step(arch, plan, h100, h100_comm, 8, NEMO)
    without = predict_step(arch, plan, h100, h100_comm, 8, replace(NEMO, fp8_amax_all_reduce=False))
    per_micro_s = amax_reduction_s(arch, plan, h100_comm, NEMO, gpu_perf(h100, "fp8"), STAGES, 20)
    micro_batches = 64 // 4
    bubble = (4 - 1) / 5
    extra_s = with_reductions.step_time_s - without.step_time_s
    assert per_micro_s > 0
    assert extra_s == pytest.approx((micro_batches + bubble) * per_micro_s, rel=0.05)
