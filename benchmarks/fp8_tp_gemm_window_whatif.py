"""FP8 against BF16 under Transformer Engine's userbuffers TP overlap: each collective behind
its own GEMM (what-if), and the GEMM profiling guide's Blackwell figures against the model.

``window``: the model hides a layer's sequence-parallel TP collectives behind all of the
layer's GEMMs together (``exposure._tp_exposed_s``: ``overlapped_s(raw, 3 x forward
GEMMs)``), so a precision that halves the GEMMs leaves the exposure unchanged as long as the
layer's collectives fit in the layer's GEMM time. Transformer Engine's userbuffers overlap
pairs each collective with one GEMM (NVIDIA/TransformerEngine v2.2
``transformer_engine/pytorch/module/layernorm_linear.py`` and ``linear.py``: ``ub_overlap_ag``
gathers the column-parallel input inside the QKV / FC1 forward GEMM, ``ub_overlap_rs``
reduce-scatters the row-parallel output inside the projection / FC2 forward GEMM; in the
backward ``ub_overlap_ag`` gathers the row-parallel output gradient inside its data-gradient
GEMM, ``ub_bulk_dgrad`` re-gathers the column-parallel input behind the data-gradient GEMM
and ``ub_bulk_wgrad`` reduce-scatters the data gradient behind the weight-gradient GEMM). This
mode prices each pair as ``overlapped_s(collective, its GEMM)``, the GEMMs taken as shares of
the layer's forward GEMM time by FLOPs (a backward GEMM = its forward one), and prints the
per-set and per-class MAPE and median before and after and the rows that move. Dense
sequence-parallel layers only; everything else keeps the model's rule.

``guide``: the GEMM profiling guide (NVIDIA/TransformerEngine ``docs/features/
low_precision_training/speedups.rst`` and ``gemm_profiling/img/b300_model_config_speedup*.png``
at 1609c890e, 2026-06-01; ``benchmarks/gemm/benchmark_gemm.py`` at the same commit): the 12
GEMMs of a hidden 4,096 / intermediate 16,384 layer at M = 15,872 tokens on one B300,
BF16 ``torch.matmul`` against per-tensor FP8 (``Float8CurrentScaling`` kernels on inputs
quantised beforehand: 1.94x; ``te.Linear`` under autocast, which quantises input and BF16
weight on every call: current scaling 1.41x, delayed scaling 1.61x). Printed beside the
model's ratio of the same 12 GEMMs (``gemm_time_s`` at B300's BF16 and FP8 ceilings) and the
effective HBM rate that the guide's quantisation time implies against the model's.

Calibration and development rows only; held-out rows are skipped.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/fp8_tp_gemm_window_whatif.py window
    PYTHONPATH=$PWD/src:$PWD python benchmarks/fp8_tp_gemm_window_whatif.py guide
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from typing import Any

from clusterforge.catalog import load_catalog
from clusterforge.perf import exposure
from clusterforge.perf.compute import overlapped_s
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.roofline import gemm_time_s, gpu_perf, load_constants
from validation.runs import Outcome, load_runs, predict_run

__all__ = ["GUIDE_SPEEDUP", "guide_report", "main", "per_gemm_exposed_s"]

# speedups.rst at 1609c890e: per-layer GEMM time of BF16 over each FP8 recipe, B300.
GUIDE_SPEEDUP = {"prequantized": 1.94, "current": 1.41, "delayed": 1.61}
GUIDE_BF16_MS = 12.9  # the autocast figure's BF16 bar (per layer, read off the plot)
GUIDE_M = 15872
GUIDE_H, GUIDE_F = 4096, 16384


def _gemm_shares(arch: Any, t: int) -> tuple[float, float, float, float]:
    """FLOP shares of QKV, projection, FC1 and FC2 in one dense layer's forward."""
    h, f = arch.hidden_size, ffn_size(arch)
    up_cols = (2 if arch.gated_mlp else 1) * f
    flops = (
        h * (q_dim(arch) + 2 * kv_dim(arch)) / t,
        q_dim(arch) * h / t,
        h * up_cols / t,
        f * h / t,
    )
    total = sum(flops)
    qkv, proj, fc1, fc2 = (x / total for x in flops)
    return qkv, proj, fc1, fc2


def per_gemm_exposed_s(plan: Any, arch: Any, comm: Any, stack: Any, times: Any) -> float:
    """Exposed TP seconds of one dense layer when each collective hides behind its own GEMM."""
    gather_input, gather, scatter = exposure._tp_calls_s(plan, arch, comm, stack)
    shares = _gemm_shares(arch, plan.layout.tp)
    qkv, proj, fc1, fc2 = (times.gemm_forward_s * s for s in shares)
    forward = (
        overlapped_s(gather_input, qkv)
        + overlapped_s(scatter, proj)
        + overlapped_s(gather_input, fc1)
        + overlapped_s(scatter, fc2)
    )
    backward = overlapped_s(gather, proj) + overlapped_s(gather, fc2)
    backward += overlapped_s(scatter, qkv) + overlapped_s(scatter, fc1)
    if exposure.tp_backward_regathers(plan, stack):
        backward += overlapped_s(gather_input, qkv) + overlapped_s(gather_input, fc1)
    return forward * (2 if plan.recompute == "full" else 1) + backward


