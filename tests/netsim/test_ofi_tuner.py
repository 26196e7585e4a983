"""``network.nccl_tuner`` and ``network.nccl_protocols``: AWS's OFI tuner plugin pins the
(algorithm, protocol) of its P6-B200 region table above 2 nodes, and NCCL_PROTO limits the
protocols NCCL weighs (aws/aws-ofi-nccl ``src/tuner/nccl_ofi_regions.cpp`` and
``src/platform-aws.cpp``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clusterforge.errors import SimulationError, SpecError
from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.netsim.ofi_tuner import extend_region, region_pairs, regions_for
from clusterforge.spec import parse_spec
from clusterforge.topology import FabricGraph
from tests.netsim.designs import make_design

MIB = 2**20
P6 = "aws-ofi-p6-b200"


def _p6(nodes: int, **network: Any) -> FabricGraph:
    """``nodes`` DGX B200 (8 GPUs, 8 x 400 Gb/s NICs, P6-B200's count and rate) on RoCE."""
    design = make_design(
        num_gpus=8 * nodes,
        node="dgx-b200",
        network={"fabric": "roce", "switch": "sn5600", **network},
        workload={"tensor_parallel": 8, "global_batch": 8 * nodes},
    )
    return build_fabric_graph(design)


@pytest.fixture(scope="module")
def four_nodes() -> dict[str, FabricGraph]:
    return {
        "nccl": _p6(4),
        "ofi": _p6(4, nccl_tuner=P6),
        "ofi-simple": _p6(4, nccl_tuner=P6, nccl_protocols=["simple"]),
    }


@pytest.mark.parametrize(
    ("size_bytes", "pair"),
    [
        (256 * 1024, ("tree", "ll")),
        (16 * MIB, ("tree", "ll128")),  # up to 18,350,080 B at 32 ranks
        (64 * MIB, ("ring", "ll128")),  # on the edge shared with NVLS-Tree: first region wins
        (256 * MIB, ("nvls_tree", "simple")),
        (1024 * MIB, ("ring", "simple")),  # from 435,159,040 B at 32 ranks
    ],
)
def test_the_p6_table_at_32_ranks(size_bytes, pair):
    assert region_pairs(P6, "all_reduce", size_bytes, 32, 4)[0] == pair


def test_the_plugin_leaves_nccl_its_choice():
    """Two nodes or fewer, another rank layout, another collective, or NCCL's own tuner."""
    assert region_pairs(P6, "all_reduce", 16 * MIB, 16, 2) == []
    assert region_pairs(P6, "all_reduce", 16 * MIB, 8, 1) == []
    assert region_pairs(P6, "all_reduce", 16 * MIB, 16, 4) == []  # 4 ranks a node
    assert region_pairs(P6, "all_gather", 16 * MIB, 32, 4) == []
    assert region_pairs("nccl", "all_reduce", 16 * MIB, 32, 4) == []


def test_extended_vertices_follow_the_plugin_s_rule():
    box = (100.0 * 2**30, 1024.0 * 1024)
    assert extend_region((393216, 16), (393216, 1024), box) == (393216, box[1])
    x, y = extend_region((10737418240, 512), (34359738368, 1500), box)
    assert x == box[0] and 1500 < y < box[1]
    assert [r.algorithm for r in regions_for(P6, "all_reduce")] == [
        "tree",
        "tree",
        "ring",
        "nvls_tree",
        "ring",
    ]


def test_the_graph_carries_the_spec_settings(four_nodes):
    assert (four_nodes["nccl"].nccl_tuner, four_nodes["nccl"].nccl_protocols) == ("nccl", None)
    assert four_nodes["ofi-simple"].nccl_tuner == P6
    assert four_nodes["ofi-simple"].nccl_protocols == ("simple",)


def test_the_simulator_runs_the_pair_the_plugin_pins(four_nodes):
    ranks = np.arange(32)[None, :]
    ofi = simulate_collective(four_nodes["ofi"], "all_reduce", 16 * MIB, ranks)
    assert (ofi.algorithm, ofi.protocol) == ("tree", "ll128")
    own = simulate_collective(four_nodes["nccl"], "all_reduce", 16 * MIB, ranks)
    assert (own.algorithm, own.protocol) == ("ring", "ll128")  # NCCL's own choice


def test_a_protocol_nccl_proto_leaves_out_is_skipped_by_the_plugin(four_nodes):
    """With NCCL_PROTO=simple the ring/LL128 region is not enabled: the next region holding
    64 MiB at 32 ranks, NVLS-Tree/Simple, runs."""
    ranks = np.arange(32)[None, :]
    res = simulate_collective(four_nodes["ofi-simple"], "all_reduce", 64 * MIB, ranks)
    assert (res.algorithm, res.protocol) == ("nvls_tree", "simple")


def test_one_node_keeps_nccl_s_choice_and_honours_nccl_proto():
    ranks = np.arange(8)[None, :]
    plain = simulate_collective(_p6(1), "all_reduce", 16 * MIB, ranks)
    ofi = simulate_collective(_p6(1, nccl_tuner=P6), "all_reduce", 16 * MIB, ranks)
    assert (ofi.algorithm, ofi.protocol) == (plain.algorithm, plain.protocol)
    simple = simulate_collective(_p6(1, nccl_protocols=["simple"]), "all_reduce", 16 * MIB, ranks)
    assert simple.protocol == "simple"


def test_forcing_a_protocol_nccl_proto_leaves_out_is_refused(four_nodes):
    ranks = np.arange(32)[None, :]
    with pytest.raises(SimulationError, match="NCCL_PROTO simple"):
        simulate_collective(four_nodes["ofi-simple"], "all_reduce", MIB, ranks, protocol="ll128")


def test_no_protocol_left_for_the_forced_algorithm_is_refused():
    graph = _p6(1, nccl_protocols=["ll128"])
    ranks = np.arange(8)[None, :]
    with pytest.raises(SimulationError, match="allow simple"):
        simulate_collective(graph, "all_reduce", MIB, ranks, algorithm="nvls")
    res = simulate_collective(graph, "all_reduce", 16 * MIB, ranks)  # NVLS is skipped
    assert res.protocol == "ll128"


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        ({"nccl_protocols": ["ll129"]}, ["network.nccl_protocols", "'ll129'", "'simple'"]),
        ({"nccl_protocols": []}, ["nccl_protocols is empty"]),
        ({"nccl_protocols": ["simple", "simple"]}, ["names a protocol twice"]),
        ({"nccl_tuner": "aws-ofi-p6"}, ["network.nccl_tuner", "'aws-ofi-p6-b200'"]),
    ],
)
def test_bad_settings_name_the_field_and_the_fix(network, expected):
    with pytest.raises(SpecError) as info:
        parse_spec({"num_gpus": 32, "node": "dgx-b200", "network": network})
    for text in expected:
        assert text in str(info.value)
