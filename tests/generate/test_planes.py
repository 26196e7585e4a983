"""Multi-plane fabrics in the generated files: the scheduling tree groups nodes by node group
as on one plane, each tree switch stands for its switches in every plane, and NetBox cables
each NIC to the leaf of its own plane."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.generate.kubernetes.files import node_labels
from clusterforge.generate.layout import SPARE_GROUP, node_placements, switch_tree
from clusterforge.generate.training.launch import hca_names
from clusterforge.spec import load_spec, parse_spec
from tests.generate.conftest import SPECS
from tests.generate.emulated_slurm import expand_hostlist

MULTI_PLANE_SPECS = sorted(SPECS.glob("multi-plane*.yaml"))


def _fat_tree_two_planes() -> Design:
    return plan(
        parse_spec(
            {
                "name": "fat-tree-2p",
                "num_gpus": 4096,
                "node": "dgx-h100",
                "network": {"topology": "fat-tree", "tiers": 3, "planes": 2},
                "facility": {"max_rack_kw": 40},
                "workload": {"tensor_parallel": 8, "pipeline_parallel": 4, "global_batch": 1024},
            }
        )
    )


def _designs() -> list[tuple[str, Design]]:
    out = [(p.stem, plan(load_spec(p))) for p in MULTI_PLANE_SPECS]
    return [*out, ("fat-tree-2p", _fat_tree_two_planes())]


DESIGNS = _designs()


@pytest.fixture(params=DESIGNS, ids=[name for name, _ in DESIGNS])
def design(request: pytest.FixtureRequest) -> Design:
    return request.param[1]


def test_specs_are_multi_plane_clos_fabrics() -> None:
    assert len(MULTI_PLANE_SPECS) >= 2
    for _, d in DESIGNS:
        c = d.fabric.connectivity
        assert c.kind == "clos" and c.num_planes == 2
        assert c.num_spines > 0
    assert _fat_tree_two_planes().fabric.connectivity.num_cores > 0


def _node_index(design: Design) -> dict[str, int]:
    return {name: i for i, name in enumerate(design.compute.node_names)}


def test_level_0_groups_nodes_by_node_group_and_names_every_planes_leaves(design: Design) -> None:
    c = design.fabric.connectivity
    node, _, leaf = c.node_links()
    index = _node_index(design)
    level0 = [s for s in switch_tree(design) if s.level == 0]
    assert sum(len(s.nodes) for s in level0) == design.compute.num_nodes
    for s in level0:
        if s.name == SPARE_GROUP:  # spares the fabric does not cable with the training nodes
            assert min(index[n] for n in s.nodes) >= c.num_nodes
            continue
        ids = np.array([index[n] for n in s.nodes])
        assert len(set(c.group_of(ids).tolist())) == 1  # one node group (SU, ToR group)
        leaves = {c.switch_name(int(x)) for x in leaf[np.isin(node, ids)]}
        assert set(s.members) == leaves
        assert set(c.plane_of_switch(np.unique(leaf[np.isin(node, ids)])).tolist()) == {0, 1}


def _switch_ids(design: Design) -> dict[str, int]:
    c = design.fabric.connectivity
    return {c.switch_name(i): i for i in range(c.num_switches)}


def test_upper_tree_switches_stand_for_the_spines_and_cores_of_every_plane(design: Design) -> None:
    c = design.fabric.connectivity
    a, b, _, tier = c.switch_links()
    ids = _switch_ids(design)
    tree = {s.name: s for s in switch_tree(design)}
    for s in tree.values():
        if s.level != 1:
            continue
        leaves = {ids[m] for child in s.children for m in tree[child].members}
        spines = set(b[(tier == 0) & np.isin(a, list(leaves))].tolist())
        assert {ids[m] for m in s.members} == spines
    cores = [s for s in tree.values() if s.level == 2]
    if c.num_cores:
        first_core = c.num_switches - c.num_cores
        assert {ids[m] for m in cores[0].members} == set(range(first_core, c.num_switches))
    else:
        assert not cores


def test_topology_conf_comments_list_the_leaves_of_every_plane(design: Design) -> None:
    files = {f.path: f.content for f in render(design, ["slurm"])}
    stands_for = dict(re.findall(r"^# (\S+) stands for (\S+)$", files["slurm/topology.conf"], re.M))
    for s in switch_tree(design):
        if s.name != SPARE_GROUP:
            assert set(expand_hostlist(stands_for[s.name])) == set(s.members)


def test_kubernetes_labels_group_nodes_as_the_tree(design: Design) -> None:
    tree_group = {n: s.name for s in switch_tree(design) if s.level == 0 for n in s.nodes}
    for p in node_placements(design):
        labels = node_labels(design, p)
        assert labels["clusterforge.io/leaf-group"] == tree_group[p.name]
        assert labels["clusterforge.io/rails"] == str(design.fabric.nics_per_node)


def _tables(design: Design) -> dict[str, list[dict[str, str]]]:
    files = render(design, ["inventory"])
    return {Path(f.path).name: list(csv.DictReader(io.StringIO(f.content))) for f in files}


@pytest.mark.parametrize("spec", MULTI_PLANE_SPECS, ids=lambda p: p.stem)
def test_netbox_cables_join_each_nic_to_its_planes_leaf(spec: Path) -> None:
    design = plan(load_spec(spec))
    c = design.fabric.connectivity
    tables = _tables(design)
    hcas = hca_names(design)
    node, nic, leaf = c.node_links()
    names = design.compute.node_names
    expected = {
        (names[n], hcas[i]): c.switch_name(sw)
        for n, i, sw in zip(node.tolist(), nic.tolist(), leaf.tolist(), strict=True)
    }
    cables = [row for row in tables["13-cables.csv"] if row["description"] == "compute node-leaf"]
    got = {(row["side_a_device"], row["side_a_name"]): row["side_b_device"] for row in cables}
    assert got == expected
    ids = _switch_ids(design)
    for (_, hca), sw in got.items():
        assert int(c.plane_of_switch(np.array(ids[sw]))) == hcas.index(hca) % c.num_planes
    interfaces = {
        (row["device"], row["name"]): row["description"] for row in tables["10-interfaces.csv"]
    }
    assert interfaces[(names[0], hcas[1])] == "rail 1, plane 1"


@pytest.mark.parametrize("spec", MULTI_PLANE_SPECS, ids=lambda p: p.stem)
def test_netbox_switch_cables_stay_inside_one_plane(spec: Path) -> None:
    design = plan(load_spec(spec))
    c = design.fabric.connectivity
    ids = _switch_ids(design)
    rows = [
        row
        for row in _tables(design)["13-cables.csv"]
        if row["description"].startswith("compute ") and row["description"] != "compute node-leaf"
    ]
    a = np.array([ids[row["side_a_device"]] for row in rows])
    b = np.array([ids[row["side_b_device"]] for row in rows])
    assert a.size == int(c.switch_links()[2].sum())
    assert np.array_equal(c.plane_of_switch(a), c.plane_of_switch(b))
