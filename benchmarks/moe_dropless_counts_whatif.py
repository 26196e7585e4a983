"""Dropless expert rows under random balanced routing: each run with and without them.

The model times the expert GEMMs of a dropless run whose stack routes at random
(``Stack.moe_random_routing``: Megatron-Core's forced load balancing, the Megatron-Bridge MoE
benchmarks) at the busiest EP rank's rows, each round of concurrent forward and data-gradient
GEMMs over the sum of its experts' ragged row tiles (:mod:`clusterforge.perf.expert_rows`,
:func:`clusterforge.perf.moe.expert_gemms_s`). This prints, for every calibration and
development run it touches (never held-out), the signed error without that (the mean rows
per expert, as before) and with it, the rows per expert (mean, busiest rank) and one
expert's spread, then MAPE and median per set and per class both ways.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_dropless_counts_whatif.py
"""

from __future__ import annotations

from dataclasses import replace

from clusterforge.perf.expert_rows import busiest_rank_rows
from clusterforge.perf.parallel import tokens_per_gpu
from clusterforge.perf.uncertainty import run_class
from validation.class_errors import print_set_lines
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design


def outcome(run: Run) -> tuple[float, str] | None:
    """(signed error, class of the chosen plan), or None when no plan fits."""
    pred = best_prediction(run, run_comm(run_design(run)))
    if pred is None:
        return None
    error = float(getattr(pred, run.metric)) / run.published - 1.0
    return error, run_class(run.arch, pred.plan, run.stack)


def without(run: Run) -> Run:
    """The run with the mean rows per expert (random routing not described)."""
    return replace(run, stack=replace(run.stack, moe_random_routing=False))


def touched(run: Run) -> bool:
    stack = run.stack
    return run.arch.num_experts > 1 and stack.moe_random_routing and not stack.moe_drop_and_pad


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    before: dict[str, tuple[float, str]] = {}
    after: dict[str, tuple[float, str]] = {}
    for run in runs:
        for results, case in ((before, without(run)), (after, run)):
            got = outcome(case)
            if got is not None:
                results[run.name] = got
    print(f"{'run':36} {'before':>7} {'after':>7}  rows/expert: mean, busiest rank, sd")
    for run in runs:
        if not touched(run) or run.name not in after:
            continue
        pred = best_prediction(run, run_comm(run_design(run)))
        assert pred is not None
        plan = pred.plan
        mean = tokens_per_gpu(plan) * run.arch.top_k * plan.layout.ep / run.arch.num_experts
        busiest, spread = busiest_rank_rows(run.arch, plan)
        print(
            f"{run.name:36.36} {before[run.name][0]:+7.1%} {after[run.name][0]:+7.1%}"
            f"  {mean:8.0f} {busiest:8.0f} {spread:5.0f}"
        )
    print_set_lines("before", before, runs)
    print_set_lines("after", after, runs)


if __name__ == "__main__":
    main()
