"""The optimize search: every constraint holds on the front, no front point is dominated,
the bounds never exceed what is found, a front point's written-out spec gives the same
numbers through plan + predict + goodput, and every engine gives the same answer."""

from __future__ import annotations

import functools

import pytest
import yaml
from rich.console import Console

from clusterforge.assess import goodput_study
from clusterforge.assess.optimize import (
    PoolEngine,
    dominates,
    is_front,
    job_usd_per_gpu_hour,
    load_optimize_spec,
    objective_value,
    optimize,
    pareto_front,
    parse_optimize_spec,
)
from clusterforge.assess.optimize.bounds import peak_bound_s, price_floor_usd_per_gpu_hour
from clusterforge.assess.optimize.evaluate import evaluate_family
from clusterforge.assess.optimize.front import reasoning
from clusterforge.assess.optimize.search import _bound_at
from clusterforge.assess.optimize.space import families, variants
from clusterforge.catalog import load_catalog
from clusterforge.design import plan
from clusterforge.errors import SpecError
from clusterforge.perf import predict_workload
from clusterforge.report.optimize import print_front
from clusterforge.spec import parse_spec
from tests.conftest import REPO
from tests.optimize_specs import SMALL_OPTIMIZE

SMALL = SMALL_OPTIMIZE


def _spec(**changes: object):
    data = {**SMALL, **changes}
    return parse_optimize_spec(data)


@functools.cache
def _free():
    return optimize(_spec())


def test_unconstrained_search_has_a_front_of_several_designs():
    result = _free()
    assert len(result.feasible) == 4
    assert len(result.front) >= 2  # 8 GPUs is cheaper per token, 32 faster


def test_front_holds_no_dominated_design_and_dominates_the_rest():
    result = _free()
    assert is_front(result.front)
    for point in result.feasible:
        if point not in result.front:
            assert any(dominates(f, point) or (f.days, f.cost_usd) == (point.days, point.cost_usd)
                       for f in result.front)  # fmt: skip


def test_budget_keeps_dear_designs_off_the_front():
    costs = sorted(p.cost_usd for p in _free().feasible)
    budget = (costs[0] + costs[-1]) / 2
    result = optimize(_spec(constraints={"budget_usd": budget}))
    assert result.front and all(p.cost_usd <= budget for p in result.feasible)
    assert len(result.feasible) < len(_free().feasible)


def test_deadline_keeps_slow_designs_off_the_front():
    days = sorted(p.days for p in _free().feasible)
    deadline = (days[0] + days[-1]) / 2
    result = optimize(_spec(constraints={"deadline_days": deadline}))
    assert result.front and all(p.days <= deadline for p in result.feasible)
    assert {p.family.num_gpus for p in result.feasible} == {32}  # 8 GPUs take too long


def test_facility_mw_keeps_large_designs_off_the_front():
    mw = sorted(p.facility_mw for p in _free().feasible)
    limit = (mw[0] + mw[-1]) / 2
    result = optimize(_spec(constraints={"facility_mw": limit}))
    assert result.front and all(p.facility_mw <= limit for p in result.feasible)
    assert {p.family.num_gpus for p in result.feasible} == {8}


def test_rack_kw_limit_holds_on_every_rack():
    result = optimize(_spec(constraints={"max_rack_kw": 12}))
    assert result.front and all(p.max_rack_kw <= 12 for p in result.feasible)
    refused = optimize(_spec(constraints={"max_rack_kw": 5}))  # a DGX H100 draws 10.2 kW
    assert refused.front == () and any("max_rack_kw" in r for r in refused.rejected)


def test_floor_rating_keeps_heavy_racks_off_the_front():
    loads = sorted(p.floor_kn_per_m2 for p in _free().feasible)
    result = optimize(_spec(constraints={"floor_rating_kn_per_m2": loads[0] * 0.99}))
    assert result.front == ()
    ok = optimize(_spec(constraints={"floor_rating_kn_per_m2": loads[-1]}))
    assert ok.front and all(p.floor_kn_per_m2 <= loads[-1] for p in ok.feasible)


