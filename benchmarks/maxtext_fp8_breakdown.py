"""MaxText 70B on H100: where the predicted step goes, and which priced cost could be the miss.

The MaxText development rows (NVIDIA DGX Cloud Benchmarking recipes, Llama 2 / Llama 3 70B,
XLA FSDP over 64-2,048 H100) are predicted too slow: BF16 by 0.2-7.5 %, FP8 by 10.8-13.1 %
except two Llama 2 FP8 rows. For every development MaxText row this prints the step split
into the parts the model prices (seconds per step):

* ``gemm f/b/r``: the weight GEMMs of the forward, the backward (input and weight
  gradients) and the backward's recomputation under the run's ``remat_policy``;
* ``attn``: cuDNN flash attention, forward + backward + its recomputed forward (the
  policies of these runs never keep ``context``);
* ``fp8``: everything FP8 adds besides faster GEMMs (``perf/fp8.py``: the per-layer
  quantisation and transposed copies, the weight shards quantised before their gathers and
  the gathered weights' transposed copy);
* ``dp``: the exposed FSDP collectives, split into the part an ideal overlap could hide
  (``dp-hide``: the overlap interference charged on the hidden calls) and the rest;
* ``rest``: element-wise fusions (norms, rotary, SwiGLU, residuals), logits, optimizer.

Then the signed error after removing each candidate cost (``what-if``), and the factor by
which every weight GEMM would have to be faster for the row to be met with everything else
as priced (``gemm x``). A cost that explains the FP8 miss must move the FP8 rows by about
12 points and the BF16 rows by a few at most. The figures are in docs/validation.md
("MaxText FP8 on H100").

    PYTHONPATH=$PWD/src:$PWD python benchmarks/maxtext_fp8_breakdown.py

Development rows only (never held-out).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from clusterforge.perf.compute import _weight_gemms_s, layer_times
from clusterforge.perf.fp8 import FP8_KERNELS_PER_LAYER, fp8_layer_bytes, fp8_weight_cast_s
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches, tokens_per_gpu
from clusterforge.perf.remat import _recomputed_gemms
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, gpu_perf, memory_time_s
from clusterforge.perf.sharded import unit_collectives
from validation.runs import Run, load_runs, predict_run, run_comm, run_design


@dataclass(frozen=True)
class StepParts:
    """One MaxText row's predicted step by priced part (seconds per step)."""

    run: Run
    error: float
    step_s: float
    gemm_forward_s: float
    gemm_backward_s: float
    gemm_recompute_s: float
    attention_s: float
    fp8_s: float
    dp_hideable_s: float
    dp_rest_s: float

    @property
    def measured_s(self) -> float:
        """The step the published throughput implies (throughput scales as 1 / step)."""
        return self.step_s * (1.0 + self.error)

    @property
    def gemm_s(self) -> float:
        return self.gemm_forward_s + self.gemm_backward_s + self.gemm_recompute_s

    @property
    def rest_s(self) -> float:
        dp = self.dp_hideable_s + self.dp_rest_s
        return self.step_s - self.gemm_s - self.attention_s - self.fp8_s - dp

    def error_without(self, seconds: float) -> float:
        """Signed error with ``seconds`` taken off the predicted step."""
        return self.measured_s / (self.step_s - seconds) - 1.0

    def gemm_speedup_needed(self) -> float:
        """How much faster every weight GEMM must run to meet the row, all else as priced."""
        return self.gemm_s / (self.measured_s - (self.step_s - self.gemm_s))


def _gemm_parts(run: Run, plan: ParallelPlan, perf: GpuPerf) -> tuple[float, float, float]:
    """(forward, backward, recomputed) weight-GEMM seconds of one layer and micro-batch."""
    forward, backward = _weight_gemms_s(run.arch, plan, perf, run.stack)
    saved = set(run.stack.remat_saved)
    tokens = tokens_per_gpu(plan)
    shapes = _recomputed_gemms(run.arch, plan.layout.tp, saved)
    return forward, backward, sum(gemm_time_s(tokens, n, k, perf) for n, k in shapes)