def _patched(original: Any) -> Any:
    def exposed(plan: Any, arch: Any, comm: Any, stack: Any, times: Any, intra: bool) -> float:
        plain = (
            stack.tp_overlap
            and intra
            and plan.layout.tp > 1
            and stack.tp_overlap_kind != "micro_pipeline"
            and plan.sequence_parallel
            and arch.num_experts == 1
            and not arch.parallel_block
        )
        if not plain:
            return float(original(plan, arch, comm, stack, times, intra))
        return per_gemm_exposed_s(plan, arch, comm, stack, times)

    return exposed


def _outcomes() -> dict[str, Outcome]:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    predict_run.cache_clear()
    return {o.run.name: o for o in map(predict_run, runs) if o.prediction is not None}


def _cell(errors: list[float]) -> str:
    mape = statistics.fmean(abs(e) for e in errors) * 100
    return (
        f"n={len(errors):3}  MAPE {mape:5.2f} %  median {statistics.median(errors) * 100:+6.2f} %"
    )


def window_report() -> None:
    """Per set and class before / after, then every row whose error moved."""
    base = _outcomes()
    original = exposure._tp_exposed_s
    exposure._tp_exposed_s = _patched(original)  # type: ignore[assignment]
    try:
        moved = _outcomes()
    finally:
        exposure._tp_exposed_s = original  # type: ignore[assignment]
        predict_run.cache_clear()
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    for name, o in base.items():
        keys = ["set calibration"] if o.run.subset == "calibration" else ["set development"]
        if o.run.subset == "development":
            keys.append(f"class {o.run_class}")
        for key in keys:
            before[key].append(o.error)
            after[key].append(moved[name].error)
    for key in sorted(before):
        print(f"  {key:26} before {_cell(before[key])}   after {_cell(after[key])}")
    for name, o in base.items():
        new = moved[name].error
        if abs(new - o.error) > 5e-4:
            print(f"  {name:52} {o.error * 100:+6.1f} -> {new * 100:+6.1f} %  {o.run.subset}")


def _guide_shapes() -> list[tuple[int, int, int]]:
    """(M, K, N) of the guide's 12 GEMMs: forward, data gradient, weight gradient."""
    m, h, f = GUIDE_M, GUIDE_H, GUIDE_F
    forward = [(m, h, 3 * h), (m, h, h), (m, h, f), (m, f, h)]
    dgrad = [(m, n, k) for m, k, n in forward]
    wgrad = [(k, m, n) for _, k, n in forward]
    return forward + dgrad + wgrad


def guide_report() -> None:
    """The guide's B300 ratios beside the model's, and its quantisation's implied HBM rate."""
    gpu = load_catalog().gpus["b300"]
    bf16, fp8 = gpu_perf(gpu, "bf16"), gpu_perf(gpu, "fp8")
    shapes = _guide_shapes()
    # gemm_time_s takes (m, n, k); the guide writes M x K x N
    t_bf16 = sum(gemm_time_s(m, n, k, bf16) for m, k, n in shapes)
    t_fp8 = sum(gemm_time_s(m, n, k, fp8) for m, k, n in shapes)
    print(f"  B300 MAMF FP8 / BF16: {fp8.matmul_tflops / bf16.matmul_tflops:.3f}")
    print(
        f"  model, 12 GEMMs: BF16 {t_bf16 * 1e3:.2f} ms, FP8 {t_fp8 * 1e3:.2f} ms, ratio {t_bf16 / t_fp8:.3f}"
    )
    flops = sum(2.0 * m * k * n for m, k, n in shapes)
    print(f"  guide BF16: {GUIDE_BF16_MS} ms per layer, {flops / GUIDE_BF16_MS / 1e9:,.0f} TFLOP/s")
    for recipe, speedup in GUIDE_SPEEDUP.items():
        print(f"  guide per-tensor FP8 {recipe:12}: {speedup:.2f}x")
    elements = sum(m * k + k * n for m, k, n in shapes)  # input and weight quantised per call
    c = load_constants()
    kernels = {"current": 4, "delayed": 2}  # amax + cast per operand, or one fused cast
    bytes_per = {"current": 5.0, "delayed": 3.0}  # amax read 2 B + read 2 B + write 1 B
    for recipe in ("current", "delayed"):
        extra_ms = GUIDE_BF16_MS * (1 / GUIDE_SPEEDUP[recipe] - 1 / GUIDE_SPEEDUP["prequantized"])
        launch_ms = kernels[recipe] * len(shapes) * c.kernel_overhead_s * 1e3
        rate = bytes_per[recipe] * elements / ((extra_ms - launch_ms) * 1e-3) / 1e12
        model = gpu.hbm_tbyte_per_s * c.hbm_efficiency
        print(
            f"  {recipe:8} quantisation {extra_ms:.2f} ms per layer ({elements / 1e9:.2f} G elements,"
            f" {launch_ms:.2f} ms of it kernel floors): {rate:.1f} TB/s effective, model {model:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("window", "guide"))
    args = parser.parse_args()
    if args.mode == "window":
        window_report()
    else:
        guide_report()


if __name__ == "__main__":
    main()
