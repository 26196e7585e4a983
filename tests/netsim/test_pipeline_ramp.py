"""The Simple protocol's pipeline ramp is a fixed time (the steps' synchronisation), not a
fixed number of bytes: a pipeline paced by the NICs reaches its steady rate at a smaller
message than one paced by NVLink SHARP, where the ramp was calibrated."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.netsim.model import RAMP_BYTES, pipeline_efficiency
from tests.netsim.designs import make_design, single_node

MIB = 2**20


def _ring_bandwidth(graph, groups, size):
    """Bus bandwidth of the bandwidth part of a Simple ring all-reduce (its latency, a
    separate term, taken out)."""
    res = simulate_collective(
        graph, "all_reduce", size, groups, algorithm="ring", protocol="simple"
    )
    return res.busbw_gbyte_per_s * res.time_s / (res.time_s - res.latency_s)


def test_ramp_is_the_calibrated_one_at_the_calibration_rate():
    """At the NVLS rate it was fitted on, the time ramp is the fitted byte ramp."""
    from clusterforge.netsim.model import RAMP_EXPONENT, RAMP_SECONDS

    for size in (MIB, 16 * MIB, 128 * MIB):
        steady_s = size * RAMP_SECONDS / RAMP_BYTES
        expected = 1 / (1 + (RAMP_BYTES / size) ** RAMP_EXPONENT)
        assert pipeline_efficiency(steady_s) == pytest.approx(expected)


def test_nic_paced_ring_is_near_its_steady_rate_at_128_mib():
    design = make_design(
        num_gpus=16,
        node="dgx-a100",
        network={"nics_per_node": 4},
        workload={"tensor_parallel": 8, "global_batch": 16},
    )
    graph, groups = build_fabric_graph(design), np.arange(16)[None, :]
    ratio = _ring_bandwidth(graph, groups, 128 * MIB) / _ring_bandwidth(graph, groups, 16 * 2**30)
    assert ratio >= 0.9


def test_nvlink_paced_ring_ramps_more_slowly_than_a_nic_paced_one():
    _, graph = single_node("dgx-h100")
    groups = np.arange(8)[None, :]
    inside = _ring_bandwidth(graph, groups, 128 * MIB) / _ring_bandwidth(graph, groups, 16 * 2**30)
    assert inside < 0.9
