"""NCCL's tree across NVL72 racks that hold different numbers of a group's GPUs.

With multi-node NVLink NCCL's node is the clique whatever the number of GPUs in it
(``ncclTopoGetSystem``, ``src/graph/topo.cc``; nodes counted by the first rank of each ring
in ``initTransportsRank``, ``src/init.cc``, NVIDIA/nccl v2.29.2-1): 128 GPUs on 18 + 14
trays are two nodes of 72 and 56 GPUs, its tree a chain through each rack and a double
binary tree between the racks, its tuner's ppn 128 / 2 = 64 (``ncclTopoTuneModel``)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.collectives import build_phases, ring_order
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.domains import rack_channels, uneven_split
from clusterforge.netsim.latency import nccl_latency_s
from clusterforge.spec import parse_spec


def _gb200(gpus: int) -> FabricGraph:
    data = {
        "num_gpus": gpus,
        "node": "gb200-nvl72-tray",
        "spare_fraction": 0,
        "facility": {"max_rack_kw": 140},
        "workload": {"tensor_parallel": 8, "global_batch": gpus},
    }
    return build_fabric_graph(plan(parse_spec(data)))


@pytest.fixture(scope="module")
def two_uneven_racks() -> tuple[FabricGraph, np.ndarray]:
    graph = _gb200(128)
    return graph, ring_order(graph, np.arange(128)[None, :])


def test_128_gpus_fill_one_rack_and_part_of_the_next(two_uneven_racks):
    graph, seq = two_uneven_racks
    split = uneven_split(graph, seq)
    assert split is not None
    assert split[1].tolist() == [72, 56]


def test_the_tree_sees_two_nodes_of_64_ranks(two_uneven_racks):
    graph, seq = two_uneven_racks
    ctx = tuning_context(graph, "all_reduce", seq, "tree")
    assert ctx.num_nodes == 2
    assert ctx.ranks_per_node == 64
    assert ctx.num_channels == rack_channels(graph)


def test_nccl_tree_latency_counts_a_63_hop_chain(two_uneven_racks):
    """LL: 6.8 + 2 x (63 x 0.6 + 1 x 5.0) us, not the 32 trays' 6.8 + 2 x (3 x 0.6 + 5 x 5.0)."""
    graph, seq = two_uneven_racks
    ctx = tuning_context(graph, "all_reduce", seq, "tree")
    assert nccl_latency_s("tree", "ll", ctx) * 1e6 == pytest.approx(92.4)


def test_the_tree_chains_each_rack_and_leaves_it_on_its_channels_nics(two_uneven_racks):
    graph, seq = two_uneven_racks
    (tree,) = build_phases(graph, "all_reduce", "tree", seq, pxn=True)
    # climbs the longer chain (71 hops) and one level of the tree, up and down
    assert tree.steps == 2 * (1 + 72 - 1)
    nics = np.unique(tree.net.src_node * graph.nics_per_node + tree.net.src_nic)
    assert nics.size == 2 * rack_channels(graph)


def test_an_uneven_two_rack_all_reduce_of_8_kib_pays_the_clique_tree_latency(two_uneven_racks):
    """The tree of 32 trays would take NCCL's 60.4 us; the tree of two cliques 92.4 us."""
    graph, _ = two_uneven_racks
    res = simulate_collective(graph, "all_reduce", 8 * 1024, np.arange(128)[None, :])
    assert (res.algorithm, res.protocol) == ("tree", "ll")
    assert res.time_s * 1e6 > 92.4


def test_one_gpu_in_a_rack_is_no_clique_tree():
    """73 GPUs: a whole rack and one GPU of the next; the chain of one GPU is no chain."""
    graph = _gb200(144)
    seq = ring_order(graph, np.arange(73)[None, :])
    assert uneven_split(graph, seq) is None


def test_an_even_split_keeps_the_rack_tree():
    graph = _gb200(144)
    seq = ring_order(graph, np.r_[0:64, 72:136][None, :])
    assert uneven_split(graph, seq) is None
    assert tuning_context(graph, "all_reduce", seq, "tree").num_nodes == 2
