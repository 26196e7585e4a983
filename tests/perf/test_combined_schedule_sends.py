"""Megatron-Core's combined 1F1B schedule (``moe_a2a_overlap``) with VP at PP 2 sends each
combined step's activation and gradient only after the step, and the next step waits on them
(``TransformerModelChunkSchedulePlan.run``, docs/validation.md, "Adopted: the combined 1F1B
schedule's stage-boundary send at PP 2"): the steady-state stage-boundary sends are exposed,
at the model's own transfer time; everywhere else they stay overlapped."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import overlapped_s
from clusterforge.perf.exposure import (
    ACT_BYTES,
    combined_schedule_sends_exposed,
    pp_exposed_s,
)
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.stack import stack_named

BRIDGE = stack_named("megatron-bridge")
OVERLAP = replace(BRIDGE, moe_a2a_overlap=True)
MICRO = 128  # micro-batches per step


def _plan(pp: int = 2, vpp: int = 12) -> ParallelPlan:
    """The 26.02 Qwen3-30B-A3B H100 layout (PP 2 on 16 GPUs): EP 8 and DP 8 per stage,
    MBS 1, 4,096 tokens."""
    layout = JobLayout(pp=pp, dp=8, ep=8, vpp=vpp)
    return ParallelPlan(layout, micro_batch=1, global_batch=1024, seq_length=4096)


def _one_send_s(plan: ParallelPlan, arch, comm) -> float:
    size = plan.micro_batch * plan.seq_length * arch.hidden_size * ACT_BYTES
    return comm.collective_time_s("sendrecv", size, rank_groups(plan, "pp"))


def test_scope_is_moe_with_the_overlap_at_pp2_with_vp(models) -> None:
    moe, dense = models["qwen3-30b-a3b"], models["llama3-8b"]
    assert combined_schedule_sends_exposed(_plan(), moe, OVERLAP)
    assert not combined_schedule_sends_exposed(_plan(), moe, BRIDGE)  # no EP overlap
    assert not combined_schedule_sends_exposed(_plan(), dense, OVERLAP)  # dense
    assert not combined_schedule_sends_exposed(_plan(pp=4), moe, OVERLAP)  # PP 4
    assert not combined_schedule_sends_exposed(_plan(vpp=1), moe, OVERLAP)  # no VP
    assert not combined_schedule_sends_exposed(_plan(pp=1, vpp=1), moe, OVERLAP)


def test_each_combined_step_waits_on_its_stage_boundary_transfer(models, h100_comm) -> None:
    """VP x m combined steps per stage, each exposed for one transfer of its activation and
    gradient (two sends at the model's own time); fill and drain as before."""
    arch, plan = models["qwen3-30b-a3b"], _plan()
    one_s = _one_send_s(plan, arch, h100_comm)
    assert one_s > 0.0
    fill_drain_s = 2 * (plan.layout.pp - 1) * one_s
    combined_steps = plan.layout.vpp * MICRO
    exposed_s = pp_exposed_s(plan, arch, h100_comm, OVERLAP, MICRO)
    assert exposed_s == pytest.approx(fill_drain_s + combined_steps * 2 * one_s)
    hidden_s = pp_exposed_s(plan, arch, h100_comm, BRIDGE, MICRO)
    steady_s = combined_steps * 2 * one_s
    assert hidden_s == pytest.approx(fill_drain_s + overlapped_s(steady_s, float("inf")))
    assert exposed_s > hidden_s


@pytest.mark.parametrize(
    ("name", "pp", "vpp", "stack"),
    [
        ("qwen3-30b-a3b", 2, 12, BRIDGE),
        ("llama3-8b", 2, 12, OVERLAP),
        ("qwen3-30b-a3b", 4, 6, OVERLAP),
        ("qwen3-30b-a3b", 2, 1, OVERLAP),
    ],
)
def test_unchanged_outside_the_scope(models, h100_comm, name, pp, vpp, stack) -> None:
    """Outside the scope the value is the overlapped one it was before."""
    arch, plan = models[name], _plan(pp=pp, vpp=vpp)
    no_overlap = replace(stack, moe_a2a_overlap=False)
    assert pp_exposed_s(plan, arch, h100_comm, stack, MICRO) == pytest.approx(
        pp_exposed_s(plan, arch, h100_comm, no_overlap, MICRO)
    )
