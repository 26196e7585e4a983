"""Storage and in-band networks follow the reference design the node's catalog row names:
separate storage and in-band fabrics (DGX SuperPOD H100/B200) or one converged Ethernet fabric
reached through the compute trays' BlueField-3 ports (DGX SuperPOD GB200)."""

from __future__ import annotations

import math

import pytest

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design import plan
from clusterforge.design.compute import size_compute
from clusterforge.design.fabric.switches import default_switch
from clusterforge.design.management import management_servers
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec


def _fabrics(design) -> dict[str, object]:
    return {f.name: f for f in design.support_fabrics}


def test_rack_scale_trays_say_their_storage_and_inband_share_one_ethernet_fabric(
    catalog: Catalog,
):
    for node_id in ("gb200-nvl72-tray", "gb300-nvl72-tray"):
        node = catalog.nodes[node_id]
        assert node.storage_inband == "converged"
        assert node.num_storage_ports > 0 and node.num_inband_ports == 0
    for node_id in ("dgx-h100", "dgx-b200"):
        assert catalog.nodes[node_id].storage_inband == "separate"


def test_gb200_pod_has_one_converged_ethernet_fabric_sized_by_its_bluefield_ports(
    catalog: Catalog,
):
    d = plan(load_spec(EXAMPLES / "gb200-nvl72-pod.yaml"))
    fabrics = _fabrics(d)
    assert set(fabrics) == {"storage-inband", "out-of-band"}
    fab = fabrics["storage-inband"]
    tray = catalog.nodes["gb200-nvl72-tray"]
    assert fab.switch.id == default_switch(catalog, "storage-inband").id == "sn5600"
    assert fab.port_gbit_per_s == tray.storage_port_gbit_per_s == 200
    node_ports = d.compute.num_nodes * tray.num_storage_ports  # 144 trays x 4 BlueField-3 ports
    assert node_ports == 576
    assert fab.num_endpoint_ports >= node_ports + d.storage.num_blocks * d.storage.block.num_ports
    # leaves keep the 5:3 endpoint:uplink bandwidth ratio, up-links at 800G
    down = fab.ports_per_leaf
    assert down * fab.port_gbit_per_s / (
        fab.num_uplinks / fab.num_leaves * fab.uplink_gbit_per_s
    ) == (pytest.approx(5 / 3, rel=1e-3))
    assert fab.num_leaves == math.ceil(fab.num_endpoint_ports / down)
    assert fab.num_switches <= 8  # not 15 InfiniBand + 9 in-band switches


def test_gb200_converged_fabric_cables_every_port_with_breakout_optics():
    d = plan(load_spec(EXAMPLES / "gb200-nvl72-pod.yaml"))
    fab = _fabrics(d)["storage-inband"]
    by_name = {(c.fabric, c.name): c for c in d.cabling}
    ends = by_name[("storage-inband", "endpoint-leaf")]
    assert ends.num_links == fab.num_endpoint_ports
    assert ends.gbit_per_s == 200
    ups = by_name[("storage-inband", "leaf-spine")]
    # the SN5600's 800G cages as 2 x 400G: the fastest speed the catalog has optics for,
    # so every leaf-spine link is an orderable part (no unpriced 800G line in the BOM)
    assert ups.num_links == fab.num_uplinks and ups.gbit_per_s == 400
    assert not ups.media[0].missing_parts
    # a switch cage carries four 200G ports: modules on fibre runs = node ends + cages
    for m in ends.media:
        if m.num_transceivers:
            assert m.num_transceivers == m.num_links + math.ceil(m.num_links / 4)
    assert not [c for c in d.cabling if c.fabric in ("storage", "in-band")]


def test_dgx_h100_keeps_its_separate_storage_and_inband_fabrics():
    d = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    fabrics = _fabrics(d)
    assert set(fabrics) == {"storage", "in-band", "out-of-band"}
    assert fabrics["storage"].switch.id == "qm9700"
    assert fabrics["in-band"].switch.id == "sn4600c"
    assert fabrics["in-band"].port_gbit_per_s == 100


def test_ufm_pairs_only_for_infiniband_fabrics():
    """An InfiniBand compute fabric gets its UFM pair; a converged Ethernet storage fabric
    needs none (the separate InfiniBand storage fabric of DGX H100 gets a second pair)."""
    gb_spec = make_spec(num_gpus=576, node="gb200-nvl72-tray", spare_fraction=0)
    h100_spec = make_spec(num_gpus=512)
    gb = management_servers(gb_spec, size_compute(gb_spec, load_catalog()))
    h100 = management_servers(h100_spec, size_compute(h100_spec, load_catalog()))
    assert h100["ufm"] == 2 * gb["ufm"] == 4


def test_twin_port_cages_hold_two_storage_links_per_module():
    """A QM9700 cage holds a twin-port OSFP: two 400G storage ports per switch-side module,
    one module per node port (DGX H100 storage fabric)."""
    d = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    by_name = {(c.fabric, c.name): c for c in d.cabling}
    for name, node_side in (("endpoint-leaf", 1), ("leaf-spine", 2)):
        for m in by_name[("storage", name)].media:
            if m.num_transceivers:
                switch_side = math.ceil(m.num_links / 2)
                assert m.num_transceivers == math.ceil(m.num_links / node_side) + switch_side


def test_support_switches_are_numbered_per_tier_from_one():
    design = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    racked = {d.name for r in design.racks for d in r.devices}
    for fab in design.support_fabrics:
        leaves = [f"{fab.name}-leaf-{i:03d}" for i in range(1, fab.num_leaves + 1)]
        spines = [f"{fab.name}-spine-{i:03d}" for i in range(1, fab.num_spines + 1)]
        assert set(leaves + spines) <= racked, fab.name
    assert any(f.num_spines for f in design.support_fabrics)  # a two-tier one is checked