def _fp8_s(run: Run, plan: ParallelPlan, perf: GpuPerf) -> float:
    """FP8 extras of one micro-batch, all layers: per-layer casts and the weights' quantise
    and transposed copies (as ``perf/compute.py`` and ``perf/step.py`` charge them)."""
    layers = run.arch.num_layers
    cast_fwd, cast_bwd = fp8_layer_bytes(run.arch, plan, run.stack, perf.gpu_id)
    kernels = FP8_KERNELS_PER_LAYER // 2
    per_layer = 0.0
    if cast_fwd > 0:
        per_layer = memory_time_s(cast_fwd, perf, kernels) + memory_time_s(cast_bwd, perf, kernels)
    return layers * per_layer + fp8_weight_cast_s(run.arch, plan, run.stack, perf, layers)


def maxtext_parts() -> Iterator[StepParts]:
    """Every development MaxText row that ``predict`` fits, split into its priced parts (the
    MaxText source only: Paxml's rows run on the same JAX stack but are not MaxText's)."""
    for run in load_runs():
        if run.subset != "development" or run.file != "pub_maxtext_fsdp_h100.toml":
            continue
        outcome = predict_run(run)
        pred = outcome.prediction
        if pred is None:
            continue
        plan, design = pred.plan, run_design(run)
        perf = gpu_perf(design.compute.gpu, plan.precision)
        m, layers = num_micro_batches(plan), run.arch.num_layers
        forward, backward, recompute = _gemm_parts(run, plan, perf)
        times = layer_times(run.arch, plan, perf, run.stack)
        attention = times.attention_forward_s * 2 + times.attention_backward_s
        c = unit_collectives(run.arch, plan, run_comm(design), run.stack, layers=layers)
        dp_rest = m * (c.gather_s + c.regather_s + c.reduce_s + c.sync_s + c.ends_s)
        yield StepParts(
            run=run,
            error=outcome.error,
            step_s=pred.step_time_s,
            gemm_forward_s=m * layers * forward,
            gemm_backward_s=m * layers * backward,
            gemm_recompute_s=m * layers * recompute,
            attention_s=m * layers * attention,
            fp8_s=m * _fp8_s(run, plan, perf),
            dp_hideable_s=max(0.0, pred.breakdown.dp_comm_s - dp_rest),
            dp_rest_s=min(pred.breakdown.dp_comm_s, dp_rest),
        )


def _breakdown_line(p: StepParts) -> str:
    name = p.run.name.removeprefix("pub-maxtext-h100-")
    return (
        f"{name:24s} {p.error:+6.1%} {p.step_s:6.2f} {p.measured_s:6.2f} "
        f"{p.gemm_forward_s:5.2f} {p.gemm_backward_s:5.2f} {p.gemm_recompute_s:5.2f} "
        f"{p.attention_s:5.2f} {p.fp8_s:5.2f} {p.dp_hideable_s:5.2f} {p.dp_rest_s:5.2f} "
        f"{p.rest_s:5.2f}"
    )


# Forward fast-accumulation speed-ups tried (the only figure found: "1.1x to 1.2x", a user's
# benchmark in pytorch/ao issue 2377; see docs/sources.md, "FP8 accumulation").
FAST_ACCUM_WHAT_IF = (1.1, 1.2)


def _what_if_line(p: StepParts) -> str:
    name = p.run.name.removeprefix("pub-maxtext-h100-")
    fp8 = p.run.base.precision == "fp8"
    forward = p.gemm_forward_s + p.gemm_recompute_s
    accum = [forward * (1 - 1 / r) if fp8 else 0.0 for r in FAST_ACCUM_WHAT_IF]
    cells = [
        p.error_without(p.fp8_s),
        p.error_without(p.dp_hideable_s),
        p.error_without(p.attention_s / 3),  # the recomputed attention forward
        *(p.error_without(s) for s in accum),
    ]
    return (
        f"{name:24s} {p.error:+6.1%} "
        + " ".join(f"{e:+7.1%}" for e in cells)
        + (f"   {p.gemm_speedup_needed():5.3f}")
    )


def main() -> None:
    parts = sorted(maxtext_parts(), key=lambda p: (p.run.base.precision, p.run.name))
    print(
        "seconds per step     error   pred   meas gemm-f gemm-b gemm-r attn  fp8 dp-hide dp  rest"
    )
    for p in parts:
        print(_breakdown_line(p))
    print()
    print("what-if (signed error)   now  no-fp8 no-dp-hide no-attn-rc accum1.1 accum1.2   gemm x")
    for p in parts:
        print(_what_if_line(p))


if __name__ == "__main__":
    main()
