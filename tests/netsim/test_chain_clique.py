"""Broadcast and reduce on a multi-node NVLink fabric: NCCL runs them on its ring graph
(``RunWorkColl<ncclFuncBroadcast, T, RedOp, NCCL_ALGO_RING, ...>`` is the only algorithm in
``src/device/broadcast.h``, NVIDIA/nccl v2.28.7-1; reduce likewise in ``reduce.h``), whose
node under MNNVL is the NVLink domain (``initTransportsRank`` counts nodes by each ring's
first rank): inside one NVL72 rack nothing crosses the network, across racks only the
rack-to-rack hops do."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.context import tuning_context
from clusterforge.spec import parse_spec

MIB = 2**20


@pytest.fixture(scope="module")
def nvl72() -> FabricGraph:
    spec = parse_spec(
        {
            "num_gpus": 288,
            "node": "gb200-nvl72-tray",
            "facility": {"max_rack_kw": 140, "cooling_available": ["direct-to-chip"]},
            "workload": {"global_batch": 576},
        }
    )
    return build_fabric_graph(plan(spec))


@pytest.mark.parametrize(("num_gpus", "nodes"), [(8, 1), (72, 1), (144, 2), (288, 4)])
def test_a_chain_counts_nvlink_domains_as_nodes(nvl72, num_gpus, nodes):
    seq = np.arange(num_gpus)[None, :]
    for collective in ("broadcast", "reduce"):
        assert tuning_context(nvl72, collective, seq, "chain").num_nodes == nodes


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_a_rack_broadcasts_as_one_node(nvl72, collective):
    """72 GPUs of one rack: NVLink hops only, no call across nodes or network chunk fill,
    so the open chain costs what the all-gather's ring of the same 72 GPUs does (with 18
    trays counted as nodes a 1 MiB broadcast took ~450 us, 2.3 GB/s, against 19.6 GB/s for
    the all-gather)."""
    rack = simulate_collective(nvl72, collective, MIB, np.arange(72)[None, :])
    ring = simulate_collective(nvl72, "all_gather", MIB, np.arange(72)[None, :])
    assert rack.link_class_utilization["nic-leaf"].max_utilization == 0
    assert rack.busbw_gbyte_per_s > 0.9 * ring.busbw_gbyte_per_s


def test_across_racks_a_broadcast_crosses_on_the_rack_channels(nvl72):
    """Two racks: one rack-to-rack hop, each of the rack ring's channels on its own NIC
    (trees.rack_ring), as the all-gather's ring; with trays as nodes the chain crossed on
    one tray's NICs and reached 169 GB/s at 1 GiB against the all-gather's 515."""
    two = simulate_collective(nvl72, "broadcast", 2**30, np.arange(144)[None, :])
    ring = simulate_collective(nvl72, "all_gather", 2**30, np.arange(144)[None, :])
    assert two.busbw_gbyte_per_s > 0.8 * ring.busbw_gbyte_per_s
