"""The plan search returns what timing every fitting plan would, and says how much it timed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import PredictRequest, run_predict
from clusterforge.perf.comm import CommModel, InterpolatingComm
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.search import candidate_plans, least_recompute, search
from clusterforge.perf.search_cache import KnownComm, RecordingComm, one_domain
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step

EXAMPLES = Path(__file__).parents[2] / "examples"


def _exhaustive(
    arch: ModelArch, base: ParallelPlan, gpu: Gpu, comm: CommModel, domain: int, stack: Stack
) -> tuple[list[Prediction], int, int]:
    """The unoptimised answer: time every fitting plan, sort by (time, memory, order)."""
    candidates = list(candidate_plans(arch, base, base.layout.num_gpus, domain))
    fitting = []
    for plan in candidates:
        try:
            option = least_recompute(arch, plan, gpu, stack)
        except PlanError:  # an invalid plan is skipped, as the search does
            continue
        if option is not None:
            fitting.append(option)
    timed = [predict_step(arch, p, gpu, comm, domain, stack) for p in fitting]
    order = sorted(
        range(len(timed)), key=lambda i: (timed[i].step_time_s, timed[i].memory_per_gpu_gib, i)
    )
    return [timed[i] for i in order], len(candidates), len(fitting)


def _figures(p: Prediction) -> tuple[object, ...]:
    return (p.plan, p.step_time_s, p.tokens_per_s, p.mfu, p.hfu, p.memory_per_gpu_gib, p.breakdown)


CASES = [  # model, plan to start from, top
    (
        "llama3-70b",
        {"layout": JobLayout(tp=8, pp=1, dp=64), "global_batch": 512, "seq_length": 8192},
        5,
    ),
    (
        "gpt3-175b",
        {"layout": JobLayout(tp=8, pp=1, dp=128), "global_batch": 1536, "seq_length": 2048},
        8,
    ),
    (
        "llama3-8b",
        {"layout": JobLayout(tp=1, pp=1, dp=64), "global_batch": 256, "seq_length": 8192},
        3,
    ),
    (
        "mixtral-8x7b",
        {"layout": JobLayout(tp=1, pp=1, dp=128), "global_batch": 512, "seq_length": 4096},
        4,
    ),
]


@pytest.mark.parametrize(("model_id", "plan", "top"), CASES)
def test_search_returns_the_top_plans_of_timing_every_fitting_plan(
    models, h100, h100_comm, model_id: str, plan: dict, top: int
) -> None:
    arch, base, stack = models[model_id], ParallelPlan(**plan), Stack.megatron_core()
    comm = InterpolatingComm(h100_comm.collective_time_s)
    every, num_candidates, num_fitting = _exhaustive(arch, base, h100, comm, 8, stack)
    result = search(arch, base, h100, comm, 8, top=top, stack=stack)
    assert [_figures(p) for p in result.predictions] == [_figures(p) for p in every[:top]]
    assert (result.num_candidates, result.num_fitting) == (num_candidates, num_fitting)
    assert top <= result.num_timed <= num_fitting


def test_search_times_fewer_plans_than_fit(models, h100, h100_comm) -> None:
    arch = models["gpt3-175b"]
    base = ParallelPlan(JobLayout(tp=8, pp=1, dp=128), global_batch=1536, seq_length=2048)
    result = search(arch, base, h100, InterpolatingComm(h100_comm.collective_time_s), 8, top=3)
    assert result.num_candidates > result.num_fitting > 2 * result.num_timed


def test_progress_counts_timed_plans(models, h100, h100_comm) -> None:
    seen: list[tuple[int, int]] = []
    base = ParallelPlan(JobLayout(tp=8, pp=1, dp=64), global_batch=512, seq_length=8192)
    comm = InterpolatingComm(h100_comm.collective_time_s)
    result = search(
        models["llama3-70b"], base, h100, comm, 8, top=2, progress=lambda *a: seen.append(a)
    )
    assert [done for done, _ in seen] == list(range(1, result.num_timed + 1))
    assert {total for _, total in seen} == {result.num_fitting}


def test_recorded_communication_is_asked_once_and_known_afterwards(h100_comm) -> None:
    recording = RecordingComm(h100_comm)
    groups = np.arange(16).reshape(2, 8)
    first = recording.collective_time_s("all_reduce", 1e8, groups)
    again = recording.collective_time_s("all_reduce", 1e8, groups.copy())
    assert first == again > 0 and h100_comm.calls == 1 and len(recording) == 1
    known: KnownComm = recording.known
    assert known.collective_time_s("all_reduce", 1e8, groups) == first
    assert known.collective_time_s("all_reduce", 2e8, groups) == 0.0  # never asked: free
    assert known.collective_time_s("all_gather", 1e8, groups) == 0.0
    assert [(c, s) for c, s, _ in known.unanswered] == [("all_reduce", 2e8), ("all_gather", 1e8)]
    assert h100_comm.calls == 1  # the known view never asks the real model


def test_search_on_the_simulated_fabric_matches_timing_every_plan() -> None:
    from clusterforge.design import plan as design_plan
    from clusterforge.perf import plan_from_workload, resolve_model
    from clusterforge.perf.predict import design_comm
    from clusterforge.spec import load_spec

    design = design_plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    assert design.job is not None and design.spec.workload is not None
    arch = resolve_model(design.spec.workload, design.catalog)
    base = plan_from_workload(design.spec.workload, design.job, arch)
    gpu, domain, stack = (
        design.compute.gpu,
        design.compute.nvlink_domain_gpus,
        Stack.megatron_core(),
    )
    comm = design_comm(design)
    every, _, num_fitting = _exhaustive(arch, base, gpu, comm, domain, stack)
    result = search(arch, base, gpu, comm, domain, top=4, stack=stack)
    assert [_figures(p) for p in result.predictions] == [_figures(p) for p in every[:4]]
    assert result.num_timed < num_fitting


def test_size_sweep_reports_the_best_plan_of_each_size_and_the_plans_it_evaluated() -> None:
    from clusterforge.design import plan as design_plan
    from clusterforge.spec import load_spec

    design = design_plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    sizes = (256, 512)
    sweep = run_predict(design, PredictRequest(search=True, top=3, gpu_counts=sizes))
    singles = [
        run_predict(design, PredictRequest(search=True, top=1, gpu_counts=(n,))) for n in sizes
    ]
    assert [_figures(p) for p in sweep.predictions] == [_figures(s.predictions[0]) for s in singles]
    assert sweep.num_candidates == sum(s.num_candidates for s in singles)
    assert sweep.num_fitting == sum(s.num_fitting for s in singles)
    assert sweep.num_timed == sum(s.num_timed for s in singles)


class _Scaled:
    """Every collective ``factor`` times as long as on ``comm``."""

    def __init__(self, comm: CommModel, factor: float) -> None:
        self.comm, self.factor = comm, factor

    def collective_time_s(self, collective, size_bytes: float, groups: np.ndarray) -> float:
        return self.factor * self.comm.collective_time_s(collective, size_bytes, groups)


@pytest.mark.parametrize(("model_id", "plan", "top"), CASES)
def test_slower_communication_never_makes_a_step_shorter(
    models, h100, h100_comm, model_id: str, plan: dict, top: int
) -> None:
    """What the search's bounds rest on: every fitting plan, communication x0 .. x4."""
    arch, base, stack = models[model_id], ParallelPlan(**plan), Stack.megatron_core()
    comm = InterpolatingComm(h100_comm.collective_time_s)
    for option in candidate_plans(arch, base, base.layout.num_gpus, 8):
        try:
            fitting = least_recompute(arch, option, h100, stack)
        except PlanError:
            continue
        if fitting is None:
            continue
        steps = [
            predict_step(arch, fitting, h100, _Scaled(comm, f), 8, stack).step_time_s
            for f in (0.0, 0.5, 1.0, 4.0)
        ]
        assert steps == sorted(steps), fitting


