"""Physical design: rack-scale systems, cable reach and media, spares, small clusters, bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from clusterforge.catalog import Catalog
from clusterforge.design import plan
from clusterforge.design.cabling.media import fiber_media, pick_media
from clusterforge.design.fabric.sizing import FabricParams, size_fabric
from clusterforge.design.fabric.switches import default_switch
from clusterforge.errors import CapacityError
from clusterforge.report.files import racks_csv
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec


def _example(name: str, **network: object):
    spec = load_spec(EXAMPLES / name)
    if network:
        spec = spec.model_copy(update={"network": spec.network.model_copy(update=network)})
    return plan(spec)


# --- rack-scale systems -----------------------------------------------------------------


def test_nvl72_racks_hold_whole_systems_with_their_own_power_and_cooling():
    """GB200 NVL72: 576 GPUs are 8 racks of 18 trays + 9 NVLink switch trays each."""
    d = _example("gb200-nvl72-pod.yaml")
    gpu_racks = [r for r in d.racks if r.role == "gpu"]
    assert len(gpu_racks) == 8
    for index, rack in enumerate(gpu_racks):
        kinds = [dev.kind for dev in rack.devices]
        assert kinds.count("node") == 18
        assert kinds.count("cdu") == 1
        assert [dev.role for dev in rack.devices].count("nvlink") == 9
        assert rack.nvlink_domain == index
        assert rack.cooling.method == "direct-to-chip"
        assert rack.circuit.load_kw == pytest.approx(18 * 6.6 + 13.2)
    # membership is readable: the trays of rack k are nodes 18k .. 18k+17
    first = [next(dev.name for dev in r.devices if dev.kind == "node") for r in gpu_racks]
    assert first == [d.compute.node_names[18 * k] for k in range(8)]


def test_nvl72_elevation_has_compute_trays_above_and_below_the_switch_trays():
    """The GB200 NVL72 rack's front, bottom to top (NVIDIA DGX GB200 User Guide, "Hardware",
    front view): power shelves, 8 compute trays, the 9 NVLink switch trays, 10 compute trays,
    power shelves; every tray is 1U."""
    d = _example("gb200-nvl72-pod.yaml")
    for rack in (r for r in d.racks if r.role == "gpu"):
        stack = sorted((dev for dev in rack.devices if dev.kind in ("node", "switch",
                        "power-shelf")), key=lambda dev: dev.u_position)  # fmt: skip
        runs = [(kind, len(list(group))) for kind, group in itertools.groupby(
            "shelf" if dev.kind == "power-shelf" else dev.role for dev in stack)]  # fmt: skip
        assert runs == [("shelf", 4), ("compute", 8), ("nvlink", 9), ("compute", 10),
                        ("shelf", 4)]  # fmt: skip
        assert {dev.u_height for dev in stack} == {1}
        trays = [dev for dev in stack if dev.role == "nvlink"]
        assert [t.name for t in trays] == [f"nvlink-switch-{i}" for i in range(1, 10)]


def test_nvl72_rack_is_fed_by_busway_tap_offs_to_eight_power_shelves(catalog: Catalog):
    """NVIDIA's GB200 rack: 8 power shelves of 33 kW, 4 per feed, each on its own circuit from
    a busway tap-off; no zero-U PDU, and the shelves take their U from the rack's fixed parts."""
    d = _example("gb200-nvl72-pod.yaml")
    rack = next(r for r in d.racks if r.role == "gpu")
    shelves = [dev for dev in rack.devices if dev.kind == "power-shelf"]
    assert len(shelves) == 8 and {dev.u_height for dev in shelves} == {1}
    assert not [dev for dev in rack.devices if dev.kind == "pdu"]
    assert rack.circuit.power_path == "busway-power-shelf"
    assert (rack.circuit.circuits_per_feed, rack.circuit.breaker_a) == (4, 63)
    node = catalog.nodes["gb200-nvl72-tray"]
    trays = [dev for dev in rack.devices if dev.role == "nvlink"]
    assert sum(t.u_height for t in trays) + len(shelves) <= node.rack_overhead_u
    spans = sorted((dev.u_position, dev.u_position + dev.u_height) for dev in rack.devices
                   if dev.u_height and dev.kind != "patch-panel")  # fmt: skip
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))  # no overlap
    bom = {line.item: line for line in d.bom}
    assert bom["busway-tap-off"].quantity == 8 * 8
    assert bom["power-shelf-33kw"].quantity == 8 * 8
    assert bom["power-shelf-33kw"].extended_usd == 0  # priced in the system's trays
    gpu_pdus = sum(r.circuit.num_whips for r in d.racks if r.role != "gpu")
    assert bom["pdu-3ph"].quantity == gpu_pdus  # PDUs only in the network and core racks


