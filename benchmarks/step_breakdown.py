"""Where ``predict`` puts a published run's step time, and how much the published figure leaves.

For each named run (calibration or development; a held-out name is refused), prints the
chosen plan, the step breakdown (seconds and share of the predicted step), one layer's
forward, backward, recomputation and exposed TP seconds per micro-batch, and the gap: the
seconds the published throughput leaves beyond the predicted step, per step and per layer
and micro-batch of the slowest stage, whose time a pipeline counts once per micro-batch and
once per bubble slot (the unit a per-layer mechanism would have to fill).

Without names it prints the torchtitan runs of the ``fsdp-nd`` class (tensor and/or pipeline
parallelism with FSDP2).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/step_breakdown.py [RUN ...]
"""

from __future__ import annotations

import argparse
from dataclasses import asdict

from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.roofline import gpu_perf
from validation.runs import Outcome, Run, load_runs, predict_run, run_comm, run_design


def selected_runs(names: list[str]) -> list[Run]:
    """The named runs, or the torchtitan ``fsdp-nd`` development runs; held-out names are
    refused (their predictions are never printed)."""
    runs = {run.name: run for run in load_runs()}
    if not names:
        return [
            run
            for run in runs.values()
            if run.subset == "development"
            and run.stack.name == "torchtitan"
            and predict_run(run).run_class == "fsdp-nd"
        ]
    unknown = [n for n in names if n not in runs]
    if unknown:
        raise SystemExit(f"unknown runs: {', '.join(unknown)}")
    frozen = [n for n in names if runs[n].subset == "heldout"]
    if frozen:
        raise SystemExit(f"held-out runs are not printed: {', '.join(frozen)}")
    return [runs[n] for n in names]


def _layer_lines(run: Run, outcome: Outcome) -> list[str]:
    """One layer's compute and exposed TP seconds per micro-batch, in ms."""
    assert outcome.prediction is not None
    plan = outcome.prediction.plan
    design = run_design(run)
    gpu = design.compute.gpu
    if run.gpu:
        gpu = gpu.model_copy(update=dict(run.gpu))
    perf = gpu_perf(gpu, plan.precision)
    times = layer_times(run.arch, plan, perf, run.stack)
    comm = layer_comm(
        run.arch, plan, times, run_comm(design), run.stack, design.compute.nvlink_domain_gpus, gpu
    )
    return [
        f"  layer, ms per micro-batch: forward {times.forward_s * 1e3:.2f} (GEMMs "
        f"{times.gemm_forward_s * 1e3:.2f}, attention {times.attention_forward_s * 1e3:.2f}), "
        f"backward {times.backward_s * 1e3:.2f}, recompute {times.recompute_s * 1e3:.2f}, "
        f"exposed TP {comm.tp_s * 1e3:.2f}"
    ]


def describe(run: Run) -> list[str]:
    """The lines printed for one run."""
    outcome = predict_run(run)
    pred = outcome.prediction
    if pred is None:
        return [f"{run.name}: no plan fits"]
    job = pred.plan.layout
    published_step = pred.step_time_s * outcome.predicted / run.published
    micro = num_micro_batches(pred.plan)
    # the slowest stage's time counts once per micro-batch and once per bubble slot (1F1B)
    slots = micro + (job.pp - 1) / job.vpp
    gap = published_step - pred.step_time_s
    lines = [
        f"{run.name} [{outcome.run_class}] published {run.published:,.1f} predicted "
        f"{outcome.predicted:,.1f} ({outcome.error * 100:+.1f} %)",
        f"  TP{job.tp} PP{job.pp} DP{job.dp} CP{job.cp} vpp{job.vpp} mb{pred.plan.micro_batch} "
        f"x {micro} {pred.plan.recompute} {pred.plan.precision}, stages {pred.stage_layers}",
    ]
    for name, value in asdict(pred.breakdown).items():
        lines.append(f"  {name:12s} {value:9.3f} s {value / pred.step_time_s * 100:5.1f} %")
    lines.append(
        f"  step {pred.step_time_s:.3f} s predicted, {published_step:.3f} s published: gap "
        f"{gap:+.3f} s, {gap / (slots * max(pred.stage_layers)) * 1e3:+.2f} ms per layer and "
        "micro-batch of the slowest stage (bubble slots counted)"
    )
    return lines + _layer_lines(run, outcome)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", help="run names (calibration or development)")
    for run in selected_runs(parser.parse_args().runs):
        print("\n".join(describe(run)))


if __name__ == "__main__":
    main()
