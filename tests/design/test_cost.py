"""Cost of ownership: reserved and on-demand rent, self-built sites, management servers that
scale with the cluster (the break-even size: tests/assess)."""

from __future__ import annotations

import json

import pytest

from clusterforge.design import plan
from clusterforge.design.cost.tco import HOURS_PER_YEAR, payback_month, present_values, rent_offers
from clusterforge.design.plan import management_servers
from clusterforge.report.files import design_json
from clusterforge.spec import EconomicsSpec
from tests.conftest import make_spec

# --- rent -------------------------------------------------------------------------------


def test_reserved_bills_every_hour_of_whole_terms(catalog):
    e = EconomicsSpec(years=4, reserved_term_years=3, cloud_usd_per_gpu_hour=2.0, utilization=0.5)
    offers = rent_offers(e, catalog.gpus["h100-sxm"], 64)
    assert offers.reserved_billed_years == 6  # two 3-year contracts cover 4 years
    assert offers.reserved_total_usd == pytest.approx(64 * HOURS_PER_YEAR * 6 * 2.0)


def test_on_demand_bills_only_used_hours(catalog):
    gpu = catalog.gpus["h100-sxm"]
    busy = rent_offers(EconomicsSpec(utilization=1.0), gpu, 64)
    idle = rent_offers(EconomicsSpec(utilization=0.25), gpu, 64)
    assert idle.on_demand_total_usd == pytest.approx(busy.on_demand_total_usd / 4)
    assert idle.reserved_total_usd == busy.reserved_total_usd  # a contract bills idle hours


def test_default_prices_come_from_the_gpu_row(catalog):
    h100 = rent_offers(EconomicsSpec(), catalog.gpus["h100-sxm"], 8)
    b200 = rent_offers(EconomicsSpec(), catalog.gpus["b200"], 8)
    assert h100.reserved_usd_per_gpu_hour == catalog.gpus["h100-sxm"].rent_reserved_usd_per_gpu_hour
    assert b200.on_demand_usd_per_gpu_hour == catalog.gpus["b200"].rent_on_demand_usd_per_gpu_hour
    assert b200.reserved_usd_per_gpu_hour > h100.reserved_usd_per_gpu_hour
    assert h100.price_date == catalog.gpus["h100-sxm"].rent_price_date


@pytest.mark.parametrize(("utilization", "basis"), [(0.95, "reserved"), (0.5, "on-demand")])
def test_cheaper_basis_follows_utilization(catalog, utilization, basis):
    offers = rent_offers(EconomicsSpec(utilization=utilization), catalog.gpus["h100-sxm"], 8)
    assert offers.basis == basis


def test_verdict_states_its_basis():
    d = plan(make_spec(economics={"rent_basis": "on-demand", "utilization": 0.9}))
    assert d.cost.rent_basis == "on-demand"
    assert d.cost.rent_total_usd == d.cost.rent.on_demand_total_usd
    forced = plan(make_spec(economics={"rent_basis": "reserved"}))
    assert forced.cost.rent_total_usd == forced.cost.rent.reserved_total_usd
    cost = json.loads(design_json(forced))["cost"]
    assert cost["rent_basis"] == "reserved"
    assert cost["rent"]["reserved_term_years"] == 1.0 and cost["rent"]["price_date"]


# --- self-built data centre ----------------------------------------------------------------


def test_self_build_pays_for_the_building():
    colo = plan(make_spec(num_gpus=256))
    own = plan(make_spec(num_gpus=256, facility={"colo_usd_per_kw_month": 0}))
    assert colo.cost.datacenter_capex_usd == 0
    assert "datacenter" not in colo.cost.capex_by_category_usd
    expected = 11.7e6 * own.power.it_max_kw / 1000  # $/MW of critical IT load
    assert own.cost.datacenter_capex_usd == pytest.approx(expected)
    assert own.cost.capex_usd - colo.cost.capex_usd == pytest.approx(expected)
    # 4 of 20 years depreciated: 80 % of the building is residual value
    assert own.cost.residual_usd - colo.cost.residual_usd == pytest.approx(0.8 * expected)


# --- management servers ----------------------------------------------------------------------


def _mgmt(num_gpus: int, **fields: object) -> dict[str, int]:
    d = plan(make_spec(num_gpus=num_gpus, **fields))
    return management_servers(d.spec, d.compute)