def test_rack_mass_is_the_frame_and_every_device_in_it(catalog: Catalog):
    """An NVL72 rack weighs about 1.36 t (plus its CDU here); its floor load is m·g over the
    footprint, and the design's JSON carries it."""
    d = _example("gb200-nvl72-pod.yaml")
    rack = next(r for r in d.racks if r.role == "gpu")
    frame = catalog.facility["rack-48u"].weight_kg
    assert rack.floor.mass_kg == pytest.approx(frame + sum(x.weight_kg for x in rack.devices))
    assert 1300 <= rack.floor.mass_kg - catalog.facility["rack-cdu"].weight_kg <= 1400
    f = d.spec.facility
    area = f.rack_width_m * f.rack_depth_m
    assert rack.floor.load_kn_per_m2 == pytest.approx(rack.floor.mass_kg * 9.80665 / area / 1000)
    assert rack.floor.point_load_kn == pytest.approx(rack.floor.mass_kg * 9.80665 / 4000)
    csv_rows = racks_csv(d).splitlines()
    header = csv_rows[0].split(",")
    first = dict(zip(header, csv_rows[1].split(","), strict=True))
    assert float(first["rack_kg"]) == pytest.approx(rack.floor.mass_kg, abs=0.5)
    dumped = d.model_dump(mode="json")["racks"][0]["floor"]
    assert dumped["mass_kg"] == pytest.approx(rack.floor.mass_kg)
    assert dumped["rating_kn_per_m2"] == f.floor_rating_kn_per_m2


def test_rear_door_hangs_on_the_rack_and_adds_its_mass(catalog: Catalog):
    d = plan(
        make_spec(num_gpus=64, facility={"max_rack_kw": 50, "cooling_available": ["rear-door"]})
    )
    rack = next(r for r in d.racks if r.role == "gpu")
    assert rack.cooling.method == "rear-door"
    devices_kg = sum(x.weight_kg for x in rack.devices)
    frame_and_door = catalog.facility["rack-48u"].weight_kg + catalog.facility["rdhx"].weight_kg
    assert rack.floor.mass_kg == pytest.approx(devices_kg + frame_and_door)


def test_rack_scale_rule_comes_from_the_catalog(catalog: Catalog):
    tray = catalog.nodes["gb200-nvl72-tray"]
    assert tray.rack_scale_nodes * tray.num_gpus == tray.nvlink_domain_gpus == 72


# --- cable reach and media ----------------------------------------------------------------


def _reach(catalog: Catalog, medium: str) -> float:
    return catalog.media[medium].max_reach_m


def test_colossus_runs_stay_within_reach_and_switches_sit_with_their_pods():
    d = _example("colossus-100k-h100.yaml")
    by_name = {(c.fabric, c.name): c for c in d.cabling}
    for c in d.cabling:
        longest_reach = max(_reach(d.catalog, m.medium) for m in c.media)
        assert c.length_m_max <= longest_reach, (c.fabric, c.name)
    assert by_name[("out-of-band", "device-oob")].length_m_max <= 100  # Cat6 channel
    # spines stand in their pod: leaf-spine runs are short, unlike the spine-core runs
    assert by_name[("compute", "leaf-spine")].length_m_max <= 50
    assert by_name[("compute", "node-leaf")].length_m_max <= 50
    assert by_name[("in-band", "endpoint-leaf")].length_m_max <= 100


def test_a_run_beyond_every_medium_is_an_error(catalog: Catalog):
    media = fiber_media(catalog, 400)
    with pytest.raises(CapacityError, match="exceeds"):
        pick_media(np.array([5.0, 2500.0]), media)
    with pytest.raises(CapacityError, match="exceeds the 100 m"):
        pick_media(np.array([120.0]), [catalog.media["cat6"]])


