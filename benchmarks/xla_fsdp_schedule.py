"""The JAX/XLA FSDP rows (MaxText and Paxml on DGX H100): what XLA's scheduling settings of
each recipe would change in the predicted step.

For every development run on the ``maxtext`` stack, prints the signed error as predicted,
the step the published throughput implies and the predicted one (ms), the unit collectives
back to back (``raw ms``, every all-gather, backward re-gather, reduce-scatter and HSDP
all-reduce of a step at the netsim model's times) and as the model exposes them, and the
signed error if the run's layer loop copied its carried gathered weights every iteration,
as XLA does without while-loop double buffering (``Stack.scan_carry_copies``, the setting
of NVIDIA's Paxml recipe; MaxText's recipes double-buffer), with those copies' ms per step.
The dgxc Paxml development rows state the copies (since Dec 2026), so theirs add 0 here;
``benchmarks/paxml_recipe_costs.py`` prints them off and on.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/xla_fsdp_schedule.py

Development rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import replace

from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.sharded import unit_collectives
from clusterforge.perf.step import predict_step
from validation.runs import Run, load_runs, predict_run, run_comm, run_design


def jax_development_runs() -> list[Run]:
    """The development runs on the ``maxtext`` stack (MaxText and Paxml), by file and name."""
    runs = [r for r in load_runs() if r.subset == "development" and r.stack.name == "maxtext"]
    return sorted(runs, key=lambda r: (r.file, r.name))


def main() -> None:
    print(
        f"{'run':<42} {'error':>7} {'meas ms':>8} {'pred ms':>8} {'raw ms':>7} "
        f"{'exp ms':>7} {'copy ms':>7} {'error, copies':>13}"
    )
    for run in jax_development_runs():
        pred = predict_run(run).prediction
        assert pred is not None, run.name
        design = run_design(run)
        gpu, domain = design.compute.gpu, design.compute.nvlink_domain_gpus
        comm = run_comm(design)
        copied = predict_step(
            run.arch, pred.plan, gpu, comm, domain, replace(run.stack, scan_carry_copies=True)
        )
        error = float(getattr(pred, run.metric)) / run.published - 1.0
        copied_error = float(getattr(copied, run.metric)) / run.published - 1.0
        c = unit_collectives(run.arch, pred.plan, comm, run.stack, layers=run.arch.num_layers)
        raw_s = num_micro_batches(pred.plan) * c.per_micro_batch_s
        measured_s = pred.step_time_s * (1.0 + error)
        print(
            f"{run.name:<42} {error * 100:+6.1f}% {measured_s * 1e3:8.0f} "
            f"{pred.step_time_s * 1e3:8.0f} {raw_s * 1e3:7.0f} "
            f"{pred.breakdown.dp_comm_s * 1e3:7.0f} "
            f"{(copied.step_time_s - pred.step_time_s) * 1e3:7.1f} {copied_error * 100:+12.1f}%"
        )


if __name__ == "__main__":
    main()
