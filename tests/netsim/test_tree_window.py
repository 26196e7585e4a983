"""A tree all-reduce across nodes waits for buffer slots at its network hops.

Each connection has NCCL_STEPS = 8 slots; over the network a slot returns to the sender one
round trip after the receiver's GPU consumed it (the receive for step k + 8 is posted only
then, ``recvProxyProgress`` in ``src/transport/net.cc``, and its clear-to-send must cross
back before step k + 8's data can).  Tree LL128 chunks shrink to 18,000 data bytes at
1-8 MiB (``calcCollChunking``, ``src/enqueue.cc``), so from 4 nodes a channel carries ~15
chunks at 4 MiB: a second window (NVIDIA/nccl at commit 5067397).
"""

from __future__ import annotations

import pytest

from clusterforge.netsim.tuner import TuningContext, tree_window_s

MIB = 2**20


def _ctx(num_nodes: int, ppn: int = 8, channels: int = 8, net: float = 368.0) -> TuningContext:
    return TuningContext(
        collective="all_reduce",
        num_ranks=ppn * num_nodes,
        num_nodes=num_nodes,
        generation="hopper",
        intra="nvlink",
        net_path_latency_s=1e-6,
        node_net_gbyte_per_s=net,
        num_channels=channels,
        intra_gbyte_per_s=360.0,
    )


def test_second_window_costs_the_loop_less_eight_chunk_times():
    """4 nodes x 8 H100, 8 search channels run as 16: at 4 MiB a channel carries 256 KiB in
    chunks of 18,000 B, 15 chunks, one window past the first.  The loop is two network
    steps of the LL128 tree (8.5 us) plus the 1 us path each; 8 chunks at 368/16 GB/s take
    6.3 us."""
    stage_us = 18000 / (368.0 / 16) / 1e3
    expected = (2 * (8.5 + 1.0) - 8 * stage_us) * 1e-6
    assert tree_window_s(_ctx(4), "ll128", 4 * MIB) == pytest.approx(expected)
    assert tree_window_s(_ctx(8), "ll128", 4 * MIB) == pytest.approx(expected)


def test_no_wait_within_one_window_or_when_chunks_fill_the_loop():
    # 2 nodes: 4 MiB runs as 8 chunks of 36,000 B per channel, within one window
    assert tree_window_s(_ctx(2), "ll128", 4 * MIB) == 0.0
    # 1 MiB on 4 nodes: 4 chunks per channel
    assert tree_window_s(_ctx(4), "ll128", 1 * MIB) == 0.0
    # 16 MiB on 4 nodes: 15 chunks of 72,000 B, 8 of them take 25 us, longer than the loop
    assert tree_window_s(_ctx(4), "ll128", 16 * MIB) == 0.0
    # one GPU per node on 24 GB/s of RoCE (nccl-tests #232): 30 chunks of 18,000 B on 4
    # channels at 6 GB/s each, 8 of them take 24 us, longer than the loop
    assert tree_window_s(_ctx(2, ppn=1, channels=2, net=24.0), "ll128", 2 * MIB) == 0.0
    assert tree_window_s(_ctx(1), "ll128", 4 * MIB) == 0.0


def test_simulated_tree_all_reduce_pays_the_window():
    """The 4-node tree all-reduce of 4 MiB on 8x400G H100 nodes is slower by the window."""
    from clusterforge.netsim import simulate_collective
    from validation.nccl_rows import _graph, ranks

    graph = _graph("hgx-h100", 4, None)
    group = ranks({"num_nodes": 4}, graph.gpus_per_node)[None, :]
    at = {
        size: simulate_collective(
            graph, "all_reduce", size, group, algorithm="tree", protocol="ll128"
        ).time_s
        for size in (2 * MIB, 4 * MIB)
    }
    # the bandwidth part doubles from 2 to 4 MiB (~15 us); the window adds ~13 us more
    assert at[4 * MIB] - at[2 * MIB] > 25e-6
