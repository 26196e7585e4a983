"""Megatron-FSDP's root module (``clusterforge.perf.megatron_fsdp``, printed by
``benchmarks/megatron_fsdp_whatif.py``): the delta is zero off Megatron-FSDP and below
ZeRO-3, and on the Together Llama 3 70B rows it is a few ms per step, far below the step
growth the rows measure (290-960 ms). Development rows only."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.megatron_fsdp_whatif import captured_times

from clusterforge.perf.megatron_fsdp import root_module_delta_s
from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.stack import stack_named
from validation.runs import load_runs, predict_run, run_comm, run_design


def _together_rows() -> list:
    return [
        r
        for r in load_runs()
        if r.subset == "development" and r.name.startswith("together-b200-llama3-70b-fsdp")
    ]


def test_the_delta_is_small_and_only_on_megatron_fsdp() -> None:
    rows = _together_rows()
    assert len(rows) == 3
    for run in rows:
        pred = predict_run(run).prediction
        assert pred is not None
        comm = run_comm(run_design(run))
        times = captured_times(run)
        layers, micro = run.arch.num_layers, num_micro_batches(pred.plan)
        delta = root_module_delta_s(
            run.arch, pred.plan, comm, run.stack, times, layers=layers, num_micro=micro
        )
        assert -0.005 < delta < 0.005
        other = root_module_delta_s(
            run.arch,
            pred.plan,
            comm,
            stack_named("torchtitan"),
            times,
            layers=layers,
            num_micro=micro,
        )
        assert other == 0.0
        zero1 = root_module_delta_s(
            run.arch,
            replace(pred.plan, zero_stage=1),
            comm,
            run.stack,
            times,
            layers=layers,
            num_micro=micro,
        )
        assert zero1 == 0.0