def test_cooling_limit_keeps_liquid_nodes_out():
    space = {**SMALL["search"], "nodes": ["dgx-h100", "hgx-h100-4u-liquid"]}
    result = optimize(_spec(search=space, constraints={"cooling_available": ["air"]}))
    assert result.front
    assert all(set(p.cooling) <= {"air"} for p in result.feasible)
    assert {p.family.node for p in result.feasible} == {"dgx-h100"}


def test_bounds_never_exceed_what_is_found():
    catalog = load_catalog()
    spec = _spec()
    for p in _free().feasible:
        free_days = _bound_at(spec, p.family.node, p.family.num_gpus)
        assert free_days is not None and free_days <= p.failure_free_days
        peak = peak_bound_s(spec.job, p.family.node, p.family.num_gpus, catalog)
        assert peak <= p.step_time_s
        floor = price_floor_usd_per_gpu_hour(
            p.procurement, p.family.node, p.family.num_gpus, catalog, spec
        )
        assert floor <= p.usd_per_gpu_hour


def test_front_point_spec_gives_the_same_numbers_through_plan_predict_goodput():
    point = _free().front[0]
    text = yaml.safe_dump(point.spec_data())
    design = plan(parse_spec(yaml.safe_load(text)))
    prediction = predict_workload(design)
    assert prediction.step_time_s == point.step_time_s
    assert prediction.mfu == point.mfu
    days = prediction.time_to_train_s(point.tokens) / 86400
    assert days == point.failure_free_days
    report = goodput_study(design, runs=1, days=days, step_s=prediction.step_time_s)
    assert report.expected.wall_s / 86400 == point.days
    assert report.expected.ettr == point.ettr
    assert job_usd_per_gpu_hour(design, point.procurement) == point.usd_per_gpu_hour
    assert design.power.facility_kw / 1000 == point.facility_mw
    assert [f for f in design.findings if f.severity == "error"] == []


def _summary(result):
    return [(p.label(), p.days, p.cost_usd, p.mfu) for p in result.front], result.counts


def test_a_process_pool_gives_the_single_process_answer():
    engine = PoolEngine(2)
    try:
        assert _summary(optimize(_spec(), engine)) == _summary(_free())
    finally:
        engine.close()


def test_a_dask_cluster_gives_the_single_process_answer():
    distributed = pytest.importorskip("dask.distributed")
    from clusterforge.assess.optimize import DaskEngine

    cluster = distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        assert _summary(optimize(_spec(), DaskEngine(client=client))) == _summary(_free())


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"search": {"nodes": ["dgx-h10"]}}, "did you mean 'dgx-h100'"),
        ({"objective": "speed"}, "objective"),
        ({"constraints": {"budget_usd": -1}}, "constraints.budget_usd"),
        ({"search": {"num_gpus": {"min": 64, "max": 8}}}, "swap them"),
    ],
)
def test_bad_optimize_spec_names_the_field(change, words):
    with pytest.raises(SpecError, match=words):
        _spec(**change)


def test_winner_reasoning_names_what_the_runner_up_lacks():
    result = _free()
    why = result.reasoning
    assert why is not None and why.runner_up is not None
    assert why.winner.days <= why.runner_up.days  # objective: time
    assert "less throughput" in why.runner_up_lacks
    assert why.limited_by.startswith(("GPU memory", "budget", "deadline", "facility", "no limit"))


@pytest.mark.parametrize("objective", ["time", "cost", "cost-per-token"])
def test_the_winner_is_best_under_the_objective(objective):
    points = _free().feasible
    why = reasoning(points, objective, _spec().constraints)
    assert why is not None
    best = min(objective_value(p, objective) for p in points)
    assert objective_value(why.winner, objective) == best


def test_full_and_reduced_nic_speeds_are_searched_together():
    space = {**SMALL["search"], "num_gpus": [8], "nic_gbit_per_s": [None, 100]}
    result = optimize(_spec(search=space))
    assert {p.family.nic_gbit_per_s for p in result.feasible} == {None, 100}


def test_pruning_finds_the_front_every_design_evaluated_would_give():
    space = {**SMALL["search"], "nodes": ["dgx-h100", "dgx-a100"], "num_gpus": [8, 16, 32]}
    spec = _spec(search=space)
    result = optimize(spec, wave_size=1)
    catalog = load_catalog()
    tried = (tuple(variants(spec)), tuple(spec.search.procurement))
    every = [p for f in families(spec, catalog) for p in evaluate_family(spec, f, *tried).points]
    assert result.counts.pruned_dominated + result.counts.pruned_memory > 0
    assert [p.label() for p in result.front] == [p.label() for p in pareto_front(every)]


