"""Hierarchical all-reduce: pipelined intra reduce-scatter / inter all-reduce / intra
all-gather, against a flat ring on multi-node groups with slow NICs."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.netsim.model import pipelined_time_s
from clusterforge.netsim.simulate import solve_phases
from tests.netsim.designs import make_design

GIB = 2**30


@pytest.fixture(scope="module")
def slow_nics():
    """H100 nodes with 8 x 200 Gb/s NICs: 25 GB/s per GPU off the node vs 450 on NVLink."""
    return build_fabric_graph(make_design(network={"nic_gbit_per_s": 200}))


@pytest.mark.parametrize("num_nodes", [2, 4])
def test_hierarchical_beats_a_flat_ring_across_nodes(slow_nics, num_nodes):
    group = np.arange(8 * num_nodes)[None, :]
    ring = simulate_collective(slow_nics, "all_reduce", GIB, group, algorithm="ring")
    hier = simulate_collective(slow_nics, "all_reduce", GIB, group, algorithm="hierarchical")
    assert hier.busbw_gbyte_per_s > 1.1 * ring.busbw_gbyte_per_s
    assert hier.busbw_gbyte_per_s <= 2 * 8 * 200 / 8  # physics: k NICs, 2(m-1)/m <= 2


def test_pipelining_overlaps_the_phases(slow_nics):
    group = np.arange(16)[None, :]
    phases = solve_phases(slow_nics, "all_reduce", "hierarchical", group, "adaptive", 1, False)
    assert len(phases) == 3 and all(p.pipelined for p in phases)
    stage_s = [p.unit_time_s * GIB for p in phases]
    res = simulate_collective(slow_nics, "all_reduce", GIB, group, algorithm="hierarchical")
    bandwidth_s = res.time_s - res.latency_s
    assert max(stage_s) <= bandwidth_s < 0.98 * sum(stage_s)  # overlapped, not back to back


def test_pipelined_time_is_the_slowest_stage_plus_a_fill_term():
    assert pipelined_time_s([1.0, 3.0, 1.0], 4 * 2**20) == pytest.approx(5.0)  # one chunk
    many = pipelined_time_s([1.0, 3.0, 1.0], 2**30)
    assert 3.0 < many < 3.05  # 256 chunks of 4 MiB
