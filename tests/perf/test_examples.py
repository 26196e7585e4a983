"""Every shipped example predicts its own workload, and the search finds plans at least as good."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.design import plan
from clusterforge.perf import plan_from_workload, predict_workload, resolve_model, search
from clusterforge.perf.predict import design_comm
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# colossus-100k's search takes ~10 s here; its own workload is still predicted below
SEARCHED = ["colo-512-h100", "hall-4096-b200", "gb200-nvl72-pod", "seed-design-b"]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_workload_predicts_a_plausible_mfu(path: Path) -> None:
    prediction = predict_workload(plan(load_spec(path)))
    assert prediction.fits, path.stem
    assert 0.05 < prediction.mfu < 0.75  # published large-scale runs: 35-55 % (validation/)
    assert prediction.hfu >= prediction.mfu


@pytest.mark.parametrize("name", SEARCHED)
def test_search_ranks_fitting_plans_no_worse_than_the_specs_own(name: str) -> None:
    design = plan(load_spec(EXAMPLES / f"{name}.yaml"))
    arch = resolve_model(design.spec.workload, design.catalog)
    base = plan_from_workload(design.spec.workload, design.job, arch)
    found = search(
        arch,
        base,
        design.compute.gpu,
        design_comm(design),
        design.compute.nvlink_domain_gpus,
        top=5,
    ).predictions
    assert found and all(p.fits for p in found)
    speeds = [p.tokens_per_s for p in found]
    assert speeds == sorted(speeds, reverse=True)
    assert speeds[0] >= 0.99 * predict_workload(design).tokens_per_s
    assert all(p.plan.layout.tp <= design.compute.nvlink_domain_gpus for p in found[:1])
