"""The two 64-node example designs: A (examples/seed-design-a.yaml: 4 x 400G per node
bonded into one LAG on one switch) against B (examples/seed-design-b.yaml: 8 x 400G per
node, non-blocking two-tier leaf-spine).

A's LAG hashes flows onto single 400G members and its lossy RoCE fabric drops where they
collide; B runs near line rate.  We pin the direction and size of that gap, not our floats.
"""

from __future__ import annotations

import pytest

from clusterforge.design import Design
from clusterforge.netsim import FabricGraph, groups_for, simulate_collective

GIB = 2**30


def _run(graph: FabricGraph, design: Design, collective: str, **kw: object):
    return simulate_collective(graph, collective, GIB, groups_for(design, "all"), **kw)


def test_design_b_all_reduce_is_several_times_design_a(graph_a, design_a, graph_b, design_b):
    a = _run(graph_a, design_a, "all_reduce")
    b = _run(graph_b, design_b, "all_reduce")
    assert b.busbw_gbyte_per_s > 3 * a.busbw_gbyte_per_s


def test_design_b_all_to_all_at_least_doubles_design_a(graph_a, design_a, graph_b, design_b):
    a = _run(graph_a, design_a, "all_to_all")
    b = _run(graph_b, design_b, "all_to_all")
    # B has twice the NIC bandwidth per node, and A's LAG hashes unevenly on top of that
    assert b.busbw_gbyte_per_s > 1.9 * a.busbw_gbyte_per_s


@pytest.mark.parametrize("collective", ["all_reduce", "all_to_all"])
def test_design_a_is_limited_by_a_lag_member_between_node_and_switch(graph_a, design_a, collective):
    res = _run(graph_a, design_a, collective)
    link = res.limiting_link
    assert link is not None
    assert link.link_class in ("nic-leaf", "leaf-nic")
    assert link.busy_fraction > 0.95
    assert link.capacity_gbyte_per_s == pytest.approx(50)  # one 400G member, not the 1.6T bond


def test_design_a_all_to_all_congests_its_rate_controlled_roce_fabric(graph_a, design_a):
    res = _run(graph_a, design_a, "all_to_all")
    assert res.fabric == "roce"
    assert res.max_offered_load > 1.001
    assert res.congestion_response == "rate" and not res.would_drop  # DCQCN, RoCE's default
    # packets pile up where the switch hashes many senders onto one member towards a node
    assert res.hotspot is not None and res.hotspot.link_class == "leaf-nic"
    assert res.hotspot.offered_load > 1.001


def test_design_b_with_adaptive_routing_does_not_drop(graph_b, design_b):
    for collective in ("all_reduce", "all_to_all"):
        res = _run(graph_b, design_b, collective, routing="adaptive")
        assert not res.would_drop
        assert res.max_offered_load <= 1.001


def test_design_b_all_to_all_reaches_close_to_line_rate(graph_b, design_b):
    """Non-blocking + adaptive routing: the NIC links, not the fabric, set the pace."""
    res = _run(graph_b, design_b, "all_to_all", routing="adaptive")
    line_rate = 400 / 8  # GB/s per GPU: one 400G NIC each
    # grouped send/receive reaches 320/370 of a ring's payload share (NVIDIA GTC25 slide)
    assert res.busbw_gbyte_per_s > 0.75 * line_rate
    assert res.limiting_link is not None and res.limiting_link.link_class in (
        "nic-leaf",
        "leaf-nic",
    )
    spine = res.link_class_utilization["leaf-spine"]
    assert spine.max_utilization <= 1.0
    assert res.link_class_utilization["nic-leaf"].max_utilization > 0.97


def test_design_b_all_reduce_at_large_size_near_the_node_nic_bandwidth(graph_b, design_b):
    res = simulate_collective(graph_b, "all_reduce", 16 * GIB, groups_for(design_b, "all"))
    node_nic_gbyte_per_s = 8 * 400 / 8
    assert 0.8 * node_nic_gbyte_per_s < res.busbw_gbyte_per_s <= node_nic_gbyte_per_s
