"""The whole pipeline on the shipped examples and the 512 x H100 colo worked example."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.errors import CapacityError
from clusterforge.spec import default_spec, load_spec
from tests.conftest import EXAMPLES, make_spec


def test_default_is_the_512_h100_colo():
    d = plan(default_spec())
    assert d.compute.num_training_gpus == 512
    assert d.compute.num_spare_nodes == 4  # ceil(5 % of 64)
    assert d.layout_density.nodes_per_rack == 1  # 10.2 kW nodes under a 15 kW cap
    gpu_racks = [r for r in d.racks if r.role == "gpu"]
    assert len(gpu_racks) == d.compute.num_nodes
    assert all(r.max_kw <= 15 for r in d.racks)
    assert {r.cooling.method for r in gpu_racks} == {"air"}
    # all-in ≈ $45-52k per H100 (SemiAnalysis / latent.space "$2 H100s", 2024); build ≈
    # $2.1-2.4 per GPU-hour over 4 years
    assert 40_000 < d.cost.capex_per_gpu_usd < 55_000
    assert 1.9 < d.cost.effective_build_usd_per_gpu_hour < 2.6
    # IT ≈ 0.70-0.73 MW for 64 nodes + fabric (ours has 4 spare nodes and storage)
    assert 650 < d.power.it_max_kw < 850


def test_nodes_per_rack_never_exceed_the_cap():
    d = plan(
        make_spec(
            num_gpus=256, facility={"max_rack_kw": 35, "cooling_available": ["air", "rear-door"]}
        )
    )
    assert d.layout_density.nodes_per_rack == 3  # 3 x 10.2 = 30.6 kW
    assert all(r.max_kw <= 35 for r in d.racks)
    full = [r for r in d.racks if r.role == "gpu" and r.max_kw > 30]
    assert full and {r.cooling.method for r in full} == {"rear-door"}  # 30.6 kW > air band


def test_rack_cap_below_one_node_proposes_power_cap():
    d = plan(make_spec(facility={"max_rack_kw": 9, "allow_power_capping": True}))
    cap = d.layout_density.power_cap
    assert cap is not None and cap.gpu_power_limit_w < 700
    assert any(f.id == "power-cap-required" for f in d.findings)


def test_rack_cap_below_one_node_is_refused_with_the_cap_it_would_need():
    with pytest.raises(CapacityError, match="max_rack_kw") as info:
        plan(make_spec(facility={"max_rack_kw": 9}))
    assert "allow_power_capping: true" in str(info.value)
    assert "550 W" in str(info.value)  # 700 W - (10.2 - 9) kW / 8 GPUs


def test_liquid_node_needs_liquid_cooling():
    with pytest.raises(CapacityError, match="direct-to-chip"):
        plan(
            make_spec(
                node="hgx-h100-4u-liquid",
                network={"fabric": "roce"},  # its BlueField-3 SuperNICs are Ethernet-only
                facility={"cooling_available": ["air"]},
            )
        )


def test_nvl72_rack_cannot_be_split():
    with pytest.raises(CapacityError, match="cannot be split"):
        plan(
            make_spec(
                num_gpus=72,
                node="gb200-nvl72-tray",
                workload={"global_batch": 72},
                facility={"max_rack_kw": 60, "cooling_available": ["direct-to-chip"]},
            )
        )


def test_elevations_do_not_overlap():
    d = plan(load_spec(EXAMPLES / "hall-4096-b200.yaml"))
    for rack in d.racks:
        used: set[int] = set()
        for dev in rack.devices:
            span = set(range(dev.u_position, dev.u_position + dev.u_height))
            assert not (span & used), rack.name
            assert all(1 <= u <= 48 for u in span)
            used |= span


def test_every_device_placed_once():
    d = plan(default_spec())
    names = [dev.name for r in d.racks for dev in r.devices if dev.kind in ("node", "switch")]
    nodes = [n for n in names if n.startswith("gpu-")]
    assert sorted(nodes) == sorted(d.compute.node_names)
    fabric_switches = [n for n in names if n.startswith(("leaf-", "spine-", "core-"))]
    assert len(fabric_switches) == d.fabric.num_switches


def test_cabling_counts_match_the_fabric():
    d = plan(default_spec())
    by_name = {(c.fabric, c.name): c for c in d.cabling}
    # spares on the free ports of the two full SUs: none free, so the 4 spares stay cold
    assert d.fabric.num_cold_spares == 4
    assert by_name[("compute", "node-leaf")].num_links == d.compute.num_training_nodes * 8
    assert by_name[("compute", "leaf-spine")].num_links == d.fabric.num_leaf_spine_links
    ports = d.fabric.ports_used
    assert ports["leaf"] == d.fabric.num_node_links + d.fabric.num_leaf_spine_links
    assert ports["spine"] == d.fabric.num_leaf_spine_links
    # runs inside a row of 600 mm racks stay within multimode reach (50 m OM4 SR4)
    assert by_name[("compute", "node-leaf")].length_m_max <= 50
    # DGX twin-port cages: one module per two node links; QM9700 twin-port per two switch ports
    node_leaf = by_name[("compute", "node-leaf")]
    fibre = sum(m.num_links for m in node_leaf.media if m.medium.startswith(("mmf", "smf")))
    assert sum(m.num_transceivers for m in node_leaf.media) == fibre
    # 400G: copper in the rack, transceivers and fibre beyond; never an AOC
    assert {m.medium for m in node_leaf.media} <= {"dac", "acc", "mmf-sr4"}


def test_long_runs_use_single_mode():
    d = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    media = {m.medium for c in d.cabling if c.fabric == "compute" for m in c.media}
    assert media & {"smf-dr4", "smf-dr4-500"}


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_plans(example):
    d = plan(load_spec(EXAMPLES / example))
    assert d.compute.num_training_gpus == d.spec.num_gpus
    assert d.cost.capex_usd > 0 and d.racks


def test_colossus_scale_anchors():
    """SemiAnalysis: a 100k-H100 cluster is ~150 MW critical IT and > $4B capex [S]."""
    d = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    assert 110_000 < d.power.it_max_kw < 170_000
    assert d.cost.capex_usd > 4e9
    assert d.fabric.tiers == 3
    assert d.layout_density.nodes_per_rack == 8  # 64 GPUs per rack, as at Colossus


def test_low_utilization_makes_renting_win():
    spec = default_spec()
    spec = spec.model_copy(
        update={"economics": spec.economics.model_copy(update={"utilization": 0.3})}
    )
    d = plan(spec)
    assert not d.cost.build_wins
    assert d.cost.break_even_utilization > 0.3


def test_plan_is_fast_for_512():
    import time

    start = time.perf_counter()
    plan(default_spec())
    assert time.perf_counter() - start < 5.0  # generous: correctness test, speed is benchmarked


def test_slower_links_cost_less_optics():
    d = plan(default_spec())
    per_link = {}
    for c in d.cabling:
        for m in c.media:
            if m.medium == "mmf-sr4":
                per_link[c.gbit_per_s] = m.cost_usd / m.num_links
    assert per_link[100] < 0.5 * per_link[400]
