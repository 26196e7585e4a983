"""Megatron-Core's one-ahead parameter all-gather: a grouped expert linear whose weights span
several buckets waits on all but the first in series (``finish_param_sync`` dispatches the
next bucket group only after waiting on its own)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import overlapped_s
from clusterforge.perf.exposure import dp_exposed_s
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.param_gather import (
    bucket_params,
    expert_gather_chain_s,
    serial_bucket_waits,
)
from clusterforge.perf.stack import stack_named

BRIDGE = stack_named("megatron-bridge")


def _plan(dp: int, ep: int, zero_stage: int = 1) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=dp, ep=ep),
        global_batch=dp * 4,
        micro_batch=4,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=zero_stage,
    )


def test_bucket_size_is_megatron_cores_default() -> None:
    # max(40,000,000, 1,000,000 x DP)
    assert bucket_params(_plan(dp=64, ep=8)) == 64e6
    assert bucket_params(_plan(dp=16, ep=8)) == 40e6


def test_gpt_oss_expert_linears_wait_on_four_buckets_per_layer_at_dp_64() -> None:
    # 16 local experts; fc1 weights 2,880 x 5,760 (16.6 M): 4 close a 64 M bucket, 4 buckets,
    # 3 waited on in series; fc2 weights 2,880 x 2,880 (8.3 M): 8 per bucket, 2 buckets, 1
    fc1, fc2 = 2880 * 5760, 2880 * 2880
    assert serial_bucket_waits(16, fc1, 64e6) == pytest.approx(3.0)
    assert serial_bucket_waits(16, fc2, 64e6) == pytest.approx(1.0)
    # one weight per module, or weights each past the bucket size: one per bucket, no wait
    # beyond the one dispatched ahead for a single weight
    assert serial_bucket_waits(1, 117e6, 64e6) == 0.0
    assert serial_bucket_waits(4, 117e6, 64e6) == pytest.approx(3.0)


def test_chain_time_is_the_waits_times_one_bucket_gather(models, h100_comm) -> None:
    arch, plan = models["gpt-oss-120b"], _plan(dp=64, ep=8)
    edp = rank_groups(plan, "edp")
    assert edp.shape[1] == 8
    one = h100_comm.collective_time_s("all_gather", 64e6 * 2.0, edp)
    got = expert_gather_chain_s(arch, plan, h100_comm, BRIDGE, layers=36)
    assert got == pytest.approx(36 * 4.0 * one)


def test_no_chain_without_its_cause(models, h100_comm) -> None:
    arch = models["gpt-oss-120b"]
    # one expert-data-parallel rank: nothing to gather
    assert expert_gather_chain_s(arch, _plan(dp=64, ep=64), h100_comm, BRIDGE, 36) == 0.0
    # PyTorch stacks gather otherwise; no overlapped gather; FSDP gathers unit by unit
    plan = _plan(dp=64, ep=8)
    assert expert_gather_chain_s(arch, plan, h100_comm, stack_named("fsdp"), 36) == 0.0
    no_overlap = replace(BRIDGE, dp_overlap=False)
    assert expert_gather_chain_s(arch, plan, h100_comm, no_overlap, 36) == 0.0
    zero3 = _plan(dp=64, ep=8, zero_stage=3)
    assert expert_gather_chain_s(arch, zero3, h100_comm, BRIDGE, 36) == 0.0
    dense = models["llama3-8b"]
    assert expert_gather_chain_s(dense, plan, h100_comm, BRIDGE, 32) == 0.0


def test_serial_gathers_are_exposed_whole_and_leave_the_forward_window(h100_comm) -> None:
    from clusterforge.perf.exposure import _dp_traffic_s

    plan, params, experts, forward, backward = _plan(dp=64, ep=8), 10e9, 9e9, 0.25, 0.45
    reduce, gather = _dp_traffic_s(plan, params - experts, h100_comm, BRIDGE, "dpcp")
    expert_reduce, expert_gather = _dp_traffic_s(plan, experts, h100_comm, BRIDGE, "edp")
    reduce, gather = reduce + expert_reduce, gather + expert_gather

    def exposed(serial_s: float) -> float:
        return dp_exposed_s(
            plan,
            params,
            h100_comm,
            BRIDGE,
            forward,
            backward,
            5,
            expert_params=experts,
            serial_gather_s=serial_s,
        )

    serial = 0.5 * gather
    want = overlapped_s(reduce, backward) + overlapped_s(gather - serial, forward) + serial
    assert exposed(serial) == pytest.approx(want)
    # never more serial time than there is gather
    capped = exposed(10 * gather)
    assert capped == pytest.approx(overlapped_s(reduce, backward) + gather)