def test_one_node_gets_one_head_node():
    assert _mgmt(8, spare_fraction=0) == {"head": 1}


def test_four_su_superpod_matches_the_reference_build():
    """DGX SuperPOD H100, 4 SUs (127 nodes): 5 management servers and 4 UFM appliances."""
    roles = _mgmt(1016, spare_fraction=0)
    assert roles["ufm"] == 4
    assert sum(roles.values()) - roles["ufm"] == 5


def test_management_grows_with_the_cluster():
    small = sum(_mgmt(1016).values())
    large = sum(_mgmt(32768).values())
    assert large > small + 10


def test_ethernet_fabric_has_no_ufm():
    roles = _mgmt(1024, network={"fabric": "roce", "switch": "sn5600"})
    assert roles.get("ufm", 0) == 0


# --- the build total, its residual, payback and present value ---------------------------------


def _self_built(**economics: object):
    return plan(make_spec(num_gpus=256, facility={"colo_usd_per_kw_month": 0}, economics=economics))


def test_build_total_is_capex_plus_opex_less_a_residual_of_two_parts():
    c = _self_built().cost
    assert c.build_total_usd == pytest.approx(
        c.capex_usd + c.years * c.opex_per_year_usd - c.residual_usd
    )
    assert c.residual_usd == pytest.approx(c.building_residual_usd + c.hardware_residual_usd)
    # 4 of the building's 20 years used: 80 % of it is left; 10 % of the hardware resells
    assert c.building_residual_usd == pytest.approx(0.8 * c.datacenter_capex_usd)
    hardware = c.capex_usd - c.datacenter_capex_usd - c.capex_by_category_usd["installation"]
    assert c.hardware_residual_usd == pytest.approx(0.1 * hardware)


def test_a_self_built_site_pays_to_run_its_building():
    own = _self_built()
    per_kw_year = own.spec.economics.datacenter_opex_usd_per_kw_year
    assert per_kw_year > 0
    building = own.cost.opex_by_category_per_year_usd["building"]
    assert building == pytest.approx(per_kw_year * own.power.it_max_kw)
    colo = plan(make_spec(num_gpus=256))
    assert "building" not in colo.cost.opex_by_category_per_year_usd  # the colo rent covers it


def test_present_values_match_a_hand_calculation():
    # capex $100, opex $10/yr, resale $20 at the end, rent $200 over 4 years, 10 %/yr.
    # A level stream paid through the period is worth (1 - 1.1^-4) / ln 1.1 = 3.325841 years
    # of its yearly amount today; the resale is worth 1.1^-4 = 0.683013 of itself.
    pv = present_values(
        capex_usd=100, opex_per_year_usd=10, residual_usd=20, rent_total_usd=200, years=4,
        discount_rate=0.10,
    )  # fmt: skip
    assert pv.build_usd == pytest.approx(100 + 33.25841 - 13.66027, rel=1e-5)  # 119.59814
    assert pv.rent_usd == pytest.approx(50 * 3.325841, rel=1e-5)  # 166.29207
    assert pv.npv_usd == pytest.approx(166.29207 - 119.59814, rel=1e-5)


def test_without_discounting_the_npv_is_rent_less_build():
    c = _self_built(discount_rate=0.0).cost
    assert c.npv_usd == pytest.approx(c.rent_total_usd - c.build_total_usd)
    discounted = _self_built(discount_rate=0.08).cost
    assert discounted.discount_rate == 0.08
    assert discounted.npv_usd != pytest.approx(c.npv_usd)


def test_payback_month_by_hand():
    # capex $120, opex $12/yr, rent $240 over 4 years ($60/yr): the totals meet at
    # 120 / (60 - 12) = 2.5 years, so building is cheaper from month 31 on
    assert payback_month(capex_usd=120, opex_per_year_usd=12, residual_usd=0,
                         rent_total_usd=240, years=4) == 31  # fmt: skip
    # the rent never catches up before the end; the resale at the end tips it
    assert payback_month(capex_usd=200, opex_per_year_usd=12, residual_usd=50,
                         rent_total_usd=240, years=4) == 48  # fmt: skip
    assert payback_month(capex_usd=300, opex_per_year_usd=12, residual_usd=0,
                         rent_total_usd=240, years=4) is None  # fmt: skip