def test_media_follow_speed_rules(catalog: Catalog):
    """AOCs are a 200G-and-below choice; 400G/800G use copper, then transceivers + fibre."""
    fast = {m.id for m in fiber_media(catalog, 400)}
    assert "aoc" not in fast and {"dac", "mmf-sr4", "smf-dr4"} <= fast
    assert "aoc" in {m.id for m in fiber_media(catalog, 100)}
    for example in ("colo-512-h100.yaml", "hall-4096-b200.yaml"):
        d = _example(example)
        for c in d.cabling:
            if c.gbit_per_s > 200:
                assert "aoc" not in {m.medium for m in c.media}, (example, c.name)


# --- spares ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "leaves", "spines", "pool_leaves", "cold"),
    [
        ("spare-ports", 16, 8, 0, 4),  # the reference 2-SU fabric; no free port: 4 cold spares
        ("spare-pool", 16, 8, 1, 0),  # their own leaf, outside the training fabric
        ("counted", 24, 16, 0, 0),  # cabled like training nodes: a third SU
    ],
)
def test_spare_attachment_modes_on_the_512_gpu_colo(mode, leaves, spines, pool_leaves, cold):
    d = _example("colo-512-h100.yaml", spares=mode)
    assert (d.fabric.num_leaves, d.fabric.num_spines) == (leaves, spines)
    assert d.fabric.num_spare_pool_leaves == pool_leaves
    assert d.fabric.num_cold_spares == cold
    assert d.fabric.num_switches == leaves + spines + pool_leaves


def test_spares_cost_what_their_attachment_costs():
    capex = {
        mode: _example("colo-512-h100.yaml", spares=mode).cost.capex_usd
        for mode in ("spare-ports", "spare-pool", "counted")
    }
    assert capex["spare-ports"] < capex["spare-pool"] < capex["counted"]


def test_default_spares_keep_the_reference_hall_fabric():
    """16 SUs of B200 with 26 spares: the reference 128 leaves, 128 spines, 64 cores."""
    d = _example("hall-4096-b200.yaml")
    assert (d.fabric.num_leaves, d.fabric.num_spines, d.fabric.num_cores) == (128, 128, 64)


def test_spares_fill_free_ports_of_a_partly_populated_su():
    spec = make_spec(num_gpus=240, spare_fraction=0.1)  # 30 training + 3 spare nodes
    d = plan(spec)
    assert d.fabric.num_leaves == 8  # one SU of 32 slots: 2 spares cabled, 1 cold
    assert d.fabric.num_cold_spares == 1
    counted = spec.model_copy(
        update={"network": spec.network.model_copy(update={"spares": "counted"})}
    )
    assert plan(counted).fabric.num_leaves == 16  # 33 nodes: a second SU


# --- small clusters -------------------------------------------------------------------------


def test_one_node_needs_no_fabric_and_one_rack():
    d = _example("lab-8-gpu.yaml")
    assert d.fabric.num_switches == 0
    assert not [c for c in d.cabling if c.fabric == "compute"]
    assert d.storage.block.id == "nfs-server-2u" and d.storage.num_blocks == 1
    assert "storage" not in {f.name for f in d.support_fabrics}
    assert len(d.racks) == 1


def test_one_node_without_a_compute_fabric_raises_no_nic_finding():
    d = _example("lab-8-gpu.yaml")
    assert "fewer-nics-than-gpus" not in {f.id for f in d.findings}
    # with a fabric, a node with fewer NICs than GPUs still draws the finding
    shared = plan(make_spec(num_gpus=64, network={"nics_per_node": 4}))
    assert "fewer-nics-than-gpus" in {f.id for f in shared.findings}


@pytest.mark.parametrize("topology", ["single-switch", "leaf-spine", "fat-tree", "rail-optimized"])
def test_64_gpu_nics_fill_one_64_port_switch(topology):
    """8 DGX H100 x 8 NICs = 64 ports, a QM9700's 64 NDR ports: one switch, no up-links (the
    spare node of the default 5 % stays cold: cabling it would need a second switch)."""
    d = plan(make_spec(num_gpus=64, network={"topology": topology, "switch": "qm9700"}))
    assert d.fabric.num_switches == 1 and d.fabric.tiers == 1
    assert d.fabric.num_node_links == 64 and d.fabric.num_leaf_spine_links == 0
    assert d.compute.num_spare_nodes == 1 and d.fabric.num_cold_spares == 1


