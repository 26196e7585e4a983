"""FSDP gathers of an XLA layer scan without the pipelined all-gather, row by row.

The JAX-Toolbox Paxml development rows (``validation/pub_jaxtoolbox_pax_fsdp.toml``) state
``xla_pipelined_all_gather = false``: the container's Paxml scripts leave
``--xla_gpu_enable_pipelined_all_gather`` at XLA's default of the time (false), so each
scanned layer's gathers run one at a time inside its own iteration
(:mod:`clusterforge.perf.xla_scan`). Every other ``maxtext``-stack row's recipe pipelines
them (MaxText's and NVIDIA's Paxml benchmark recipes set the flag).

Prints, for every ``maxtext``-stack development row, the signed error (positive =
optimistic) with the pipelined all-gather and as the row states it, and the ms it adds
per step; for the rows that state it, one layer's combined gathers (MB and ms each) and the
exposed gather ms per layer in the forward and the backward; then the per-class MAPE of
development and calibration with every row pipelined and as stated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/xla_scan_gathers.py

Development and calibration rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import replace

from clusterforge.perf.compute import layer_times
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.power_limit import power_limited
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.xla_scan import (
    XLA_ALL_GATHER_COMBINE_BYTES,
    combined_groups,
    layer_weights,
    scan_gathers,
)
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = ["layer_detail", "main", "pipelined", "signed_error", "step_ms"]


def pipelined(run: Run) -> Run:
    """The run with XLA's pipelined all-gather on (every recipe but the JAX-Toolbox rows')."""
    return replace(run, stack=replace(run.stack, xla_pipelined_all_gather=True))


def signed_error(run: Run) -> float:
    """The run's signed error (positive = optimistic)."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    return float(getattr(pred, run.metric)) / run.published - 1.0


def step_ms(run: Run) -> float:
    """The run's predicted step in ms."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    return pred.step_time_s * 1e3


def layer_detail(run: Run) -> str:
    """One layer's combined gathers and exposed gather ms (forward, backward) of the run's
    predicted plan, at its layer times."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    plan, stack, arch = pred.plan, run.stack, run.arch
    design = run_design(run)
    gpu = design.compute.gpu
    gpu = gpu.model_copy(update=dict(run.gpu)) if run.gpu else gpu
    perf = gpu_perf(power_limited(gpu, run.gpu_power_limit_w), plan.precision)
    times = layer_times(arch, plan, perf, stack)
    comm, (shard, _) = run_comm(design), shard_groups(plan)
    wire = stack.gathered_weight_bytes(plan.precision)
    sizes = [p * wire for p in layer_weights(arch, plan)]
    groups = combined_groups(sizes, XLA_ALL_GATHER_COMBINE_BYTES)
    cells = ", ".join(
        f"{size / 1e6:.1f} MB {comm.collective_time_s('all_gather', size, shard) * 1e3:.2f} ms"
        for _, size in groups
    )
    it = scan_gathers(arch, plan, comm, stack, times, shard, regather=True)
    return (
        f"    gathers per layer: {cells}; layer forward {times.forward_s * 1e3:.2f} ms, "
        f"exposed {it.forward_s * 1e3:.2f} ms; backward+recompute "
        f"{(times.backward_s + times.recompute_s) * 1e3:.2f} ms, exposed {it.backward_s * 1e3:.2f} ms"
    )


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    maxtext = sorted(
        (r for r in runs if r.subset == "development" and r.stack.name == "maxtext"),
        key=lambda r: (r.file, r.name),
    )
    print(f"{'run':<44} {'pipelined':>10} {'as stated':>10} {'ms/step':>8}")
    for run in maxtext:
        added = step_ms(run) - step_ms(pipelined(run))
        print(
            f"{run.name:<44} {100 * signed_error(pipelined(run)):+9.1f}%"
            f" {100 * signed_error(run):+9.1f}% {added:8.1f}"
        )
        if not run.stack.xla_pipelined_all_gather:
            print(layer_detail(run))
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        before = class_summary(chosen, lambda r: signed_error(pipelined(r)), medians=True)
        print(f"{subset} pipelined: {before}")
        print(f"{subset} as stated: {class_summary(chosen, signed_error, medians=True)}")


if __name__ == "__main__":
    main()
