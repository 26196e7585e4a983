"""The chain (broadcast, reduce) across nodes: its first chunk crosses every network hop whole.

NCCL's network proxy posts a step only when the GPU has written all of it (``recvTail`` past
the step in ``sendProxyProgress``, ``src/transport/net.cc``), and a chain's chunk under LL128 is
a whole 614,400-byte step (576,000 data bytes: ``calcCollChunking`` in ``src/enqueue.cc``
shrinks LL128 chunks for trees only), so the first chunk of every channel waits at each of the
m - 1 network hops of the chain for its last byte (NVIDIA/nccl at commit 5067397).
"""

from __future__ import annotations

import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.latency import chain_fill_s, latency_s
from clusterforge.netsim.tuner import TuningContext
from tests.netsim.designs import make_design

MIB = 2**20


def _ctx(num_nodes: int) -> TuningContext:
    return TuningContext(
        collective="broadcast",
        num_ranks=8 * num_nodes,
        num_nodes=num_nodes,
        generation="hopper",
        intra="nvlink",
        net_path_latency_s=0.0,
        node_net_gbyte_per_s=368.0,
        num_channels=8,
        intra_gbyte_per_s=360.0,
    )


def test_chain_fill_is_one_step_through_each_network_hop():
    """4 nodes, 8 search channels doubled to 16 (NCCL's two copies), 368 GB/s of network per
    node: a channel's network share is 23 GB/s.  At 8 MiB a channel carries 512 KiB, less
    than one LL128 step (576,000 B), so the whole of it waits at each of the 3 network hops;
    from 16 MiB up the chunk is the step.  A hop costs the longer of the transfer and NCCL's
    hop latency (ring LL128 over the network: 4.0 us), which the latency already counts."""
    ctx = _ctx(4)

    def fill(share: float, hop_us: float) -> float:
        return 3 * max(0.0, share / (368.0 / 16) / 1e3 - hop_us) * 1e-6

    assert chain_fill_s(ctx, "ll128", 8 * MIB) == pytest.approx(fill(8 * MIB / 16, 4.0))
    assert chain_fill_s(ctx, "ll128", 64 * MIB) == pytest.approx(fill(576000, 4.0))
    assert chain_fill_s(ctx, "ll128", 1 * MIB) == 0.0  # 64 KiB crosses within the hop latency
    assert chain_fill_s(_ctx(2), "ll128", 64 * MIB) == pytest.approx(fill(576000, 4.0) / 3)
    one_node = TuningContext(**{**ctx.__dict__, "num_nodes": 1, "num_channels": 0})
    assert chain_fill_s(one_node, "ll128", 64 * MIB) == 0.0


def test_a_broadcast_across_four_nodes_pays_the_fill():
    """LL128 broadcast over 4 DGX H100: the call takes its latency, the bandwidth time and
    the chain's fill (more than 50 us at 32 MiB), so it is slower than latency plus the
    bandwidth time at the busiest NIC's full rate."""
    design = make_design(num_gpus=32, workload={"tensor_parallel": 8, "global_batch": 32})
    graph, groups = build_fabric_graph(design), groups_for(design, "all")
    size = 32 * MIB
    res = simulate_collective(graph, "broadcast", size, groups, protocol="ll128")
    assert res.algorithm == "chain"
    ctx = _ctx(4)
    lean = latency_s("chain", "ll128", ctx) + size / (368.0 * 0.92 * 1e9)
    assert res.time_s > lean + 50e-6
