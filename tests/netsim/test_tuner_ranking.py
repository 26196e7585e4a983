"""NCCL ranks algorithm/protocol pairs by its own latency estimate (``comm->latencies``).

For broadcast and reduce on a ring graph found with ``sameChannels`` ``ncclTopoTuneModel``
(``src/graph/tuning.cc``, NVIDIA/nccl v2.24.3-1 to commit 5067397) charges the base latency
plus one hardware step, not a step per rank: across nodes LL128 ranks at 14 + 4.0 us and
Simple at 8.4 + 14 us, so NCCL runs Simple as soon as its bandwidth gain pays 4.4 us.  The
call still takes the model's own time (``latency.latency_s`` and the bandwidth side).
"""

from __future__ import annotations

import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.latency import nccl_latency_s, tuner_latency_s, tuner_offset_s
from clusterforge.netsim.tuner import TuningContext
from tests.netsim.designs import make_design

MIB = 2**20


def _ctx(num_nodes: int, collective: str = "broadcast") -> TuningContext:
    return TuningContext(
        collective=collective,  # type: ignore[arg-type]
        num_ranks=8 * num_nodes,
        num_nodes=num_nodes,
        generation="hopper",
        intra="nvlink",
        net_path_latency_s=2e-6,
        node_net_gbyte_per_s=368.0,
        num_channels=8 if num_nodes > 1 else 0,
        intra_gbyte_per_s=360.0,
    )


def test_chain_ranks_at_base_plus_one_step():
    """NCCL's table: base latency (LL 6.6, LL128 14, Simple 8.4 us) plus one step of
    ``hwLat[NET][RING]`` (2.7, 4.0, 14 us) across nodes, ``hwLat[NVLINK][RING]`` (0.6, 1.9,
    3.4 us) inside one; the path latency of our graph is not part of it."""
    four = _ctx(4)
    assert tuner_latency_s("chain", "ll", four) == pytest.approx(9.3e-6)
    assert tuner_latency_s("chain", "ll128", four) == pytest.approx(18.0e-6)
    assert tuner_latency_s("chain", "simple", four) == pytest.approx(22.4e-6)
    one = _ctx(1)
    assert tuner_latency_s("chain", "ll128", one) == pytest.approx(15.9e-6)
    assert tuner_latency_s("chain", "simple", one) == pytest.approx(11.8e-6)
    # the model's own latency of a call down the 32-rank chain is longer
    assert nccl_latency_s("chain", "simple", four) > 5 * tuner_latency_s("chain", "simple", four)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "nvls", "nvls_tree", "collnet"])
def test_other_algorithms_rank_by_the_model_s_own_latency(algorithm):
    ctx = _ctx(4, "all_reduce")
    for protocol in ("ll", "ll128", "simple"):
        assert tuner_offset_s(algorithm, protocol, ctx) == 0.0  # type: ignore[arg-type]


def test_a_broadcast_across_nodes_switches_to_simple_where_nccl_does():
    """4 DGX H100 nodes: below 8 MiB LL128's lower latency wins NCCL's ranking; from 8 MiB
    the 4.4 us Simple pays in NCCL's table is less than its bandwidth gain over LL128, so the
    broadcast runs Simple, and takes Simple's time, though LL128 would finish sooner in the
    model (its chain latency is a step per rank, NCCL's one step)."""
    design = make_design(num_gpus=32, workload={"tensor_parallel": 8, "global_batch": 32})
    graph, groups = build_fabric_graph(design), groups_for(design, "all")
    small = simulate_collective(graph, "broadcast", 2 * MIB, groups)
    assert (small.algorithm, small.protocol) == ("chain", "ll128")
    for collective in ("broadcast", "reduce"):
        auto = simulate_collective(graph, collective, 8 * MIB, groups)
        simple = simulate_collective(graph, collective, 8 * MIB, groups, protocol="simple")
        ll128 = simulate_collective(graph, collective, 8 * MIB, groups, protocol="ll128")
        assert (auto.algorithm, auto.protocol) == ("chain", "simple")
        assert auto.time_s == pytest.approx(simple.time_s)
        assert ll128.time_s < auto.time_s
