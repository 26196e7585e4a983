"""NCCL's algorithm and protocol choice: latency model, protocols, trees, sweep shape."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.latency import latency_s
from clusterforge.netsim.model import P2P_NETWORK_EFFICIENCY
from clusterforge.netsim.trees import dtree_parents
from clusterforge.netsim.tuner import (
    TuningContext,
    active_channels,
    channel_cap_gbyte_per_s,
    network_channels,
    protocols_for,
)
from tests.netsim.designs import make_design, single_node


def _ctx(**kw: object) -> TuningContext:
    base: dict[str, object] = {
        "collective": "all_reduce",
        "num_ranks": 8,
        "num_nodes": 1,
        "generation": "hopper",
        "intra": "nvlink",
        "net_path_latency_s": 0.0,
    }
    base.update(kw)
    return TuningContext(**base)  # type: ignore[arg-type]


def test_ring_latency_is_nccls_base_plus_one_hop_per_step():
    # NCCL tuning.cc: ring LL base 6.6 µs + 2(n-1) steps x 0.6 µs on NVLink
    assert latency_s("ring", "ll", _ctx()) == pytest.approx((6.6 + 14 * 0.6) * 1e-6)
    assert latency_s("ring", "simple", _ctx()) == pytest.approx((8.4 + 14 * 3.4) * 1e-6)
    # NVLS: one NVLink step of 25 µs, no base
    assert latency_s("nvls", "simple", _ctx()) == pytest.approx(25e-6)


def test_inter_node_steps_pay_the_network_latency_and_the_path():
    one = latency_s("ring", "simple", _ctx(num_ranks=32, num_nodes=4))
    far = latency_s("ring", "simple", _ctx(num_ranks=32, num_nodes=4, net_path_latency_s=5e-6))
    # 2(m-1) = 6 network steps, Simple pays the path twice (flush), x1.4 ring plateau
    assert far - one == pytest.approx(6 * 2 * 5e-6 * 1.4)


def test_tree_latency_grows_with_log_of_the_node_count():
    t8 = latency_s("tree", "ll", _ctx(num_ranks=64, num_nodes=8))
    t64 = latency_s("tree", "ll", _ctx(num_ranks=512, num_nodes=64))
    assert t64 - t8 == pytest.approx(2 * 3 * 5.0e-6)  # 3 more tree levels, 5 µs each (LL)


def test_protocols_nccl_considers():
    assert protocols_for("nvls", _ctx()) == ("simple",)
    assert "ll128" in protocols_for("ring", _ctx())
    assert "ll128" not in protocols_for("ring", _ctx(intra="pci"))  # LL128 needs NVLink


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 13, 16, 64])
def test_double_binary_tree_spans_every_node_and_each_is_a_leaf_in_one_tree(m):
    for child, parent in dtree_parents(m):
        assert set(parent.tolist()) <= set(range(m))
        assert len(set(child.tolist())) == m - 1  # every node but the root has one parent
        assert not np.any(child == parent)
    (_, p1), (_, p2) = dtree_parents(m)
    interior1, interior2 = set(p1.tolist()), set(p2.tolist())
    if m % 2 == 0:  # NCCL mirrors the tree: no node is interior in both
        assert not (interior1 & interior2)


@functools.cache
def _four_nodes():
    design = make_design(num_gpus=32, workload={"tensor_parallel": 8, "global_batch": 32})
    return build_fabric_graph(design), groups_for(design, "all")


def test_sweep_has_nccls_shape_on_four_nodes():
    """LL for tiny messages, Simple at the top, and the knee between 1 MiB and 256 MiB."""
    graph, groups = _four_nodes()
    sizes = [2**e for e in range(3, 35)]
    res = [simulate_collective(graph, "all_reduce", s, groups) for s in sizes]
    assert res[0].protocol == "ll" and res[-1].protocol == "simple"
    peak = max(r.busbw_gbyte_per_s for r in res)
    at = {r.size_bytes: r.busbw_gbyte_per_s for r in res}
    assert at[2**20] < 0.5 * peak
    assert at[2**28] > 0.7 * peak
    assert all(b.time_s >= a.time_s for a, b in itertools.pairwise(res))


def test_small_messages_are_latency_bound_at_nccls_ll_latency():
    _, graph = single_node("dgx-h100")
    res = simulate_collective(graph, "all_reduce", 8, np.arange(8)[None])
    assert (res.algorithm, res.protocol) == ("ring", "ll")
    assert res.time_s == pytest.approx(15e-6, rel=0.01)


def test_forced_protocol_is_reported():
    graph, groups = _four_nodes()
    res = simulate_collective(graph, "all_reduce", 2**34, groups, algorithm="ring", protocol="ll")
    auto = simulate_collective(graph, "all_reduce", 2**34, groups, algorithm="ring")
    assert res.protocol == "ll" and auto.protocol == "simple"
    assert res.busbw_gbyte_per_s < 0.6 * auto.busbw_gbyte_per_s  # LL carries half the wire


@pytest.mark.parametrize("num_nodes", [2, 4])
def test_all_to_all_nic_carries_only_the_remote_peers_while_nvlink_peers_overlap(num_nodes):
    """NCCL runs the peer rounds of an all-to-all on separate channels at once (its p2p
    schedule groups them by node: the rounds to the node's own GPUs go over NVLink while
    the others use the NICs), so a GPU's NIC carries only its messages to the (n - k)
    remote GPUs: busbw = NIC payload x (n - 1) / (n - k), above one NIC's rate (2 nodes of
    8: 15/8; 4 nodes: 31/24)."""
    design = make_design(
        num_gpus=8 * num_nodes, workload={"tensor_parallel": 8, "global_batch": 8 * num_nodes}
    )
    graph, groups = build_fabric_graph(design), groups_for(design, "all")
    res = simulate_collective(graph, "all_to_all", 2**32, groups)
    per_gpu_nic = graph.nics_per_node * graph.nic_gbyte_per_s / graph.gpus_per_node
    n, k = 8 * num_nodes, 8
    expected = per_gpu_nic * P2P_NETWORK_EFFICIENCY * (n - 1) / (n - k)
    assert res.busbw_gbyte_per_s == pytest.approx(expected, rel=0.05)
    assert res.busbw_gbyte_per_s > per_gpu_nic


def test_nccl_channel_count_across_nodes():
    # one channel per NIC; doubled at 25 GB/s and more, except Hopper+ below 50 with 5+
    assert network_channels(nics=4, nic_payload_gbyte_per_s=23.75, generation="ampere") == 4
    assert network_channels(nics=4, nic_payload_gbyte_per_s=47.5, generation="hopper") == 8
    assert network_channels(nics=8, nic_payload_gbyte_per_s=47.5, generation="hopper") == 8
    assert network_channels(nics=8, nic_payload_gbyte_per_s=47.5, generation="ampere") == 16


def _channel_ctx(num_ranks: int, num_channels: int) -> TuningContext:
    return TuningContext(
        collective="all_reduce",
        num_ranks=num_ranks,
        num_nodes=num_ranks // 8,
        generation="hopper",
        intra="nvlink",
        net_path_latency_s=0.0,
        num_channels=num_channels,
    )


def test_small_messages_run_on_fewer_channels_as_nccl_does():
    """NCCL drops channels while the message is below channels x threads x threshold
    (``ncclTopoGetAlgoInfo``): Simple 512 threads x 64 B, LL 512 x 8 B x ranks on rings,
    LL128 640 x 8 B; at least one channel."""
    ctx = _channel_ctx(16, 8)
    assert active_channels("ring", "simple", ctx, 64 * 2**10) == 2
    assert active_channels("ring", "simple", ctx, 256 * 2**10) == 8
    assert active_channels("ring", "ll", ctx, 256 * 2**10) == 4  # 64 KiB per channel on 16
    assert active_channels("ring", "ll128", ctx, 20 * 2**10) == 4
    assert active_channels("tree", "simple", ctx, 8) == 1
    assert active_channels("ring", "ll", _channel_ctx(256, 8), 4 * 2**20) == 4  # LL ring at scale
    assert active_channels("nvls_tree", "simple", ctx, 8) == 8  # NVLS keeps its channels


def test_fewer_channels_cost_bandwidth_below_the_threshold():
    """An LL ring all-reduce over 32 GPUs on four nodes: at 256 KiB NCCL runs 2 of its 8
    channels (128 KiB each), so the time beyond the latency costs 4x more per byte than at
    4 MiB, where all 8 run (LL has no pipeline ramp to blur this)."""
    graph, groups = _four_nodes()

    def per_byte_s(size: int) -> float:
        res = simulate_collective(
            graph, "all_reduce", size, groups, algorithm="ring", protocol="ll"
        )
        return (res.time_s - res.latency_s) / size

    assert per_byte_s(256 * 2**10) > 3.0 * per_byte_s(4 * 2**20)


def test_per_channel_ceilings_are_nccls():
    two = _ctx(num_ranks=16, num_nodes=2, generation="ampere", num_channels=4)
    assert channel_cap_gbyte_per_s("tree", "simple", two) == pytest.approx(4 * 23.6)
    assert channel_cap_gbyte_per_s("tree", "ll128", two) == pytest.approx(4 * 20.0)
    assert channel_cap_gbyte_per_s("ring", "ll128", two) == pytest.approx(4 * 20.0)
    assert channel_cap_gbyte_per_s("ring", "simple", two) == float("inf")
    assert channel_cap_gbyte_per_s("tree", "simple", _ctx(num_channels=4)) == float("inf")
    four = _ctx(num_ranks=32, num_nodes=4, generation="ampere", num_channels=4)
    assert channel_cap_gbyte_per_s("tree", "simple", four) == pytest.approx(4 * 17.8)


@pytest.mark.parametrize(("nodes", "per_channel"), [(2, 36.7), (4, 29.0), (8, 29.0)])
def test_hopper_ll128_tree_ceiling_drops_from_three_nodes(nodes, per_channel):
    # NCCL perChMaxTreeLL128Bws, Hopper: 36.7 GB/s per channel on 1-2 nodes, 29 from 3 nodes
    # (src/graph/tuning.cc); the Simple ceiling times 120/128 is higher on every count
    ctx = _ctx(num_ranks=8 * nodes, num_nodes=nodes, num_channels=8)
    assert channel_cap_gbyte_per_s("tree", "ll128", ctx) == pytest.approx(8 * per_channel)


@pytest.mark.parametrize("m", [4, 6, 8, 16])
def test_every_nic_of_the_double_tree_carries_four_half_shares(m):
    # each tree carries S/2 up and down: a node interior in one tree (two children and a
    # parent: 3 edges) and a leaf in the other (1 edge) moves 4 x S/2 = 2 S each way over
    # its NICs; only the two roots' nodes move less
    edges = np.zeros(m, dtype=int)
    for child, parent in dtree_parents(m):
        np.add.at(edges, child, 1)
        np.add.at(edges, parent, 1)
    assert edges.max() == 4
    assert int((edges == 4).sum()) >= m - 2


@functools.cache
def _a100_two_nodes(nics: int):
    design = make_design(
        num_gpus=16,
        node="dgx-a100",
        network={"nics_per_node": nics},
        workload={"tensor_parallel": 8, "global_batch": 16},
    )
    return build_fabric_graph(design)


@pytest.mark.parametrize("size", [32 * 2**20, 2**30])
def test_two_node_tree_with_a_nic_per_two_gpus_stays_at_nic_pace(size):
    # 2 nodes of 8 A100 with 4 HDR NICs each: nccl-tests reach 86-91 GB/s (NVIDIA/nccl #1048,
    # nccl-tests #100); NCCL's tree has 4 channels of at most 23.6 GB/s, not twice the NICs
    graph = _a100_two_nodes(4)
    group = np.arange(16)[None, :]
    tree = simulate_collective(graph, "all_reduce", size, group, algorithm="tree")
    best = simulate_collective(graph, "all_reduce", size, group)
    assert tree.busbw_gbyte_per_s <= 4 * 23.6 + 1e-6
    assert best.busbw_gbyte_per_s < 100.0


def test_two_node_tree_with_a_nic_per_gpu_still_beats_the_nic_rate():
    # 8 HDR NICs: 8 channels of 23.6 GB/s leave the 2-node tree above the NICs' 190 GB/s ring
    graph = _a100_two_nodes(8)
    res = simulate_collective(graph, "all_reduce", 2**30, np.arange(16)[None, :], algorithm="tree")
    assert 170.0 < res.busbw_gbyte_per_s <= 8 * 23.6 + 1e-6


@pytest.mark.parametrize(
    ("generation", "nodes", "per_channel"),
    [("hopper", 2, 57.7), ("hopper", 4, 45.5), ("blackwell", 2, 96.0), ("blackwell", 8, 43.8)],
)
def test_nvls_tree_channel_ceiling_is_nccls_per_head(generation, nodes, per_channel):
    # NCCL perChMaxNVLSTreeBws (src/graph/tuning.cc, since 2.28.3; Blackwell from 3 nodes as in
    # v2.28.9-1 to v2.29.7-1, 80.0 from v2.30.3-1): GB/s of bus bandwidth per
    # channel of the NVLS graph, whose channels are its heads (one GPU per NIC)
    ctx = _ctx(
        num_ranks=8 * nodes, num_nodes=nodes, generation=generation, num_channels=16, nvls_heads=8
    )
    assert channel_cap_gbyte_per_s("nvls_tree", "simple", ctx) == pytest.approx(8 * per_channel)
    assert channel_cap_gbyte_per_s("nvls", "simple", ctx) == float("inf")


@functools.cache
def _hgx_h100(num_nodes: int):
    design = make_design(
        num_gpus=8 * num_nodes,
        node="hgx-h100",
        workload={"tensor_parallel": 8, "global_batch": 8 * num_nodes},
    )
    return build_fabric_graph(design)


def test_two_node_h100_nvls_tree_stays_under_its_channels_ceiling():
    # 2 nodes x 8 H100, 8 x 400G: the NVLS pass alone would allow ~505 GB/s of busbw, but each
    # of the 8 NVLS-Tree heads (its share run by warps split between scatter, gather,
    # reduce-and-send and receive-and-broadcast) moves at most 57.7 GB/s: 461.6 GB/s, where
    # nccl-tests measure 456-469 GB/s at 1-8 GiB on four clusters
    graph = _hgx_h100(2)
    res = simulate_collective(graph, "all_reduce", 8 * 2**30, np.arange(16)[None, :])
    assert res.algorithm == "nvls_tree"
    assert 440.0 < res.busbw_gbyte_per_s <= 8 * 57.7 + 1e-6
