"""A 16,384-GPU DP all-reduce on three tiers: one flow per GPU, bandwidth under the NIC.

Its speed is measured by ``benchmarks/simulate_scale.py``, not asserted here."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.spec import parse_spec


@pytest.mark.slow
def test_all_dp_groups_of_16k_gpus_on_three_tiers_with_ecmp():
    spec = {
        "num_gpus": 16384,
        "node": "hgx-h100-4u-liquid",
        "spare_fraction": 0,
        "network": {"fabric": "roce", "topology": "rail-optimized", "switch": "sn5600", "tiers": 3},
        "workload": {"tensor_parallel": 8, "pipeline_parallel": 16, "global_batch": 512},
    }
    design = plan(parse_spec(spec))
    graph = build_fabric_graph(design)
    groups = groups_for(design, "dp", placement="fragmented")
    res = simulate_collective(graph, "all_reduce", 2**30, groups, routing="ecmp", algorithm="ring")
    assert res.num_flows == 16384  # one ring edge per GPU, DP groups have one GPU per node
    assert 0 < res.busbw_gbyte_per_s <= 50