def test_a_space_no_node_can_build_is_refused_with_the_fields_to_widen():
    with pytest.raises(SpecError, match=r"search\.num_gpus"):
        optimize(_spec(search={**SMALL["search"], "num_gpus": [4]}))


OPTIMIZE_EXAMPLES = sorted((REPO / "examples" / "optimize").glob("*.yaml"))


@pytest.mark.parametrize("path", OPTIMIZE_EXAMPLES, ids=lambda p: p.stem)
def test_optimize_examples_load(path):
    assert load_optimize_spec(path).name


def test_build_or_rent_example_claim_holds_at_its_ends():
    """The README's reproduced claim: rent wins at 32 H100, building at 512."""
    spec = load_optimize_spec(REPO / "examples" / "optimize" / "build-or-rent.yaml")
    spec = spec.model_copy(
        update={"search": spec.search.model_copy(update={"num_gpus": [32, 512]})}
    )
    price = {
        (p.family.num_gpus, p.procurement): p.usd_per_gpu_hour for p in optimize(spec).feasible
    }
    assert price[(32, "reserved")] < price[(32, "build")]
    assert price[(512, "build")] < price[(512, "reserved")]


def test_nics_per_node_is_a_dimension_and_reaches_the_written_spec():
    space = {**SMALL["search"], "num_gpus": [8], "nics_per_node": [None, 4]}
    result = optimize(_spec(search=space))
    counts = {p.family.nics_per_node for p in result.feasible}
    assert counts == {None, 4}
    four = next(p for p in result.feasible if p.family.nics_per_node == 4)
    assert four.spec.network.nics_per_node == 4


def test_families_whose_gpu_cannot_run_the_precision_are_refused_with_the_reason():
    """FP8 on A100 (no FP8 tensor cores) is refused as such, not counted as not fitting
    memory; the FP8-capable family is still searched."""
    search = {**SMALL["search"], "nodes": ["dgx-a100", "dgx-h100"], "num_gpus": [8]}
    job = {**SMALL["job"], "precision": "fp8"}
    result = optimize(_spec(job=job, search=search))
    assert result.counts.families == 2  # procurements are priced within a family
    assert result.counts.pruned_precision == 1
    assert result.counts.pruned_memory == 0
    assert any("a100" in r and "no FP8 tensor cores" in r for r in result.rejected)
    assert result.front and all("h100" in p.label() for p in result.front)
    only_a100 = optimize(_spec(job=job, search={**search, "nodes": ["dgx-a100"]}))
    assert not only_a100.front and only_a100.counts.pruned_precision == 1
    console = Console(record=True, width=200)
    print_front(only_a100, console)
    text = console.export_text()
    assert "refused: " in text and "no FP8 tensor cores" in text
    assert "1 cannot run the precision" in text


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_families_before_blackwell_are_refused_block_scaled_precisions(precision: str) -> None:
    """MXFP8 / NVFP4 on H100 (compute capability 9.0) are refused with Transformer Engine's
    reason; the B200 family is still searched, its bound at the FP4 peak for NVFP4."""
    search = {**SMALL["search"], "nodes": ["dgx-h100", "dgx-b200"], "num_gpus": [8]}
    job = {**SMALL["job"], "precision": precision}
    result = optimize(_spec(job=job, search=search))
    assert result.counts.pruned_precision == 1
    assert any("h100" in r and "compute capability 10.x" in r for r in result.rejected)
    assert result.front and all("b200" in p.label() for p in result.front)


def test_the_nvfp4_peak_bound_uses_the_fp4_peak() -> None:
    catalog = load_catalog()
    spec = _spec(job={**SMALL["job"], "precision": "nvfp4"})
    fp8 = _spec(job={**SMALL["job"], "precision": "fp8"})
    ratio = peak_bound_s(fp8.job, "dgx-b200", 8, catalog) / peak_bound_s(
        spec.job, "dgx-b200", 8, catalog
    )
    assert ratio == pytest.approx(9000 / 4500)