@pytest.mark.parametrize("topology", ["rail-optimized", "fat-tree", "leaf-spine"])
def test_spares_never_grow_a_full_two_tier_fabric(topology):
    """256 DGX H100 fill 64 leaves, all a 2-tier radix-64 fabric holds: the spares stay cold
    whatever the Clos flavour, instead of refusing the design."""
    net = {"topology": topology, "switch": "qm9700", "tiers": 2}
    d = plan(make_spec(num_gpus=2048, network=net))
    assert d.fabric.connectivity.num_nodes == d.compute.num_training_nodes == 256
    assert d.fabric.num_cold_spares == d.compute.num_spare_nodes > 0


def test_large_clusters_keep_the_parallel_file_system():
    d = _example("colo-512-h100.yaml")
    assert d.storage.block.parallel
    assert "storage" in {f.name for f in d.support_fabrics}


# --- fat-tree tiers --------------------------------------------------------------------------


@pytest.mark.parametrize(("tiers", "expected"), [(None, 1), (2, 2), (3, 3)])
def test_fat_tree_honours_tiers(tiers, expected):
    d = plan(make_spec(num_gpus=64, network={"topology": "fat-tree", "tiers": tiers}))
    assert d.fabric.tiers == expected
    if tiers is None:
        assert d.fabric.num_switches == 1  # the 64 NIC ports fill one 64-port leaf


def test_one_tier_is_one_switch_or_an_error(catalog: Catalog):
    params = FabricParams(
        topology="fat-tree",
        switch=catalog.switches["sn5600"],
        nics_per_node=8,
        nic_gbit_per_s=400,
        tiers=1,
    )
    assert size_fabric(params, num_nodes=16).connectivity.num_switches == 1
    with pytest.raises(CapacityError, match="tiers"):
        size_fabric(params, num_nodes=17)


# --- catalog facts and structure --------------------------------------------------------------


def test_default_switches_come_from_the_catalog(catalog: Catalog):
    roles = {
        role: default_switch(catalog, role).id
        for role in ("compute-infiniband", "compute-roce", "in-band", "out-of-band")
    }
    assert roles == {
        "compute-infiniband": "qm9700",
        "compute-roce": "sn5600",
        "in-band": "sn4600c",
        "out-of-band": "sn2201",
    }


def test_fabric_counts_have_one_owner():
    d = _example("colo-512-h100.yaml")
    c = d.fabric.connectivity
    dumped = d.fabric.model_dump()
    assert dumped["num_leaves"] == c.num_leaves and dumped["num_spines"] == c.num_spines
    assert d.fabric.num_switches == c.num_switches


# --- absurd inputs fail at once ----------------------------------------------------------------
# The spec refuses these values at its boundary; the planner must stay bounded on its own
# (a library caller can build a spec without validation), so the specs are copied unchecked.


def _unchecked(section: str | None = None, **values: object):
    spec = make_spec()
    if section is None:
        return spec.model_copy(update=values)
    return spec.model_copy(update={section: getattr(spec, section).model_copy(update=values)})


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (_unchecked("storage", num_blocks=100_000_000), "storage.num_blocks"),
        (_unchecked("facility", breaker_a=0.01), "breaker_a"),
        (_unchecked("facility", voltage_v=1.0), "voltage_v"),
        (_unchecked(num_gpus=1_000_000_000), "num_gpus"),
        (_unchecked("network", nics_per_node=100_000), "nics_per_node"),
    ],
)
def test_absurd_values_are_clean_errors(spec, field):
    with pytest.raises(CapacityError, match=field):
        plan(spec)


def test_nvl72_rack_name_shows_its_nvlink_domain():
    from clusterforge.report.elevation import elevation_svg

    svg = elevation_svg(_example("gb200-nvl72-pod.yaml"), max_racks=3)
    assert "(NVLink 1)" in svg
