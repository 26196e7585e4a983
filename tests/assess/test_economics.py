"""The break-even size: found in a bounded number of plans, asked only by the assessment,
and valid for any workload the spec plans (interleaved pipelines included)."""

from __future__ import annotations

import importlib

import pytest

from clusterforge.assess import AssessOptions, assess, break_even_gpus
from clusterforge.assess.economics import BREAK_EVEN_PLANS, at_size
from clusterforge.design import plan
from clusterforge.spec import default_spec, load_spec
from tests.conftest import EXAMPLES, make_spec

# The module object (the package exports a function of the same name).
economics_mod = importlib.import_module("clusterforge.assess.economics")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = economics_mod.plan

    def counting_plan(spec, catalog=None):
        calls.append(spec.num_gpus)
        return real(spec, catalog)

    monkeypatch.setattr(economics_mod, "plan", counting_plan)
    return calls


def test_break_even_is_a_size_where_building_wins_and_is_bounded(monkeypatch):
    spec = make_spec(
        num_gpus=8, spare_fraction=0, workload={"tensor_parallel": 8, "global_batch": 8}
    )
    calls = _counting(monkeypatch)
    n = break_even_gpus(spec)
    monkeypatch.undo()
    assert len(calls) <= 2 + BREAK_EVEN_PLANS
    assert n is not None and n % 8 == 0
    wins = plan(at_size(spec, n)).cost
    assert wins.build_total_usd < wins.rent_total_usd
    half = plan(at_size(spec, max(8, n // 2))).cost
    assert half.build_total_usd > half.rent_total_usd


def test_no_break_even_when_renting_is_cheaper_per_gpu():
    spec = make_spec(
        num_gpus=64, economics={"cloud_usd_per_gpu_hour": 0.5, "on_demand_usd_per_gpu_hour": 0.6}
    )
    assert break_even_gpus(spec) is None


def test_rent_wins_small_build_wins_past_a_hundred():
    """The trade's rule of thumb (cloud cheaper at 20-30 H100s, build at 100+).

    Inputs that give it: default DGX H100 prices, on-demand rent at $2.99/GPU-h (Lambda H100
    SXM, 2025 list price), 90 % utilization, two SREs at $250k/yr, 4 years, 15 kW colo at
    $184/kW-month.
    """
    spec = default_spec()
    spec = spec.model_copy(
        update={
            "economics": spec.economics.model_copy(
                update={"cloud_usd_per_gpu_hour": 2.99, "num_staff": 2, "utilization": 0.9}
            )
        }
    )
    breakeven = break_even_gpus(spec)
    assert breakeven is not None and 64 < breakeven <= 160
    small = spec.model_copy(
        update={
            "num_gpus": 32,
            "workload": spec.workload.model_copy(
                update={"pipeline_parallel": 1, "global_batch": 32}
            ),
        }
    )
    assert not plan(small).cost.build_wins
    assert plan(spec).cost.build_wins  # 512 GPUs


def _interleaved_renting_spec():
    """The 512 x H100 colo example with an interleaved pipeline, used 20 % of the time (so
    renting wins and the break-even search re-plans it at other sizes)."""
    spec = load_spec(EXAMPLES / "colo-512-h100.yaml")
    workload = spec.workload.model_copy(
        update={"pipeline_parallel": 4, "virtual_pipeline_stages": 2}
    )
    economics = spec.economics.model_copy(update={"utilization": 0.2})
    return spec.model_copy(update={"workload": workload, "economics": economics})


def test_break_even_plans_a_spec_with_an_interleaved_pipeline():
    """Re-planning at another size resets the whole job layout, the interleaved schedule
    included (it needs pp > 1, and the re-plan runs pure data parallelism)."""
    design = plan(_interleaved_renting_spec())
    assert not design.cost.build_wins
    result = assess(design, AssessOptions(performance=False, goodput_runs=0)).economics
    assert result.break_even_searched
    assert result.break_even_gpus is None or result.break_even_gpus > design.spec.num_gpus


def test_plan_never_re_plans(monkeypatch):
    """plan() is one pass: no break-even search, even when renting wins."""
    calls = _counting(monkeypatch)
    design = plan(_interleaved_renting_spec())
    assert calls == [] and not design.cost.build_wins


def test_only_an_assessment_that_asks_searches_the_break_even(monkeypatch):
    design = plan(_interleaved_renting_spec())
    calls = _counting(monkeypatch)
    quiet = assess(design, AssessOptions(performance=False, goodput_runs=0, break_even=False))
    assert calls == [] and quiet.economics.break_even_gpus is None
    assess(design, AssessOptions(performance=False, goodput_runs=0))
    assert 0 < len(calls) <= 2 + BREAK_EVEN_PLANS
