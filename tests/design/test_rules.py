"""Every rule fires on a design that breaks it and stays quiet on one that does not."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.design.rules import RULES, Finding
from clusterforge.errors import ClusterforgeError
from clusterforge.report.files import render_findings_md
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec

GOOD = dict(  # 512 x H100, 4 per 50 kW rear-door rack, 1:1 rail-optimized, TP in the node
    num_gpus=512,
    min_cpu_cores_per_gpu=8,
    facility={"max_rack_kw": 50, "cooling_available": ["air", "rear-door"], "feeds_per_rack": 1},
    economics={"utilization": 0.95},
)

# rule id -> spec fields (merged over GOOD) that trigger it
TRIGGERS: dict[str, dict[str, object]] = {
    "rack-power-over-cap": {
        "facility": {"max_rack_kw": 15, "cooling_available": ["air"], "feeds_per_rack": 1}
    },
    "power-cap-required": {
        "facility": {
            "max_rack_kw": 9,
            "cooling_available": ["air"],
            "feeds_per_rack": 1,
            "allow_power_capping": True,
        }
    },
    "air-cooling-over-band": {
        "facility": {"max_rack_kw": 25, "cooling_available": ["air"], "feeds_per_rack": 1}
    },
    "cooling-limits-density": {
        "facility": {"max_rack_kw": 60, "cooling_available": ["air"], "feeds_per_rack": 1}
    },
    "tp-exceeds-nvlink-domain": {"workload": {"tensor_parallel": 16, "global_batch": 1024}},
    "fabric-weak-for-tp": {
        "workload": {"tensor_parallel": 16, "global_batch": 1024},
        "network": {"topology": "leaf-spine", "oversubscription": 3},
    },
    "fabric-oversubscribed": {"network": {"topology": "leaf-spine", "oversubscription": 3}},
    "core-oversubscribed": {
        "num_gpus": 4096,
        "network": {"core_oversubscription": 7},
        "workload": {"global_batch": 2048},
    },
    "fewer-nics-than-gpus": {"network": {"nics_per_node": 4}},
    "no-spares": {"spare_fraction": 0},
    "consumer-gpu": {
        "node": "rtx4090-8gpu",
        "workload": {"tensor_parallel": 1, "global_batch": 512},
    },
    "feed-loss-exceeds-psus": {
        "facility": {
            "max_rack_kw": 30,
            "cooling_available": ["air", "rear-door"],
            "feeds_per_rack": 2,
        }
    },
    "storage-read-too-low": {"storage": {"block": "nfs-server-2u", "num_blocks": 1}},
    "checkpoint-write-slow": {
        "storage": {"block": "nfs-server-2u", "num_blocks": 1},
        "workload": {"model": "llama3-70b"},
    },
    "single-switch-link-aggregation": {
        "num_gpus": 64,
        "network": {
            "topology": "single-switch",
            "link_aggregation": True,
            "nics_per_node": 4,
            "fabric": "roce",
            "switch": "sn5600",
        },
        "workload": {"global_batch": 1024},
    },
    "few-cpu-cores-per-gpu": {"min_cpu_cores_per_gpu": 24},
    "all-to-all-on-restricted-topology": {
        "network": {"topology": "rail-only"},
        "workload": {"model": "mixtral-8x7b", "expert_parallel": 8},
    },
    "too-small-to-own": {"num_gpus": 16, "workload": {"global_batch": 16}},
    "floor-overloaded": {
        "facility": {
            "max_rack_kw": 50,
            "cooling_available": ["air", "rear-door"],
            "feeds_per_rack": 1,
            "floor_rating_kn_per_m2": 7.2,  # the TIA-942 minimum: 4 DGX H100 + door exceed it
        }
    },
    "cooling-unsupported-by-node": {
        "facility": {"max_rack_kw": 50, "cooling_available": ["immersion"], "feeds_per_rack": 1}
    },
    "bmc-network-reachable": {"management": {"bmc_access": "routed"}},
    "hall-shape-long-runs": {  # one rack per row: a 0.6 m wide corridor of rows
        "facility": {
            "max_rack_kw": 50,
            "cooling_available": ["air", "rear-door"],
            "feeds_per_rack": 1,
            "racks_per_row": 1,
        }
    },
}


def _ids(**fields: object) -> set[str]:
    spec = {**GOOD, **fields}
    return {f.id for f in plan(make_spec(**spec)).findings}


def test_good_design_has_no_findings():
    assert _ids() == set()


def test_every_rule_has_a_trigger():
    names = {fn.__name__ for fn in RULES}
    assert len(names) <= len(TRIGGERS) + 1  # cooling/power rules share triggers


@pytest.mark.parametrize("rule_id", sorted(TRIGGERS))
def test_rule_fires(rule_id):
    assert rule_id in _ids(**TRIGGERS[rule_id])


def test_findings_carry_numbers_and_fix():
    design = plan(make_spec(**{**GOOD, **TRIGGERS["fabric-weak-for-tp"]}))
    finding = next(f for f in design.findings if f.id == "fabric-weak-for-tp")
    assert finding.severity == "error"
    assert finding.numbers["oversubscription"] == 3
    assert "non-blocking" in finding.fix
    assert design.findings[0].severity == "error"  # errors sort first


def test_nvidia_reference_nodes_pass_the_cpu_core_rule_by_default():
    """DGX H100 (14 cores per GPU) and DGX B200 have enough cores for a training process."""
    for node in ("dgx-h100", "dgx-b200", "dgx-a100"):
        design = plan(make_spec(node=node, num_gpus=64))
        assert "few-cpu-cores-per-gpu" not in {f.id for f in design.findings}, node


def test_finding_numbers_drop_binary_noise():
    finding = Finding(id="x", severity="info", message="m", numbers={"kw": 3 * 3.3}, fix="f")
    assert 3 * 3.3 == 9.899999999999999
    assert finding.numbers["kw"] == 9.9
    design = plan(make_spec(**{**GOOD, **TRIGGERS["feed-loss-exceeds-psus"]}))
    assert "9.899999999999999" not in render_findings_md(design)
    assert "= 9.9" in render_findings_md(design)


def test_rent_finding_names_the_rental_offer():
    design = plan(make_spec(**{**GOOD, **TRIGGERS["too-small-to-own"]}))
    finding = next(f for f in design.findings if f.id == "too-small-to-own")
    assert finding.numbers["rent_basis"] == design.cost.rent_basis
    assert ("reserved" in finding.message) or ("on demand" in finding.message)


def test_empty_cooling_list_is_named_as_empty_not_as_liquid():
    """DGX H100 is air-cooled: an empty list must not be reported as a liquid-cooling gap."""
    with pytest.raises(ClusterforgeError) as info:
        plan(make_spec(node="dgx-h100", facility={"cooling_available": []}))
    message = str(info.value)
    assert "facility.cooling_available" in message and "empty" in message
    assert "liquid-cooled" not in message


def test_immersion_of_an_air_cooled_dgx_h100_is_an_error():
    d = plan(make_spec(**{**GOOD, **TRIGGERS["cooling-unsupported-by-node"]}))
    found = next(f for f in d.findings if f.id == "cooling-unsupported-by-node")
    assert found.severity == "error"
    assert "immersion" in found.message and "dgx-h100" in found.message


def test_nvl72_rack_overloads_a_12_kpa_floor_and_passes_a_slab_rated_for_it():
    spec = load_spec(EXAMPLES / "gb200-nvl72-pod.yaml")
    assert "floor-overloaded" in {f.id for f in plan(spec).findings}
    slab = spec.model_copy(
        update={"facility": spec.facility.model_copy(update={"floor_rating_kn_per_m2": 25.0})}
    )
    assert "floor-overloaded" not in {f.id for f in plan(slab).findings}


def test_feed_loss_on_a_rack_that_outgrows_its_power_shelves():
    spec = make_spec(
        num_gpus=72,
        node="gb300-nvl72-tray",
        spare_fraction=0,
        facility={"max_rack_kw": 140, "cooling_available": ["direct-to-chip"]},
        workload={"tensor_parallel": 8, "global_batch": 72},
    )
    found = {f.id: f for f in plan(spec).findings}
    assert "feed-loss-exceeds-psus" in found
    assert found["feed-loss-exceeds-psus"].numbers["rack_max_kw"] == 140


def test_the_100k_hall_shape_is_flagged_with_its_numbers():
    """9.6 m x 444 m: (9.6 + 444) / 2 / sqrt(9.6 x 444) = 3.47, so its 280 m spine-core runs
    would be about 81 m in a square hall of the same 4,262 m2 (65 m a side)."""
    design = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    finding = next(f for f in design.findings if f.id == "hall-shape-long-runs")
    n = finding.numbers
    assert (n["hall_width_m"], n["hall_depth_m"]) == (9.6, 444.0)
    assert n["shape_factor"] == pytest.approx((9.6 + 444) / 2 / (9.6 * 444) ** 0.5, rel=1e-4)
    assert n["longest_run_m"] == pytest.approx(280, abs=1)
    assert n["square_hall_run_m"] == pytest.approx(280 / 3.47, rel=0.01)
    assert n["medium"] != n["square_hall_medium"]
    assert "444 m" in finding.message and "racks_per_row" in finding.fix


def test_squarer_halls_of_the_examples_are_not_flagged():
    for name in ("hall-4096-b200.yaml", "colo-512-h100.yaml", "lab-8-gpu.yaml"):
        design = plan(load_spec(EXAMPLES / name))
        assert "hall-shape-long-runs" not in {f.id for f in design.findings}, name
