"""Circuit capacity (√3·V·I·0.8), breaker choice, power capping, cooling bands."""

from __future__ import annotations

import pytest

from clusterforge.design.facility.cooling import airflow_cfm, choose_cooling, cool_rack
from clusterforge.design.facility.power import (
    circuit_kva,
    phase_current_a,
    plan_circuits,
    propose_power_cap,
)
from clusterforge.errors import CapacityError
from clusterforge.spec import FacilitySpec

# (voltage, phases, breaker A, load factor, usable kVA): P = √3·V_LL·I·f (IEEE 141), f = 0.8
# for continuous load (NEC 210.19)
CIRCUIT_TABLE = [
    (208, 1, 30, 0.8, 5.0),
    (208, 3, 30, 0.8, 8.6),
    (208, 3, 50, 0.8, 14.4),
    (208, 3, 60, 0.8, 17.3),
    (415, 3, 20, 0.8, 11.5),
    (415, 3, 30, 0.8, 17.3),
    (400, 3, 32, 1.0, 22.2),
    (415, 3, 60, 0.8, 34.5),
    (400, 3, 63, 1.0, 43.6),
    (415, 3, 100, 0.8, 57.5),
    (480, 3, 60, 0.8, 39.9),
]


@pytest.mark.parametrize(("volts", "phases", "amps", "factor", "kva"), CIRCUIT_TABLE)
def test_circuit_table(volts, phases, amps, factor, kva):
    assert circuit_kva(volts, amps, phases, factor) == pytest.approx(kva, abs=0.06)


def test_phase_current_of_a_dgx_h100_on_415v():
    """10.2 kW at PF 0.95 on 415 V 3φ draws 10200 / (√3·415·0.95) = 14.9 A per phase."""
    assert phase_current_a(10.2, 415, 3, 0.95) == pytest.approx(14.9, abs=0.05)


def test_each_feed_carries_the_whole_rack():
    f = FacilitySpec(voltage_v=415, breaker_a=20, feeds_per_rack=2)
    c = plan_circuits(30.6, f, _path("psu"))  # three DGX H100
    assert c.circuits_per_feed == 3  # 10.9 kW usable per 20 A circuit
    assert c.num_whips == 6
    assert c.usable_kw * c.circuits_per_feed >= 30.6


def test_smallest_standard_breaker_is_chosen():
    c = plan_circuits(30.6, FacilitySpec(voltage_v=415, breaker_a=None), _path("psu"))
    assert c.circuits_per_feed == 1
    assert c.breaker_a == 60  # 415 V 3φ 60 A = 34.5 kVA, the first standard size that fits


def test_power_cap_proposal_and_penalty():
    cap = propose_power_cap(10.2, 8, 700, 8.0, "facility.max_rack_kw")
    assert cap.gpu_power_limit_w == pytest.approx(700 - 2200 / 8)
    # the matmul rate at a power limit, one relation with predict's: HGX B100 (700 W, 56
    # PFLOPS FP8 sparse per 8 GPUs) against HGX B200 (1,000 W, 72): exponent 0.705
    assert cap.throughput_factor == pytest.approx((cap.gpu_power_limit_w / 700) ** 0.7046, rel=1e-3)
    assert cap.throughput_factor == pytest.approx(0.703, abs=1e-3)  # 425 W of 700


def test_a_spec_power_limit_is_where_the_cap_starts():
    """Eight GPUs already limited to 600 W draw 0.8 kW less; the cap takes the rest off the
    600 W, and the matmul share is still counted from the 700 W TDP."""
    cap = propose_power_cap(10.2 - 0.8, 8, 700, 8.0, "facility.max_rack_kw", gpu_limit_w=600)
    assert cap.gpu_power_limit_w == pytest.approx(600 - 1400 / 8)
    assert cap.throughput_factor == pytest.approx((425 / 700) ** 0.7046, rel=1e-3)


def test_power_cap_refused_below_half_tdp():
    with pytest.raises(CapacityError, match="max_rack_kw"):
        propose_power_cap(10.2, 8, 700, 5.0, "facility.max_rack_kw")


