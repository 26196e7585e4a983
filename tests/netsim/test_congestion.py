"""Lossless (IB credits, RoCE + PFC) vs lossy (RoCE without PFC) congestion reports, both
without ECN rate control (with it: test_rate_control.py)."""

from __future__ import annotations

import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from tests.netsim.designs import make_design

GIB = 2**30


def _ecmp_all_reduce(lossless: bool):
    net = {
        "topology": "leaf-spine",
        "fabric": "roce",
        "switch": "sn5600",
        "lossless": lossless,
        "congestion_control": "none",  # what PFC alone, or nothing, does (DCQCN: test_rate_control)
    }
    design = make_design(network=net)
    graph = build_fabric_graph(design)
    groups = groups_for(design, "all")
    return simulate_collective(graph, "all_reduce", GIB, groups, routing="ecmp", algorithm="ring")


@pytest.fixture(scope="module")
def lossy():
    return _ecmp_all_reduce(False)


@pytest.fixture(scope="module")
def lossless():
    return _ecmp_all_reduce(True)


def test_same_traffic_congests_both_fabrics_the_same_way(lossy, lossless):
    assert lossy.congested and lossless.congested
    assert lossy.max_offered_load == pytest.approx(lossless.max_offered_load, rel=1e-9)


def test_drops_cost_goodput_on_lossy_roce_only(lossy, lossless):
    """Go-back-N resends every packet in flight behind a drop: the lossy fabric is slower."""
    assert lossless.goodput_share == 1.0
    assert 0 < lossy.goodput_share < 1 - lossy.drop_fraction
    assert lossy.busbw_gbyte_per_s < lossless.busbw_gbyte_per_s * (1 - lossy.drop_fraction)


def test_go_back_n_goodput_share_formula():
    from clusterforge.netsim.congestion import go_back_n_goodput_share

    assert go_back_n_goodput_share(0.0, 50) == 1.0
    assert go_back_n_goodput_share(0.1, 1) == pytest.approx(0.9)  # one packet: just the loss
    assert go_back_n_goodput_share(0.1, 10) == pytest.approx(0.9 / (0.9 + 1.0))


def test_lossy_roce_reports_drops_of_about_one_minus_capacity_over_offered(lossy):
    assert not lossy.lossless
    assert lossy.would_drop and lossy.congestion_response == "drop"
    expected = 1 - 1 / lossy.max_offered_load
    assert 0 < lossy.drop_fraction < 1
    assert lossy.drop_fraction == pytest.approx(expected, abs=0.01)
    assert lossy.num_paused_links == 0


def test_lossless_roce_reports_pfc_backpressure_instead_of_drops(lossless):
    assert lossless.lossless
    assert not lossless.would_drop and lossless.congestion_response == "pause"
    assert lossless.drop_fraction == 0
    assert lossless.num_paused_links > 0  # pause frames reach the links feeding the hot spot
    assert 0 <= lossless.hol_victim_share <= 1


def test_infiniband_defaults_to_lossless_and_roce_to_lossy():
    ib = build_fabric_graph(make_design(network={"fabric": "infiniband"}))
    roce = build_fabric_graph(make_design(network={"fabric": "roce", "switch": "sn5600"}))
    assert ib.lossless and not roce.lossless


def test_uncongested_fabric_reports_nothing():
    design = make_design(network={"fabric": "roce", "switch": "sn5600", "lossless": False})
    graph = build_fabric_graph(design)
    res = simulate_collective(graph, "all_reduce", GIB, groups_for(design, "all"))  # adaptive
    assert not res.congested
    assert res.congestion_response == "none" and res.drop_fraction == 0
