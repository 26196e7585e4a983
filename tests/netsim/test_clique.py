"""Inside one multi-node NVLink rack NCCL has ONE node: the MNNVL clique.

NCCL fuses the topologies of the clique's trays (``ncclTopoGetSystem``,
``src/graph/topo.cc``) and counts nodes by the first rank of each ring
(``initTransportsRank``, ``src/init.cc``), so trays of one NVL72 rack are one node and
``ncclTopoTuneModel`` (``src/graph/tuning.cc``) adds no network latency to NVLS
(NVIDIA/nccl v2.28.7-1)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.collectives import ring_order
from clusterforge.netsim.context import one_clique, tuning_context
from clusterforge.netsim.latency import latency_s
from clusterforge.netsim.tuner import TuningContext
from clusterforge.spec import parse_spec

MIB = 2**20
NVLS_NVLINK_LATENCY_US = 25.0  # hwLat[NVLINK][NVLS][SIMPLE], src/graph/tuning.cc, v2.28.7-1


def _trays(node: str, trays: int) -> FabricGraph:
    gpus = 4 * trays
    data = {
        "num_gpus": gpus,
        "node": node,
        "spare_fraction": 0,
        "facility": {"max_rack_kw": 140},
        "network": {"fabric": "roce", "switch": "sn5600"},
        "workload": {"tensor_parallel": min(8, gpus), "global_batch": gpus},
    }
    return build_fabric_graph(plan(parse_spec(data)))


@pytest.fixture(scope="module")
def gb300_rack() -> FabricGraph:
    return _trays("gb300-nvl72-tray", 16)


def _context(graph: FabricGraph, n: int, algorithm, collective="all_reduce") -> TuningContext:
    seq = ring_order(graph, np.arange(n)[None, :])
    return tuning_context(graph, collective, seq, algorithm)


def test_nvls_on_16_trays_of_one_gb300_rack_sees_one_node(gb300_rack):
    ctx = _context(gb300_rack, 64, "nvls")
    assert ctx.num_nodes == 1
    assert ctx.num_channels == 0


def test_nvls_in_one_rack_costs_only_its_nvlink_hardware_latency(gb300_rack):
    """No network NVLS latency and no fixed cost of a call across nodes: 25 us."""
    ctx = _context(gb300_rack, 64, "nvls")
    assert latency_s("nvls", "simple", ctx) * 1e6 == pytest.approx(NVLS_NVLINK_LATENCY_US)


def test_all_to_all_in_one_rack_pays_no_network_overhead_per_peer(gb300_rack):
    ctx = _context(gb300_rack, 64, "direct", "all_to_all")
    assert ctx.num_nodes == 1
    one_tray = _context(gb300_rack, 4, "direct", "all_to_all")
    # 63 peers cost no more than 3 peers: only the network charges an overhead per peer
    assert latency_s("direct", "simple", ctx) == pytest.approx(
        latency_s("direct", "simple", one_tray)
    )


def test_nvls_all_reduce_in_one_rack_runs_nvls_at_512_kib(gb300_rack):
    """64 ranks: NCCL's ring LL costs 6.6 + 126 x 0.6 = 82.2 us, NVLS 25 us."""
    res = simulate_collective(gb300_rack, "all_reduce", 512 * 1024, np.arange(64)[None, :])
    assert res.algorithm == "nvls"


def test_a_group_across_two_racks_keeps_its_nodes():
    graph = _trays("gb300-nvl72-tray", 32)
    seq = ring_order(graph, np.arange(128)[None, :])
    assert not one_clique(graph, seq)
    assert tuning_context(graph, "all_to_all", seq, "direct").num_nodes > 1


def test_an_eight_gpu_machine_is_not_a_clique():
    """One NVLink domain inside one machine: already one node, no MNNVL."""
    graph = build_fabric_graph(
        plan(
            parse_spec(
                {
                    "num_gpus": 16,
                    "node": "dgx-b200",
                    "spare_fraction": 0,
                    "workload": {"tensor_parallel": 8, "global_batch": 16},
                }
            )
        )
    )
    seq = ring_order(graph, np.arange(8)[None, :])
    assert not one_clique(graph, seq)
    assert tuning_context(graph, "all_reduce", seq, "nvls").num_nodes == 1
