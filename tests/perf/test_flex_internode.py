"""DeepEP across NVLink domains: one RDMA row per token and destination node, forwarded to
the node's ranks over NVLink, where the all-to-all dispatcher sends every routed copy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.ep_exposure import ep_exposed_s, flex_domains_per_token
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

FLEX = replace(stack_named("megatron-bridge"), moe_dispatcher="flex")


def _ep64_plan() -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=64, ep=64),
        global_batch=128,
        micro_batch=2,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )


def test_a_token_crosses_once_per_node_holding_one_of_its_experts(models) -> None:
    arch = models["gpt-oss-120b"]  # 128 experts, top 4; EP 64 over 8 nodes of 8
    group = rank_groups(_ep64_plan(), "ep")[0]
    # 16 experts per node: a node is missed by 4 draws with C(112, 4) / C(128, 4)
    want = 8 * (1 - (112 * 111 * 110 * 109) / (128 * 127 * 126 * 125))
    assert flex_domains_per_token(arch, group, 8) == pytest.approx(want)
    assert flex_domains_per_token(arch, group, 8) < arch.top_k
    assert flex_domains_per_token(arch, group, 0) == arch.top_k


def test_flex_across_nodes_moves_fewer_bytes_than_every_routed_copy(
    models, h100, h100_comm
) -> None:
    arch, plan = models["gpt-oss-120b"], _ep64_plan()
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), FLEX)
    per_node = ep_exposed_s(plan, arch, h100_comm, FLEX, times, h100, False, 8)
    per_copy = ep_exposed_s(plan, arch, h100_comm, FLEX, times, h100, False, 0)
    group = rank_groups(plan, "ep")[0]
    share = flex_domains_per_token(arch, group, 8) / arch.top_k
    assert per_node < per_copy
    assert per_node == pytest.approx(share * per_copy, rel=0.05)
