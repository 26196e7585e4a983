"""No algorithm beats its own bottleneck: every result is at or below the busbw its traffic
allows on the real link graph, and inter-node bandwidth stays under the NIC ceiling.

The bound is computed here independently of the rate allocation and of every efficiency
constant: route each phase's traffic, add up the bytes each link must carry per byte of
message, and divide by the link's capacity; the busiest link sets the shortest possible time.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.netsim import build_fabric_graph, bus_factor, groups_for, simulate_collective
from clusterforge.netsim.collectives import build_phases, ring_order
from clusterforge.netsim.incidence import Incidence
from clusterforge.netsim.routing import route_intra, route_net
from clusterforge.topology import FabricGraph
from tests.netsim.designs import make_design

SIZES = (2**10, 2**20, 2**26, 2**32)
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet", "hierarchical")
FABRICS: dict[str, dict[str, Any]] = {
    "h100-ib": {"node": "dgx-h100"},
    "h100-roce-leaf-spine": {
        "node": "dgx-h100",
        "network": {"fabric": "roce", "switch": "sn5600", "topology": "leaf-spine"},
    },
    "a100-ib": {"node": "dgx-a100"},
    "b200-ib": {"node": "dgx-b200"},
}


@functools.cache
def _case(fabric: str, num_nodes: int) -> tuple[FabricGraph, np.ndarray]:
    gpus = 8 * num_nodes
    design = make_design(
        num_gpus=gpus, workload={"tensor_parallel": 8, "global_batch": gpus}, **FABRICS[fabric]
    )
    return build_fabric_graph(design), groups_for(design, "all")


def _min_time_per_byte(graph: FabricGraph, collective: str, algorithm: str, groups) -> float:
    """Seconds per byte of message the busiest link needs, at full line rate."""
    total, piped = 0.0, []
    for phase in build_phases(graph, collective, algorithm, ring_order(graph, groups), True):
        seg_i, link_i, frac_i = route_intra(graph, phase.intra_src, phase.intra_dst)
        routes = route_net(graph, phase.net, "adaptive", 1)
        link = np.concatenate([link_i, routes.link])
        demand = np.concatenate([phase.intra_demand[seg_i], phase.net_demand[routes.seg]])
        coef = np.concatenate([frac_i * phase.weights()[seg_i], routes.frac])
        wire = Incidence.from_triplets(
            link, demand, coef, num_links=graph.num_links, num_demands=phase.volume.size
        ).matvec(phase.volume)
        t = float(np.max(wire / graph.capacity_gbyte_per_s)) / 1e9
        if phase.pipelined:  # pipelined stages overlap: the slowest one sets the floor
            piped.append(t)
        else:
            total += t
    return total + (max(piped) if piped else 0.0)


@pytest.mark.parametrize("fabric", sorted(FABRICS))
@pytest.mark.parametrize("num_nodes", [2, 4, 8])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_all_reduce_never_beats_its_bottleneck(fabric, num_nodes, algorithm):
    graph, groups = _case(fabric, num_nodes)
    try:
        floor = _min_time_per_byte(graph, "all_reduce", algorithm, groups)
    except SimulationError:
        pytest.skip(f"{algorithm} does not run on {fabric}")
    n = groups.shape[1]
    bound = bus_factor("all_reduce", n) / floor / 1e9
    for size in SIZES:
        res = simulate_collective(graph, "all_reduce", size, groups, algorithm=algorithm)
        assert res.busbw_gbyte_per_s <= bound * (1 + 1e-9), (size, res.protocol)


@pytest.mark.parametrize("fabric", sorted(FABRICS))
@pytest.mark.parametrize("num_nodes", [3, 4, 8])
@pytest.mark.parametrize("algorithm", ["auto", "ring", "tree"])
def test_inter_node_all_reduce_stays_below_the_node_nic_rate(fabric, num_nodes, algorithm):
    """Ring and tree push every byte through the NICs at least once per direction on 3+ nodes
    (from 4 nodes a double binary tree node moves 2·S: interior in one tree, leaf in the
    other; on 3 nodes both trees are chains, and NCCL's model holds trees to the inter-node
    bandwidth)."""
    graph, groups = _case(fabric, num_nodes)
    node_nic = graph.nics_per_node * graph.nic_gbyte_per_s
    for size in SIZES:
        res = simulate_collective(graph, "all_reduce", size, groups, algorithm=algorithm)
        assert res.busbw_gbyte_per_s <= node_nic, (size, res.algorithm)


@pytest.mark.parametrize("fabric", sorted(FABRICS))
@pytest.mark.parametrize("num_nodes", [2, 4])
def test_all_to_all_stays_below_the_share_that_crosses_the_nics(fabric, num_nodes):
    """(n − k)/n of every GPU's data leaves its node: busbw <= B_gpu · (n − 1)/(n − k)."""
    graph, groups = _case(fabric, num_nodes)
    n, k = groups.shape[1], graph.gpus_per_node
    per_gpu_nic = graph.nics_per_node * graph.nic_gbyte_per_s / k
    floor = _min_time_per_byte(graph, "all_to_all", "direct", groups)
    for size in SIZES:
        res = simulate_collective(graph, "all_to_all", size, groups)
        assert res.busbw_gbyte_per_s <= per_gpu_nic * (n - 1) / (n - k)
        assert res.busbw_gbyte_per_s <= bus_factor("all_to_all", n) / floor / 1e9 * (1 + 1e-9)


def test_four_node_tree_is_below_the_ring_at_large_sizes():
    """The double binary tree's interior nodes carry 2·S, a ring's NICs 2(n−1)/n·S: on 4
    nodes of 8 x 400G the tree must not come out above the ring (it did at 31/24 x NIC)."""
    graph, groups = _case("h100-ib", 4)
    ring = simulate_collective(graph, "all_reduce", 2**34, groups, algorithm="ring")
    tree = simulate_collective(graph, "all_reduce", 2**34, groups, algorithm="tree")
    assert tree.busbw_gbyte_per_s < ring.busbw_gbyte_per_s
    auto = simulate_collective(graph, "all_reduce", 2**34, groups)
    assert auto.algorithm != "tree"
