"""``network.transport``: GPUDirect-TCPX moves what crosses nodes at its measured share of the
RDMA rate (``transport_payload_share``) and leaves traffic inside a node as it was."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.netsim.model import transport_payload_share
from clusterforge.netsim.simulate import collective_time_s
from clusterforge.topology import FabricGraph
from tests.netsim.designs import make_design

GIB = 2**30
# Two A3 High VMs: 8 H100 and four 200 Gb/s GPU NICs each, on one Ethernet leaf.
A3_HIGH = {
    "fabric": "roce",
    "topology": "leaf-spine",
    "switch": "sn5600",
    "nics_per_node": 4,
    "nic_gbit_per_s": 200,
}


def _graph(transport: str) -> FabricGraph:
    design = make_design(
        num_gpus=16,
        network={**A3_HIGH, "transport": transport},
        workload={"tensor_parallel": 8, "global_batch": 16},
    )
    return build_fabric_graph(design)


@pytest.fixture(scope="module")
def graphs() -> tuple[FabricGraph, FabricGraph]:
    return _graph("rdma"), _graph("gpudirect-tcpx")


def test_the_graph_carries_the_spec_transport(graphs):
    rdma, tcpx = graphs
    assert (rdma.transport, tcpx.transport) == ("rdma", "gpudirect-tcpx")
    assert transport_payload_share("rdma") == 1.0
    assert 0.0 < transport_payload_share("gpudirect-tcpx") < 1.0


def test_a_collective_across_nodes_runs_at_the_transport_share(graphs):
    """A large ring across both nodes is NIC-bound: its busbw scales by the share (the
    pipeline ramp, a smaller share of the slower call, moves it by under 1 %)."""
    rdma, tcpx = graphs
    across = np.arange(16)[None, :]
    fast = simulate_collective(rdma, "all_gather", 8 * GIB, across, algorithm="ring")
    slow = simulate_collective(tcpx, "all_gather", 8 * GIB, across, algorithm="ring")
    share = transport_payload_share("gpudirect-tcpx")
    assert slow.busbw_gbyte_per_s / fast.busbw_gbyte_per_s == pytest.approx(share, rel=0.01)
    t_fast = collective_time_s(rdma, "all_reduce", GIB, across)
    t_slow = collective_time_s(tcpx, "all_reduce", GIB, across)
    assert t_slow > t_fast * (1 + 0.9 * (1 / share - 1))


def test_a_collective_inside_a_node_is_unchanged(graphs):
    rdma, tcpx = graphs
    inside = np.arange(8)[None, :]
    for collective in ("all_reduce", "all_gather", "reduce_scatter"):
        t_rdma = collective_time_s(rdma, collective, GIB, inside)
        assert collective_time_s(tcpx, collective, GIB, inside) == t_rdma
