"""RoCE congestion control: NICs that cut their rate on ECN marks (DCQCN) share a collided
link fairly instead of overflowing it; loss and go-back-N only where neither congestion
control nor PFC applies.

Thresholds, stated before the first run: with ECMP collisions, rate-controlled RoCE stays
within a factor of 4 of adaptive routing (NVIDIA reports 60 % vs 95 % data throughput for
standard Ethernet vs Spectrum-X on xAI's Colossus, a factor of 1.6), is still measurably
below adaptive routing (collisions halve the rate of the flows that share a link), and is at
least ten times the lossy no-control fabric of the same traffic (which collapses).
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.congestion import RATE_CONTROLLED_LINK_SHARE
from tests.netsim.designs import EXAMPLES, make_design

GIB = 2**30


def _graph_and_groups(**net):
    design = make_design(
        network={"topology": "leaf-spine", "fabric": "roce", "switch": "sn5600", **net}
    )
    return build_fabric_graph(design), groups_for(design, "all")


def _ring(routing: str, **net):
    graph, groups = _graph_and_groups(**net)
    return simulate_collective(graph, "all_reduce", GIB, groups, routing=routing, algorithm="ring")


@pytest.fixture(scope="module")
def dcqcn():
    return _ring("ecmp", lossless=False)  # RoCE default: DCQCN on


@pytest.fixture(scope="module")
def no_control():
    return _ring("ecmp", lossless=False, congestion_control="none")


@pytest.fixture(scope="module")
def adaptive():
    return _ring("adaptive", lossless=False)


def test_roce_defaults_to_dcqcn_and_infiniband_to_credit_flow_control_only():
    roce, _ = _graph_and_groups()
    ib = build_fabric_graph(make_design(network={"fabric": "infiniband"}))
    assert roce.rate_control and not roce.lossless
    assert not ib.rate_control and ib.lossless


def test_rate_controlled_roce_drops_nothing_on_a_collided_link(dcqcn, no_control):
    assert dcqcn.congested and no_control.congested
    assert dcqcn.congestion_response == "rate" and not dcqcn.would_drop
    assert dcqcn.drop_fraction == 0
    assert dcqcn.goodput_share == pytest.approx(RATE_CONTROLLED_LINK_SHARE)
    assert no_control.congestion_response == "drop" and no_control.would_drop


def test_ecmp_with_dcqcn_costs_but_within_a_small_factor_of_adaptive(dcqcn, adaptive):
    assert not adaptive.congested
    ratio = dcqcn.busbw_gbyte_per_s / adaptive.busbw_gbyte_per_s
    assert 0.25 <= ratio < 0.9


def test_without_congestion_control_loss_collapses_throughput(dcqcn, no_control):
    assert dcqcn.busbw_gbyte_per_s >= 10 * no_control.busbw_gbyte_per_s


def test_pfc_without_rate_control_pauses_and_with_it_rate_control_acts_first():
    pfc = _ring("ecmp", lossless=True, congestion_control="none")
    both = _ring("ecmp", lossless=True, congestion_control="dcqcn")
    assert pfc.congestion_response == "pause" and pfc.goodput_share == 1.0
    assert both.congestion_response == "rate" and both.num_paused_links == 0


def test_rate_control_costs_nothing_where_no_link_is_overloaded(adaptive):
    assert adaptive.congestion_response == "none" and adaptive.goodput_share == 1.0


@pytest.mark.slow
def test_colossus_dp_all_reduce_with_ecmp_stays_within_a_factor_of_4_of_adaptive():
    """The 100k-GPU Spectrum-X example: every data-parallel group's ring at once."""
    from clusterforge.design import plan
    from clusterforge.spec import load_spec

    design = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    graph = build_fabric_graph(design)
    groups = np.asarray(groups_for(design, "dp"))
    busbw = {
        routing: simulate_collective(
            graph, "all_reduce", GIB, groups, routing=routing, algorithm="ring"
        ).busbw_gbyte_per_s
        for routing in ("ecmp", "adaptive")
    }
    assert busbw["ecmp"] >= 0.25 * busbw["adaptive"]