def test_groups_inside_identical_domains_are_asked_as_one_domain() -> None:
    ranks = np.arange(64)
    tp8 = ranks.reshape(8, 8)
    assert np.array_equal(one_domain(tp8, 8), tp8[:1])
    tp4 = ranks.reshape(16, 4)
    assert np.array_equal(one_domain(tp4[::-1], 8), tp4[:2])  # any order of the rows
    stage0_of_two = ranks[:32].reshape(4, 8)  # the TP groups of one pipeline stage
    assert np.array_equal(one_domain(stage0_of_two, 8), tp8[:1])


@pytest.mark.parametrize(
    "groups",
    [
        np.arange(64).reshape(8, 8).T,  # DP groups: each spans eight domains
        np.array([[0, 1], [8, 9], [10, 11]]),  # domain 1 holds two groups, domain 0 one
        np.array([[0, 1], [10, 11]]),  # laid out differently in the two domains
        np.array([[0, 1, 2, 3]]),  # a single group: nothing to share
    ],
)
def test_groups_that_meet_in_the_fabric_or_differ_are_asked_as_they_are(groups) -> None:
    assert one_domain(groups, 8) is groups


def test_recorded_answers_are_shared_by_identical_domains(h100_comm) -> None:
    recording = RecordingComm(h100_comm, domain_gpus=8)
    every_node = recording.collective_time_s("all_gather", 1e8, np.arange(64).reshape(8, 8))
    one_stage = recording.known.collective_time_s("all_gather", 1e8, np.arange(32).reshape(4, 8))
    assert one_stage == every_node > 0 and h100_comm.calls == 1


def test_size_sweep_searches_sizes_where_the_specs_own_layout_does_not_divide_the_batch() -> None:
    from clusterforge.design import plan as design_plan
    from clusterforge.spec import load_spec

    # TP 8 x PP 4 on 768 GPUs would be DP 24, which does not divide the batch of 1,024;
    # the search is free to choose other degrees there (TP 8 x PP 6 x DP 16, ...).
    design = design_plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    sweep = run_predict(design, PredictRequest(search=True, gpu_counts=(512, 768)))
    assert [p.plan.layout.num_gpus for p in sweep.predictions] == [512, 768]
    assert all(1024 % (p.plan.layout.dp * p.plan.micro_batch) == 0 for p in sweep.predictions)
