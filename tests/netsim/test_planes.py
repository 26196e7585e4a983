"""Multi-plane Clos fabrics: routes stay inside a plane, cross-plane pairs hop over NVLink."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clusterforge.job import JobLayout
from clusterforge.netsim import FabricGraph, build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.collectives import build_phases, ring_order
from clusterforge.netsim.routing import route_net
from clusterforge.topology import LINK_CLASSES
from tests.netsim.designs import make_design

GIB = 2**30
FAT_TREE = {"topology": "fat-tree", "switch": "qm8700", "nic_gbit_per_s": 200}
# lossless (PFC): the bandwidth then follows the load; drops would add go-back-N losses
OVERSUBSCRIBED = {"oversubscription": 3.0, "fabric": "roce", "switch": "sn5600", "lossless": True}


def _graph(num_gpus: int = 512, **network: Any) -> tuple[Any, FabricGraph]:
    design = make_design(
        num_gpus=num_gpus, workload={"tensor_parallel": 8, "global_batch": 1024}, network=network
    )
    return design, build_fabric_graph(design)


def _busbw(graph: FabricGraph, collective: str, groups: np.ndarray, **kw: Any) -> float:
    return simulate_collective(graph, collective, GIB, groups, **kw).busbw_gbyte_per_s


def _vertex_plane(graph: FabricGraph, vertex: np.ndarray) -> np.ndarray:
    """Plane of NIC-port and switch vertices, -1 for GPUs and scale-up domains."""
    v_nic = graph.num_gpus + graph.num_domains
    v_sw = v_nic + graph.num_ports
    nic = (vertex - v_nic) % graph.nics_per_node
    switch = graph.connectivity.plane_of_switch(np.maximum(vertex - v_sw, 0))
    return np.where(vertex >= v_sw, switch, np.where(vertex >= v_nic, graph.plane_of_nic(nic), -1))


def test_no_link_joins_two_planes():
    for network in ({"planes": 2}, {"planes": 4}, {**FAT_TREE, "planes": 2}):
        _, graph = _graph(2048 if "switch" in network else 512, **network)
        a = _vertex_plane(graph, graph.link_from)
        b = _vertex_plane(graph, graph.link_to)
        network_link = (a >= 0) & (b >= 0)
        assert network_link.sum() > 0
        assert np.array_equal(a[network_link], b[network_link])
        assert set(a[network_link].tolist()) == set(range(graph.num_planes))


def test_two_plane_all_reduce_matches_one_plane():
    # rings leave a node by NIC c and enter the next by NIC c: one rail, hence one plane
    for num_gpus, network, placement in (
        (512, {}, "packed"),
        (512, {}, "fragmented"),
        (2048, FAT_TREE, "fragmented"),
    ):
        one_design, one = _graph(num_gpus, **network)
        _, two = _graph(num_gpus, **network, planes=2)
        groups = groups_for(one_design, "dp", placement=placement, seed=2)
        base = _busbw(one, "all_reduce", groups)
        assert base > 15
        assert _busbw(two, "all_reduce", groups) == pytest.approx(base, rel=0.03)


@pytest.mark.parametrize("routing", ["ecmp", "adaptive"])
@pytest.mark.parametrize(
    ("num_gpus", "network"),
    [
        (512, {"planes": 2}),
        (512, {"topology": "leaf-spine", **OVERSUBSCRIBED, "planes": 2}),
        (2048, {**FAT_TREE, "planes": 2}),
    ],
    ids=["rail-optimized", "leaf-spine", "fat-tree-3tier"],
)
def test_every_path_stays_in_the_plane_of_its_nics(routing, num_gpus, network):
    design, graph = _graph(num_gpus, **network)
    dp = groups_for(design, "dp", placement="fragmented", seed=1)
    every = groups_for(design, "all", layout=JobLayout(dp=128), placement="fragmented")
    cases = [
        ("all_reduce", "ring", dp, False),
        ("all_reduce", "tree", dp, False),
        ("all_to_all", "direct", every, True),  # PXN: rail-aligned flows
        ("all_to_all", "direct", every, False),  # cross-plane pairs hop to the sibling NIC
    ]
    spine_core = _classes("spine-core")
    crossed_pods = False
    for collective, algorithm, groups, pxn in cases:
        for traffic in build_phases(graph, collective, algorithm, ring_order(graph, groups), pxn):
            segs = traffic.net
            plane = graph.plane_of_nic(segs.src_nic)
            assert np.array_equal(plane, graph.plane_of_nic(segs.dst_nic))
            routes = route_net(graph, segs, routing, num_qps=4)
            for end in (graph.link_from[routes.link], graph.link_to[routes.link]):
                vp = _vertex_plane(graph, end)
                fabric = vp >= 0
                assert np.array_equal(vp[fabric], plane[routes.seg[fabric]])
            crossed_pods |= bool(np.isin(graph.link_class[routes.link], spine_core).any())
    assert crossed_pods == (graph.connectivity.num_cores > 0)


def _classes(*names: str) -> list[int]:
    return [LINK_CLASSES.index(n) for n in names]


def _scaleup_bytes(graph: FabricGraph, collective: str, groups: np.ndarray, pxn: bool) -> float:
    """Bytes (per byte of size) that cross scale-up links in every phase."""
    total = 0.0
    for traffic in build_phases(graph, collective, "direct", ring_order(graph, groups), pxn):
        hop = graph.domain_of(traffic.intra_src) == graph.domain_of(traffic.intra_dst)
        vol = traffic.volume[traffic.intra_demand] * traffic.weights()
        total += float(vol[hop].sum())
    return total


def test_all_to_all_is_not_faster_on_two_planes_and_crosses_planes_over_nvlink():
    network = {"topology": "leaf-spine", "fabric": "roce", "switch": "sn5600"}
    one_design, one = _graph(**network)
    _, two = _graph(**network, planes=2)
    groups = groups_for(one_design, "all", layout=JobLayout(dp=256))
    for routing in ("adaptive", "ecmp"):
        base = _busbw(one, "all_to_all", groups, routing=routing, pxn=False)
        assert _busbw(two, "all_to_all", groups, routing=routing, pxn=False) <= base * 1.01
    # without PXN one plane sends every pair NIC to NIC; two planes forward the cross-plane
    # half of the inter-node pairs over NVLink to the sibling NIC first
    res = simulate_collective(two, "all_to_all", GIB, groups, pxn=False)
    assert res.link_class_utilization["nvlink"].max_utilization > 0
    extra = _scaleup_bytes(two, "all_to_all", groups, False) - _scaleup_bytes(
        one, "all_to_all", groups, False
    )
    n = groups.shape[1]
    inter_node_pairs = n * (n - 8)
    assert extra == pytest.approx(inter_node_pairs / 2 / n, rel=1e-9)
    # with PXN (the rail-optimized default) every flow already stays on one rail
    ro_design, ro1 = _graph()
    _, ro2 = _graph(planes=2)
    g = groups_for(ro_design, "all", layout=JobLayout(dp=256))
    assert _busbw(ro2, "all_to_all", g) == pytest.approx(_busbw(ro1, "all_to_all", g), rel=0.01)


def test_oversubscribed_rail_optimized_fabric_is_the_same_with_planes():
    """Observed: a rail-optimized SU already gives each rail its own leaf, so 2 or 4 planes
    keep the same leaves, nodes per SU and leaf-spine links; with adaptive routing the
    busbw is the same, and ECMP differs only by which spines the hash picks (a plane has
    1/P of the spines, each with P times the parallel links)."""
    design, one = _graph(2048, topology="rail-optimized", **OVERSUBSCRIBED)
    dp = groups_for(design, "dp", placement="fragmented", seed=1)
    base = _busbw(one, "all_reduce", dp)
    ecmp_base = _busbw(one, "all_reduce", dp, routing="ecmp")
    assert ecmp_base < 0.8 * base  # oversubscribed and hashed: the spines limit
    for planes in (2, 4):
        d, g = _graph(2048, topology="rail-optimized", **OVERSUBSCRIBED, planes=planes)
        assert d.fabric.connectivity.num_leaves == design.fabric.connectivity.num_leaves
        assert d.fabric.num_leaf_spine_links == design.fabric.num_leaf_spine_links
        assert _busbw(g, "all_reduce", dp) == pytest.approx(base, rel=0.01)
        assert 0.5 * ecmp_base < _busbw(g, "all_reduce", dp, routing="ecmp") < base


def _worst_leaf_load(graph: FabricGraph, groups: np.ndarray) -> float:
    """Ring flows that leave (or enter) the busiest leaf, per leaf-spine link of it."""
    (traffic,) = build_phases(graph, "all_reduce", "ring", ring_order(graph, groups), False)
    c, s = graph.connectivity, traffic.net
    leaf_s, leaf_d = c.leaf_of(s.src_node, s.src_nic), c.leaf_of(s.dst_node, s.dst_nic)
    cross = leaf_s != leaf_d
    a, _, n, _ = c.switch_links()
    uplinks = np.bincount(a, weights=n, minlength=c.num_leaves)
    out = np.bincount(leaf_s[cross], minlength=c.num_leaves) / uplinks
    into = np.bincount(leaf_d[cross], minlength=c.num_leaves) / uplinks
    return float(max(out.max(), into.max()))


def test_oversubscribed_leaf_spine_gains_only_from_larger_leaf_groups():
    """Observed: on leaf-spine each plane's leaf takes ``nics/P`` ports per node, so a leaf
    holds P times the nodes (12 -> 24 -> 48 at 3:1 on SN5600) at the same 3:1 uplink share.
    A fragmented DP ring then finds more of its hops under one leaf: the busiest leaf's
    uplinks carry fewer flows (2.75 -> 1.875 -> 0.75 per link), and busbw follows that load
    (17 -> 25 GB/s) until the NICs limit (43 GB/s at 4 planes).  Nothing else changes.
    (Two tiers throughout: a 4-plane plane's 128 ports would otherwise fit one SN5600.)"""
    design, one = _graph(topology="leaf-spine", tiers=2, **OVERSUBSCRIBED)
    dp = groups_for(design, "dp", placement="fragmented", seed=1)
    line = _busbw(one, "all_reduce", groups_for(design, "dp"))  # packed: leaf-local rings
    base_bw, base_load = _busbw(one, "all_reduce", dp), _worst_leaf_load(one, dp)
    assert base_bw < 0.5 * line
    for planes in (2, 4):
        d, g = _graph(topology="leaf-spine", tiers=2, **OVERSUBSCRIBED, planes=planes)
        per_leaf = design.fabric.connectivity.nodes_per_leaf_group
        assert d.fabric.connectivity.nodes_per_leaf_group == planes * per_leaf
        assert d.fabric.num_leaf_spine_links * 3 >= d.fabric.num_node_links * 0.99
        load = _worst_leaf_load(g, dp)
        assert load < base_load
        expected = min(line, base_bw * base_load / load)
        assert _busbw(g, "all_reduce", dp) == pytest.approx(expected, rel=0.05)
