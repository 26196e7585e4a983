"""A GPU power limit in ``plan``: the spec's ``gpu_power_limit_w`` lowers each node's draw,
a rack-power cap starts from it, and every consumer (predict, the node expectations, the
summary) reads the one limit the GPUs run at."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.design import plan
from clusterforge.ops.expect import expectation_from_design
from clusterforge.perf.predict import PredictRequest, design_gpu, run_predict
from clusterforge.report.format import power_limit_text
from clusterforge.spec import load_spec
from tests.conftest import make_spec


def test_a_spec_limit_lowers_each_node_draw_and_the_it_power():
    full, limited = plan(make_spec()), plan(make_spec(gpu_power_limit_w=500))
    assert full.layout_density.node_max_kw == pytest.approx(10.2)  # DGX H100 max
    assert limited.layout_density.node_max_kw == pytest.approx(10.2 - 8 * 0.2)
    nodes = full.compute.num_nodes  # spares included: 8 + 1
    assert limited.power.it_max_kw == pytest.approx(full.power.it_max_kw - nodes * 1.6)
    assert limited.gpu_power_limit_w == 500 and full.gpu_power_limit_w is None


def test_the_limit_reaches_predict_the_node_expectations_and_the_summary():
    d = plan(make_spec(gpu_power_limit_w=500))
    assert design_gpu(d).power_limit_w == 500
    assert expectation_from_design(d).gpu_power_limit_w == 500
    assert power_limit_text(d) == (
        "500 W of 700 W TDP per GPU (the spec's gpu_power_limit_w), 78.9% of its matmul rate"
    )
    assert power_limit_text(plan(make_spec())) == "none"


def test_a_rack_cap_starts_from_the_spec_limit():
    """9 kW racks: one DGX H100 at 600 W a GPU draws 10.2 - 0.8 = 9.4 kW, so the cap takes the
    last 0.4 kW off the 600 W (50 W a GPU), not off the 700 W TDP."""
    d = plan(
        make_spec(gpu_power_limit_w=600, facility={"max_rack_kw": 9, "allow_power_capping": True})
    )
    cap = d.layout_density.power_cap
    assert cap is not None and cap.gpu_power_limit_w == pytest.approx(550)
    assert d.gpu_power_limit_w == pytest.approx(550)
    assert design_gpu(d).power_limit_w == pytest.approx(550)
    assert "to fit 9 kW per rack" in power_limit_text(d)


def test_predict_names_the_cap_the_planner_set():
    spec = load_spec(Path(__file__).parents[2] / "examples" / "colo-512-h100.yaml")
    facility = spec.facility.model_copy(update={"max_rack_kw": 9, "allow_power_capping": True})
    d = plan(spec.model_copy(update={"gpu_power_limit_w": 600, "facility": facility}))
    outcome = run_predict(d, PredictRequest(top=1))
    assert outcome.gpu_power_limit_w == pytest.approx(550)
