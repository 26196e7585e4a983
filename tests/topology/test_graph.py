"""The link graph mirrors the design's counts and capacities."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.netsim import build_fabric_graph
from clusterforge.topology import LINK_CLASSES, link_class_summary
from tests.netsim.designs import OVERSUBSCRIBED_ROCE, make_design


def _count(graph, cls: str, view=None) -> int:
    view = graph.in_ecmp if view is None else view
    return int((view & (graph.link_class == LINK_CLASSES.index(cls))).sum())


def test_counts_match_the_fabric_design():
    design = make_design()  # 64 DGX H100, rail-optimized InfiniBand
    graph = build_fabric_graph(design)
    fab = design.fabric
    assert _count(graph, "nvlink") == 2 * 512
    assert _count(graph, "nic-leaf") == _count(graph, "leaf-nic") == fab.num_node_links
    assert _count(graph, "leaf-spine") == _count(graph, "spine-leaf") == fab.num_leaf_spine_links


def test_capacities_carry_units_from_the_catalog():
    design = make_design()
    graph = build_fabric_graph(design)
    nvlink = graph.capacity_gbyte_per_s[graph.link_class == LINK_CLASSES.index("nvlink")]
    nic = graph.capacity_gbyte_per_s[graph.link_class == LINK_CLASSES.index("nic-leaf")]
    assert np.all(nvlink == design.compute.gpu.scaleup_gbyte_per_s / 2)  # 450 GB/s one way
    assert np.all(nic == design.fabric.nic_gbit_per_s / 8)  # 400 Gb/s = 50 GB/s


def test_adaptive_aggregates_hold_the_capacity_of_their_members():
    design = make_design(network=OVERSUBSCRIBED_ROCE)
    graph = build_fabric_graph(design)
    cls = LINK_CLASSES.index("leaf-spine")
    members = graph.capacity_gbyte_per_s[graph.in_ecmp & (graph.link_class == cls)].sum()
    aggregates = graph.capacity_gbyte_per_s[graph.leaf_up_link].sum()
    assert aggregates == pytest.approx(members)
    assert graph.leaf_up_link.size == design.fabric.num_leaves


def test_nvl72_domain_spans_eighteen_trays():
    design = make_design(
        num_gpus=144,
        node="gb200-nvl72-tray",
        facility={"max_rack_kw": 140, "cooling_available": ["direct-to-chip"]},
        workload={"tensor_parallel": 4, "global_batch": 144},
    )
    graph = build_fabric_graph(design)
    assert graph.domain_gpus == 72 and graph.gpus_per_node == 4
    dom = graph.domain_of(np.arange(graph.num_gpus))
    assert np.all(np.bincount(dom) == 72)
    assert dom[0] == dom[71] != dom[72]


def test_gpus_without_nvlink_use_the_pcie_complex():
    design = make_design(
        num_gpus=64, node="rtx4090-8gpu", workload={"tensor_parallel": 8, "global_batch": 64}
    )
    graph = build_fabric_graph(design)
    assert graph.scaleup_class == "pcie" and not graph.nvls
    assert _count(graph, "nvlink") == 0 and _count(graph, "pcie") == 2 * 64


def test_three_tier_and_dragonfly_classes_exist():
    tree = build_fabric_graph(
        make_design(
            num_gpus=2048,
            workload={"tensor_parallel": 8, "global_batch": 1024},
            network={"topology": "fat-tree", "switch": "qm8700", "nic_gbit_per_s": 200},
        )
    )
    assert _count(tree, "spine-core") == _count(tree, "core-spine") > 0
    fly = build_fabric_graph(
        make_design(
            num_gpus=4096,
            workload={"tensor_parallel": 8, "global_batch": 1024},
            network={"topology": "dragonfly", "fabric": "roce", "switch": "sn5600"},
        )
    )
    assert _count(fly, "dragonfly-global") > 0 and _count(fly, "dragonfly-local") > 0


def test_names_and_summary():
    design = make_design()
    graph = build_fabric_graph(design)
    assert graph.vertex_name(9) == "gpu-0002/g1"
    assert graph.vertex_name(graph.num_gpus) == "nvswitch-0001"
    summary = {s.link_class: s for s in link_class_summary(graph)}
    assert summary["nic-leaf"].num_links == 512
    assert summary["nic-leaf"].total_gbyte_per_s == pytest.approx(512 * 50)


def test_bundle_lookup_refuses_unjoined_switches():
    graph = build_fabric_graph(make_design())
    with pytest.raises(SimulationError):
        graph.bundle_index(np.array([0]), np.array([1]))  # two leaves: no direct link


def test_mi300x_mesh_peer_links_follow_the_network_links():
    design = make_design(num_gpus=16, node="mi300x-8gpu", workload={"global_batch": 16})
    graph = build_fabric_graph(design)
    assert graph.mesh and graph.scaleup_class == "xgmi"
    node, nic = np.arange(2).repeat(8), np.tile(np.arange(8), 2)
    assert np.all(graph.link_class[graph.nic_up(node, nic)] == LINK_CLASSES.index("nic-leaf"))
    assert _count(graph, "xgmi", graph.in_ecmp) == 2 * 16 + 2 * 56  # up/down + peer links


@pytest.mark.parametrize("num_gpus", [64, 512])
def test_nic_link_ids_skip_the_ports_of_cold_spares(num_gpus):
    """Cold spares have NIC vertices but no fabric link: every leaf -> NIC link id still
    lands on a link from a switch to that NIC (one 64-port switch, or 16 leaves + spines)."""
    design = make_design(num_gpus=num_gpus, spare_fraction=0.05)
    assert design.fabric.num_cold_spares > 0
    graph = build_fabric_graph(design)
    node, nic, _ = design.fabric.connectivity.node_links()
    down = graph.nic_down(node, nic)
    assert down.max() < graph.num_links
    v_nic = graph.num_gpus + graph.num_domains
    assert np.array_equal(graph.link_to[down], v_nic + node * graph.nics_per_node + nic)
    assert (graph.link_from[down] >= v_nic + graph.num_ports).all()
