"""Where the model puts one MoE layer's time, against what the published throughput leaves.

For every development run with experts that ``predict`` fits (or the runs named on the
command line), prints the chosen plan's time of one layer and micro-batch on the slowest
stage, split into the parts the model prices:

- ``dense``: the attention block's linears and the router (weight GEMMs outside the experts);
- ``experts``: the two expert linears as Transformer Engine's grouped linear runs them
  (:func:`clusterforge.perf.moe.expert_gemms_s`);
- ``attn``: the attention kernel with its context-parallel and unpadding passes;
- ``eager``: the memory-bound passes over the routed copies outside the GEMMs (the eager
  expert bias, the GLU clamp, FP8 row padding: :mod:`clusterforge.perf.moe`; the flex
  dispatcher's permutations: :mod:`clusterforge.perf.flex_permute`);
- ``other``: the rest of the layer's compute (norms, residuals, activation, permutations,
  rotary, FP8 casts, recomputation);
- ``ep``: the exposed expert-parallel communication of the layer.

each as forward / backward milliseconds, then the gap the published throughput leaves per
layer and micro-batch, and what one lever would have to do alone to absorb it: the factor
every GEMM of the layer would have to be slower by (``xgemm``), or the EP communication
(``xep``). The step's exposed data-parallel seconds come last (``dp s``), with what the
expert-data-parallel reduction and gather would cost not hidden at all (``edp raw s``).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_layer_breakdown.py [RUN ...]

Development rows only (never held-out).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import _dp_traffic_s, layer_comm
from clusterforge.perf.flex_permute import flex_permute_s
from clusterforge.perf.memory import stage_expert_params
from clusterforge.perf.moe import expert_gemms_s, expert_output_bias_s, fp8_padding_s, glu_clamp_s
from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.step import Prediction
from validation.runs import Run, load_runs, predict_run, run_comm, run_design


@dataclass(frozen=True)
class LayerSplit:
    """One layer's forward and backward milliseconds per part (see the module docstring)."""

    gemm: tuple[float, float]
    experts: tuple[float, float]
    attention: tuple[float, float]
    eager: tuple[float, float]
    other: tuple[float, float]
    ep_ms: float

    @property
    def total_ms(self) -> float:
        parts = (self.gemm, self.attention, self.eager, self.other)
        return sum(f + b for f, b in parts) + self.ep_ms


def layer_split(run: Run, pred: Prediction) -> LayerSplit:
    """The chosen plan's layer, split into the parts the model prices (milliseconds)."""
    plan, arch, stack = pred.plan, run.arch, run.stack
    design = run_design(run)
    gpu = design.compute.gpu
    if run.gpu:
        gpu = gpu.model_copy(update=dict(run.gpu))
    perf = gpu_perf(gpu, plan.precision)
    times = layer_times(arch, plan, perf, stack)
    comm = layer_comm(
        arch, plan, times, run_comm(design), stack, design.compute.nvlink_domain_gpus, gpu
    )
    experts = expert_gemms_s(arch, plan, perf, stack)
    bias, clamp = (
        expert_output_bias_s(arch, plan, perf, stack),
        glu_clamp_s(arch, plan, perf, stack),
    )
    padding = fp8_padding_s(arch, plan, perf, stack)
    permute = flex_permute_s(arch, plan, perf, stack)
    eager = (
        bias[0] + clamp[0] + padding + permute[0],
        bias[1] + clamp[1] + padding + permute[1],
    )
    attention = (times.attention_forward_s, times.attention_backward_s)
    # The forward's GEMMs are on the record; the backward's dense GEMMs are twice the forward's.
    dense_fwd = times.gemm_forward_s - experts[0]
    gemm = (times.gemm_forward_s, 2.0 * dense_fwd + experts[1])
    forward_other = times.forward_s - gemm[0] - attention[0] - eager[0]
    backward_other = times.backward_s + times.recompute_s - gemm[1] - attention[1] - eager[1]
    ms = 1e3
    return LayerSplit(
        gemm=(gemm[0] * ms, gemm[1] * ms),
        experts=(experts[0] * ms, experts[1] * ms),
        attention=(attention[0] * ms, attention[1] * ms),
        eager=(eager[0] * ms, eager[1] * ms),
        other=(forward_other * ms, backward_other * ms),
        ep_ms=comm.ep_s * ms,
    )


def edp_raw_s(run: Run, pred: Prediction) -> float:
    """Seconds per step of the expert-data-parallel gradient reduction and parameter gather,
    none of it hidden (0 where every expert has one copy)."""
    plan = pred.plan
    if plan.layout.ep >= plan.layout.dp * plan.layout.cp:
        return 0.0
    params = stage_expert_params(run.arch, plan, pred.stage_layers[0])
    reduce, gather = _dp_traffic_s(plan, params, run_comm(run_design(run)), run.stack, "edp")
    return reduce + gather


def main(names: list[str]) -> None:
    print(
        f"{'run':36s} {'dense':>11s} {'experts':>11s} {'attn':>11s} {'eager':>11s}"
        f" {'other':>11s} {'ep':>5s} {'gap':>5s} {'xgemm':>5s} {'xep':>5s} {'dp s':>5s}"
        f" {'edp raw s':>9s}"
    )
    for run in load_runs():
        if run.subset != "development" or run.arch.num_experts == 1:
            continue
        if names and run.name not in names:
            continue
        outcome = predict_run(run)
        pred = outcome.prediction
        if pred is None:
            continue
        split = layer_split(run, pred)
        published_step = pred.step_time_s * outcome.predicted / run.published
        per_layer = num_micro_batches(pred.plan) * max(pred.stage_layers)
        gap_ms = (published_step - pred.step_time_s) / per_layer * 1e3
        dense = (split.gemm[0] - split.experts[0], split.gemm[1] - split.experts[1])
        gemm_ms = sum(split.gemm)
        cells = [dense, split.experts, split.attention, split.eager, split.other]
        print(
            f"{run.name:36.36s} "
            + " ".join(f"{f:5.2f}/{b:5.2f}" for f, b in cells)
            + f" {split.ep_ms:5.2f} {gap_ms:5.2f} {1 + gap_ms / gemm_ms:5.2f}"
            + f" {1 + gap_ms / split.ep_ms if split.ep_ms > 0 else float('nan'):5.2f}"
            + f" {pred.breakdown.dp_comm_s:5.3f} {edp_raw_s(run, pred):9.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
