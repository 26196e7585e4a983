"""Plans Megatron-Core refuses under its EP all-to-all overlap are refused, and never searched."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.ep_overlap_rules import ep_overlap_error
from clusterforge.perf.parallel import validate_plan
from clusterforge.perf.search import candidate_plans, least_recompute, overlap_refused, search
from clusterforge.perf.stack import stack_named

BRIDGE = stack_named("megatron-bridge")
OVERLAP = replace(BRIDGE, moe_a2a_overlap=True)


def _valid(arch: ModelArch, plan: ParallelPlan) -> bool:
    try:
        validate_plan(arch, plan, plan.layout.num_gpus)
    except PlanError:
        return False
    return True


def _plan(pp: int = 2, vpp: int = 12, ep: int = 8, **changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=pp, dp=16 // pp, ep=ep, vpp=vpp),
        global_batch=64,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )
    return plan.with_(**changes)


def test_the_plan_the_recipes_ran_is_priced(models, h100, h100_comm) -> None:
    # Megatron-Bridge's Qwen3-30B-A3B H100 recipe: PP 2, VP 12, EP 8, no recomputation.
    arch = models["qwen3-30b-a3b"]
    for plan in (_plan(), _plan(recompute="selective"), _plan(pp=1, vpp=1)):
        assert ep_overlap_error(plan, OVERLAP) is None
        assert predict_step(arch, plan, h100, h100_comm, 8, OVERLAP).step_time_s > 0


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"ep": 1}, "expert_parallel = 1"),
        ({"recompute": "full"}, "recompute = 'full'"),
        ({"recompute": "full", "recompute_layers": 2}, "recompute = 'full'"),
        ({"vpp": 1}, "virtual_pipeline_stages = 1"),
    ],
)
def test_what_megatron_core_asserts_against_is_refused_with_the_field_and_the_fix(
    models, h100, h100_comm, changes: dict[str, object], named: str
) -> None:
    # transformer_config.py __post_init__ (NVIDIA/Megatron-LM@0d8e0714cd29 and @b0cc2706ddc6).
    layout = {k: changes.pop(k) for k in ("ep", "vpp") if k in changes}
    plan = _plan(**layout, **changes)  # type: ignore[arg-type]
    arch = models["qwen3-30b-a3b"]
    predict_step(arch, plan, h100, h100_comm, 8, BRIDGE)  # priced without the overlap
    with pytest.raises(PlanError, match=named) as refused:
        predict_step(arch, plan, h100, h100_comm, 8, OVERLAP)
    assert "moe_a2a_overlap" in str(refused.value)
    assert "set " in str(refused.value) or "use " in str(refused.value)


def test_the_overlap_on_a_dense_model_is_refused_before_a_search(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    base = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=64, seq_length=4096)
    with pytest.raises(PlanError, match="dense model"):
        search(arch, base, h100, h100_comm, 8, stack=OVERLAP)
    with pytest.raises(PlanError, match="dense model"):
        predict_step(arch, base, h100, h100_comm, 8, OVERLAP)


def test_least_recompute_never_offers_full_recomputation_under_the_overlap(models, h100) -> None:
    arch = models["qwen3-30b-a3b"]
    plan = _plan(pp=1, vpp=1, micro_batch=2)  # 85 GiB without recomputation, 48 with it
    fitting = least_recompute(arch, plan, h100, BRIDGE)
    assert fitting is not None and fitting.recompute == "full"
    assert least_recompute(arch, plan, h100, OVERLAP) is None
    with pytest.raises(PlanError, match="expert_parallel = 1"):
        least_recompute(arch, _plan(ep=1), h100, OVERLAP)


def test_the_search_proposes_no_plan_megatron_core_refuses(models, h100, h100_comm) -> None:
    arch = models["qwen3-30b-a3b"]
    base = _plan(pp=1, vpp=1, ep=1).with_(global_batch=128)
    result = search(arch, base, h100, h100_comm, 8, stack=OVERLAP, top=1000)
    found = result.predictions
    assert found
    for prediction in found:
        assert ep_overlap_error(prediction.plan, OVERLAP) is None
        assert prediction.plan.layout.ep > 1 and prediction.plan.recompute != "full"
    plain = search(arch, base, h100, h100_comm, 8, stack=BRIDGE, top=1000)
    assert any(ep_overlap_error(p.plan, OVERLAP) is not None for p in plain.predictions)
    # the refused plans are counted, not priced; without the overlap none is refused
    candidates = list(candidate_plans(arch, base, base.layout.num_gpus, 8))
    refused = [
        p
        for p in candidates
        if _valid(arch, p) and ep_overlap_error(p.with_(recompute="none"), OVERLAP)
    ]
    assert result.num_refused == len(refused) > 0 and plain.num_refused == 0
    assert result.num_candidates == plain.num_candidates == len(candidates)
    assert result.num_fitting <= len(candidates) - len(refused)


def test_only_valid_plans_count_as_refused(models) -> None:
    # a plan that is invalid anyway (TP 3 divides neither the heads nor the GPUs) is no
    # refusal of the overlap's, even with EP 1; the same EP-1 layout made valid is one
    arch = models["qwen3-30b-a3b"]
    valid = _plan(pp=1, vpp=1, ep=1)
    invalid = valid.with_(layout=JobLayout(tp=3, pp=1, dp=16, ep=1))
    assert not _valid(arch, invalid) and _valid(arch, valid)
    assert overlap_refused(arch, valid, OVERLAP) and not overlap_refused(arch, invalid, OVERLAP)
    assert not overlap_refused(arch, valid, BRIDGE)
    # full recomputation is the search's choice to make (least_recompute), not a refusal
    assert not overlap_refused(arch, _plan(recompute="full"), OVERLAP)