@pytest.mark.parametrize(
    ("kw", "available", "liquid", "method"),
    [
        (10.2, ["air", "rear-door"], False, "air"),
        (40.8, ["air", "rear-door"], False, "rear-door"),
        (84.0, ["air", "rear-door", "direct-to-chip"], False, "direct-to-chip"),
        (10.0, ["air", "direct-to-chip"], True, "direct-to-chip"),
        (132.0, ["air", "rear-door"], False, None),
    ],
)
def test_cooling_method_by_density(kw, available, liquid, method):
    assert choose_cooling(kw, available, liquid) == method


def test_heat_and_airflow():
    """1 kW = 3,412 BTU/h; ~158 CFM per kW at ΔT = 20 °F; a DGX H100 needs ~1,600 CFM."""
    assert airflow_cfm(1.0) == pytest.approx(158, abs=1)
    assert airflow_cfm(10.2) == pytest.approx(1611, abs=10)
    dlc = cool_rack(100.0, "direct-to-chip")
    assert dlc.heat_btu_per_h == pytest.approx(341200)
    assert dlc.liquid_heat_kw == pytest.approx(70.0)


def _path(feeds: str):
    from clusterforge.catalog import load_catalog

    return next(p for p in load_catalog().power_paths if p.feeds == feeds)


def test_current_shown_is_per_circuit_against_that_circuits_breaker():
    """84 kW on three 60 A circuits per feed: each circuit carries a third, 41 A per phase,
    68 % of its breaker and 85 % of its 80 % continuous rating (not the feed's 123 A)."""
    f = FacilitySpec(voltage_v=415, breaker_a=60, power_factor=0.95)
    c = plan_circuits(84.0, f, _path("psu"))
    assert c.circuits_per_feed == 3
    assert c.phase_current_a == pytest.approx(phase_current_a(28.0, 415, 3, 0.95))
    assert c.phase_current_a == pytest.approx(41.0, abs=0.1)
    assert c.breaker_load == pytest.approx(c.phase_current_a / c.breaker_a)
    assert c.utilization == pytest.approx(c.breaker_load / f.continuous_load_factor)


def test_zero_u_pdus_stop_at_63_a_so_a_dense_rack_gets_several():
    """No zero-U PDU takes a 125 A whip: an 84 kW rack gets three 60 A PDUs per feed."""
    c = plan_circuits(84.0, FacilitySpec(voltage_v=415), _path("psu"))
    assert c.power_path == "zero-u-pdu"
    assert c.breaker_a <= 63
    assert c.circuits_per_feed == 3
    assert c.breaker_a == 60  # 32.8 kW usable x 3 >= 84 kW; 50 A (27.3 kW) x 3 is short


def test_power_shelf_rack_gets_a_tap_off_per_shelf():
    """A 132 kW NVL72 rack: 33 kW shelves, four per feed (eight per rack), each on 63 A."""
    c = plan_circuits(132.0, FacilitySpec(voltage_v=415), _path("power-shelf"))
    assert c.power_path == "busway-power-shelf"
    assert (c.circuits_per_feed, c.num_whips, c.breaker_a) == (4, 8, 63)
    assert c.utilization <= 1.0


def test_breaker_over_the_rack_end_device_rating_is_refused():
    with pytest.raises(CapacityError, match=r"facility\.breaker_a"):
        plan_circuits(30.0, FacilitySpec(voltage_v=415, breaker_a=125), _path("power-shelf"))


def test_a_rack_over_its_shelves_keeps_them_and_shows_the_feed_cannot_carry_it():
    """A 140 kW GB300 rack still has 4 + 4 shelves of 33 kW: one feed's 132 kW falls short,
    which the circuit's utilization over 1 records (the feed-loss rule reports it)."""
    c = plan_circuits(140.0, FacilitySpec(voltage_v=415), _path("power-shelf"))
    assert (c.circuits_per_feed, c.breaker_a) == (4, 63)
    assert c.utilization > 1.0
