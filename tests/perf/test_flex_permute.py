"""The flex dispatcher's standalone permutation and unpermutation around its dispatch and
combine kernels (DeepEP: Megatron-Core's ``permute`` / ``unpermute``; HybridEP: its
``permute_launcher`` / ``unpermute_launcher`` unless ``fuse_permute_dispatch`` is set)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.flex_permute import FLEX_PERMUTE_KERNELS, flex_permute_bytes, flex_permute_s
from clusterforge.perf.moe import flex_ranks_per_token
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

ALLTOALL = stack_named("megatron-bridge")
FLEX = replace(ALLTOALL, moe_dispatcher="flex", moe_flex_sms=32)


def _ep8_plan(micro_batch: int = 4) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=64, ep=8),
        global_batch=1280,
        micro_batch=micro_batch,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )


def test_each_pass_reads_and_writes_the_received_rows_and_the_routed_copies(models) -> None:
    arch, plan = models["gpt-oss-120b"], _ep8_plan()
    tokens = 4 * 4096
    received = tokens * flex_ranks_per_token(arch, plan)  # ~3.34 ranks per token at EP 8
    copies = tokens * 4
    # permute: read the received rows, write the copies; unpermute: the reverse; BF16
    want = 2 * (received + copies) * 2880 * 2
    assert flex_permute_bytes(arch, plan) == pytest.approx(want)
    assert received < copies  # a rank holding two of a token's experts gets it once


def test_forward_and_backward_each_run_both_passes(models, h100) -> None:
    arch, plan = models["gpt-oss-120b"], _ep8_plan()
    perf = gpu_perf(h100, "bf16")
    forward, backward = flex_permute_s(arch, plan, perf, FLEX)
    want = memory_time_s(flex_permute_bytes(arch, plan), perf, num_kernels=FLEX_PERMUTE_KERNELS)
    assert forward == pytest.approx(want)
    assert backward == pytest.approx(want)


def test_only_the_flex_dispatcher_of_an_moe_model_pays_them(models, h100) -> None:
    perf = gpu_perf(h100, "bf16")
    plan = _ep8_plan()
    assert flex_permute_s(models["gpt-oss-120b"], plan, perf, ALLTOALL) == (0.0, 0.0)
    dense = models["gpt-oss-120b"].model_copy(update={"num_experts": 1, "top_k": 1})
    assert flex_permute_s(dense, plan, perf, FLEX) == (0.0, 0.0)


def test_the_layer_carries_them(models, h100, monkeypatch) -> None:
    import clusterforge.perf.compute as compute

    arch, plan = models["gpt-oss-120b"], _ep8_plan()
    perf = gpu_perf(h100, "bf16")
    forward, backward = flex_permute_s(arch, plan, perf, FLEX)
    with_passes = layer_times(arch, plan, perf, FLEX)
    monkeypatch.setattr(compute, "flex_permute_s", lambda *_: (0.0, 0.0))
    without = layer_times(arch, plan, perf, FLEX)
    assert with_passes.forward_s - without.forward_s == pytest.approx(forward)
    assert with_passes.backward_s - without.backward_s == pytest.approx(backward)
