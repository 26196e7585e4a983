"""Goodput with in-rack spares: one small pool per NVLink domain, swapped in by a restart."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from clusterforge.design import plan
from clusterforge.goodput import (
    GoodputInputs,
    LifeParams,
    expected_goodput,
    inputs_from_design,
    job_rates,
    simulate_lives,
)
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES

H = 3600.0


def _gb200(**fields: object):
    spec = load_spec(EXAMPLES / "gb200-nvl72-pod.yaml")
    return plan(spec.model_copy(update=fields))


def test_in_rack_spares_are_one_hot_pool_per_domain():
    inputs = inputs_from_design(_gb200(spare_nodes_per_nvlink_domain=2), days=137.9)
    assert inputs.num_spares == 2  # each domain's own
    assert inputs.num_spare_pools == 9  # one per rack
    assert inputs.swap_s == 0.0  # already up in the domain: the restart is the swap


def test_a_whole_spare_rack_stands_in_for_one_domain_at_a_time():
    """18 spare trays in a rack of their own replace a failed domain, not 18 trays."""
    whole_rack = inputs_from_design(_gb200(spare_fraction=0.05), days=137.9)
    assert (whole_rack.num_spares, whole_rack.num_spare_pools) == (1, 1)
    assert whole_rack.swap_s > 0
    in_rack = inputs_from_design(_gb200(spare_nodes_per_nvlink_domain=2), days=137.9)
    assert expected_goodput(in_rack).ettr > expected_goodput(whole_rack).ettr


def test_in_rack_spares_lift_the_pod_from_waiting_on_repairs():
    none = expected_goodput(inputs_from_design(_gb200(), days=137.9))
    in_rack = expected_goodput(
        inputs_from_design(_gb200(spare_nodes_per_nvlink_domain=2), days=137.9)
    )
    assert none.ettr < 0.5
    assert in_rack.ettr > 0.95
    assert in_rack.spares.num_pools == 9


def _inputs(pools: int, spares: int, scale: float = 4.0) -> GoodputInputs:
    rates = job_rates(num_gpus=8192, num_nodes=1024, num_nics=8192, scale=scale)
    return GoodputInputs(
        rates=rates,
        work_s=30 * 24 * H,
        delta_s=60.0,
        relaunch_s=600.0,
        num_spares=spares,
        num_spare_pools=pools,
        repair_s=5 * 24 * H,
    )


def test_small_pools_wait_more_than_one_pool_of_the_same_spares():
    one = expected_goodput(_inputs(1, 16))
    split = expected_goodput(_inputs(8, 2))
    assert split.spare_wait_s > one.spare_wait_s
    assert split.spares.mean_in_repair == pytest.approx(one.spares.mean_in_repair / 8)


def test_monte_carlo_agrees_with_the_expected_model_for_pools():
    """Where waits are rare the two agree; the expected model adds each pool's waits as if
    none overlapped another's, so it is the upper of the two."""
    inputs = _inputs(8, 2, scale=0.25)
    expected = expected_goodput(inputs)
    assert expected.spare_wait_s > 0.05 * inputs.work_s  # the pools do run dry
    params = LifeParams(
        work_s=inputs.work_s,
        tau_s=expected.checkpoint_interval_s,
        delta_s=inputs.delta_s,
        restart_s=inputs.restart_s,
        mtbf_s=inputs.mtbf_s,
        p_spare=inputs.p_spare,
        num_spares=2,
        repair_s=inputs.repair_s,
        num_spare_pools=8,
    )
    lives = simulate_lives(params, runs=300, seed=3)
    stderr = lives.spare_wait_s.std() / math.sqrt(lives.spare_wait_s.size)
    assert lives.spare_wait_s.mean() == pytest.approx(expected.spare_wait_s, rel=0.2)
    assert lives.spare_wait_s.mean() < expected.spare_wait_s + 4 * stderr
    one_pool = simulate_lives(replace(params, num_spares=16, num_spare_pools=1), runs=300, seed=3)
    assert one_pool.spare_wait_s.mean() < lives.spare_wait_s.mean()


def test_every_way_to_hold_spares_is_priced_beside_the_design():
    from clusterforge.goodput.spares import spare_options

    design = _gb200()
    options = {o.mode: o for o in spare_options(design, days=137.9)}
    assert set(options) == {"none", "spare-ports", "spare-pool", "counted", "in-domain"}
    own = options["none"]
    assert own.as_designed and own.capex_delta_usd == 0.0
    assert own.ettr == pytest.approx(0.448, abs=0.005)
    ports, in_rack = options["spare-ports"], options["in-domain"]
    assert ports.num_spare_nodes == in_rack.num_spare_nodes == 18
    assert ports.capex_delta_usd == pytest.approx(3.39e6, rel=0.02)  # one more rack
    assert 0 < ports.capex_delta_usd < options["spare-pool"].capex_delta_usd
    assert options["spare-pool"].capex_delta_usd < options["counted"].capex_delta_usd
    assert in_rack.ettr > 0.95 > ports.ettr > own.ettr
    assert in_rack.expected_days < ports.expected_days


def test_options_of_a_node_without_rack_scale_domains_leave_in_rack_spares_out():
    from clusterforge.goodput.spares import spare_options

    spec = load_spec(EXAMPLES / "colo-512-h100.yaml")
    options = spare_options(plan(spec), days=30.0)
    assert options[0].as_designed and options[0].mode == spec.network.spares
    assert "in-domain" not in {o.mode for o in options}
    assert len({(o.mode, o.num_spare_nodes) for o in options}) == len(options)
