"""Two designs of one cluster: the same training on design A (4 bonded NICs into one switch) and
design B (non-blocking 2-tier leaf-spine, 8 x 400G) predicts clearly different MFU, and the
breakdown names the network. Runs the production path: design + flow-level simulator."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from clusterforge.design import plan as design_cluster
from clusterforge.job import JobLayout
from clusterforge.perf import predict_plan, predict_workload
from clusterforge.perf.predict import plan_from_workload, resolve_model
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def designs():
    return {
        name: design_cluster(load_spec(EXAMPLES / f"seed-design-{name}.yaml"))
        for name in ("a", "b")
    }


def _predict(design, **changes):
    workload = design.spec.workload
    arch = resolve_model(workload, design.catalog)
    plan = plan_from_workload(workload, design.job, arch)
    return predict_plan(design, plan.with_(**changes))


def test_70b_class_pipeline_plan_is_network_bound_on_design_a(designs) -> None:
    # TP 8 inside the node, PP 2 so that 70B fits in 80 GB, DP 32 over the fabric.
    a = _predict(designs["a"], layout=replace(designs["a"].job, pp=2, dp=32))
    b = _predict(designs["b"], layout=replace(designs["b"].job, pp=2, dp=32))
    assert a.fits and b.fits
    assert a.mfu < 0.9 * b.mfu
    assert a.breakdown.largest_overhead() == "dp_comm_s"
    assert a.breakdown.dp_comm_s > 3 * b.breakdown.dp_comm_s


def test_7b_class_data_parallel_training_halves_on_design_a(designs) -> None:
    from clusterforge.catalog import load_catalog

    arch = load_catalog().models["llama2-7b"]
    preds = {}
    for name, design in designs.items():
        workload = design.spec.workload
        plan = plan_from_workload(workload, design.job, arch)
        plan = plan.with_(layout=JobLayout(dp=512), sequence_parallel=False, seq_length=4096)
        preds[name] = predict_plan(design, plan, arch=arch)
    assert preds["a"].mfu < 0.7 * preds["b"].mfu
    assert preds["a"].breakdown.largest_overhead() == "dp_comm_s"


def test_predict_workload_reports_time_to_train(designs) -> None:
    pred = predict_workload(designs["b"])
    days = pred.time_to_train_s(designs["b"].spec.workload.tokens_b * 1e9) / 86400
    assert 10 < days < 200
