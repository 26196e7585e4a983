"""Published per-GEMM figures of MoE expert layers on Hopper and Blackwell against the model,
and what a per-GEMM launch floor in Transformer Engine's multi-stream grouped linear would do.

The twelfth MoE look (``benchmarks/moe_common_residual.py``) left the 128-expert
Megatron-Bridge rows 13-31 points optimistic after their dense twins, with expert count, the
flex dispatcher and EP overlap moving together. No per-layer Nsight budget of those layers is
published; what is published per kernel is transcribed here:

- NVIDIA/TransformerEngine pull request 3134 (SM100, ``benchmarks/linear/
  benchmark_grouped_linear.py --compare-nvfp4-grouped-gemm``, TN forward, times in ms): 8
  experts of 128 rows each, N 2,048, K 2,048, per-tensor NVFP4: multi-stream cuBLASLt 0.267 ms
  (kernel only, operands pre-swizzled) and 0.272 ms (whole dispatch path); the single-launch
  CUTLASS kernel 0.069 ms. 8 GEMMs of 1.07 GFLOP in 0.267 ms is ~33 us per GEMM, far above
  any Blackwell kernel time for that shape: the multi-stream path is launch-bound there.
- NVIDIA/TransformerEngine pull request 2045 (H100 BF16, TE 2.7, CUDA 12.9, multi-stream
  cuBLAS, ``tests/pytorch/test_group_gemm.py``): 8 x 4,096 x 768 x 2,048 at 627.9 TFLOP/s, 16
  x 2,048 x 768 x 2,048 at 553.9 (already in ``benchmarks/moe_common_residual.py``). Their
  time per GEMM (20.5 / 11.6 us) bounds any Hopper launch floor from above.
- tgale96/grouped_gemm pull request 37 (H100, Qwen3-30B-A3B ``up_proj``: 128 experts, K
  2,048, N 1,536, 65,536 routed rows, uniform routing): cuBLAS per-expert loop 129.5 TFLOP/s,
  CUTLASS SM90 cooperative grouped 160.5. This is the ``grouped_gemm`` package (Megatron-Core's
  legacy ``moe_grouped_gemm`` path), not TE's ``GroupedLinear`` that the rows run.
- NVIDIA Technical Blog, "Optimizing Communication for Mixture-of-Experts Training with Hybrid
  Expert Parallel" (2026-02-02), Grace Blackwell: DeepSeek-V3 (256 experts) 829 TFLOP/s per
  GPU with DeepEP, 943 with Hybrid-EP; Qwen3 235B MXFP8 728 and 800. A dispatcher A/B of the
  whole step, no split per layer or kernel; printed, not priced.

The candidate these imply: one grouped call of ``g`` expert GEMMs takes at least ``g`` times a
fixed launch cost per GEMM (the host launches them one after another; the four streams only
overlap their kernels). Priced at the Blackwell figure (33.4 us, NVFP4: an upper bound for the
BF16 rows, which skip the scale handling) and at the Hopper bound (5.8 us), against every MoE
development run, each set and class.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_per_gemm_floor_whatif.py

Calibration and development runs only (never held-out); ``src/`` is not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from benchmarks.moe_common_residual import SETS, TE_PR2045_MULTISTREAM, scores, summary

import clusterforge.perf.moe as moe
import validation.runs as runs_module
from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import GpuPerf, gpu_perf
from validation.gemm_rows import microbenchmark_share

MOE_MODULE: Any = moe  # patched inside per_gemm_floor only
# NVIDIA/TransformerEngine pull request 3134, "Performance improvement", TN (fprop) table,
# row "8e x 128", N 2048, K 2048, tok 1024: (experts, rows per expert, n, k, multi-stream ms
# kernel only ("pure"), multi-stream ms whole path ("dispatch"), CUTLASS single-launch ms pure).
TE_PR3134_SM100_NVFP4 = (8, 128, 2048, 2048, 0.267, 0.272, 0.069)
# tgale96/grouped_gemm pull request 37, H100, Qwen3-30B-A3B up_proj, uniform routing:
# (experts, routed rows, n, k, cuBLAS loop TFLOP/s, CUTLASS SM90 cooperative TFLOP/s).
GROUPED_GEMM_PR37_H100 = (128, 65536, 1536, 2048, 129.5, 160.5)
# developer.nvidia.com/blog/optimizing-communication-for-mixture-of-experts-training-with-
# hybrid-expert-parallel (2026-02-02), Grace Blackwell: (model, DeepEP, Hybrid-EP) TFLOP/s/GPU.
HYBRID_EP_BLOG_GB = (("DeepSeek-V3", 829.0, 943.0), ("Qwen3 235B MXFP8", 728.0, 800.0))


def per_gemm_us(case: tuple[int, int, int, int, float, float, float]) -> float:
    """Multi-stream microseconds per expert GEMM of pull request 3134's kernel-only time."""
    experts, _, _, _, pure_ms, _, _ = case
    return pure_ms * 1e3 / experts


def pr2045_us_per_gemm() -> list[float]:
    """Measured microseconds per GEMM of pull request 2045's multi-stream rows."""
    return [
        2.0 * g * m * n * k / (rate * 1e12) / g * 1e6 for g, m, n, k, rate in TE_PR2045_MULTISTREAM
    ]


BLACKWELL_FLOOR_US = per_gemm_us(TE_PR3134_SM100_NVFP4)
HOPPER_BOUND_US = min(pr2045_us_per_gemm())


def floor_for(blackwell_us: float, hopper_us: float) -> Callable[[GpuPerf], float]:
    def floor_s(perf: GpuPerf) -> float:
        hopper = perf.gpu_id.startswith(("h100", "h200"))
        return (hopper_us if hopper else blackwell_us) * 1e-6

    return floor_s


@contextmanager
def per_gemm_floor(floor_s: Callable[[GpuPerf], float]) -> Iterator[None]:
    """Every grouped expert call takes at least its GEMM count times ``floor_s(perf)``."""
    equal, ragged = moe.grouped_gemm_time_s, MOE_MODULE.ragged_grouped_gemm_time_s

    def equal_floored(
        m: float, n: float, k: float, perf: GpuPerf, num_gemms: float, **kw: float
    ) -> float:
        return max(equal(m, n, k, perf, num_gemms, **kw), num_gemms * floor_s(perf))

    def ragged_floored(
        rows: float, sd: float, n: float, k: float, perf: GpuPerf, num_gemms: float, streams: int
    ) -> float:
        time_s: float = ragged(rows, sd, n, k, perf, num_gemms, streams)
        return max(time_s, num_gemms * floor_s(perf))

    MOE_MODULE.grouped_gemm_time_s = equal_floored
    MOE_MODULE.ragged_grouped_gemm_time_s = ragged_floored
    runs_module.predict_run.cache_clear()
    try:
        yield
    finally:
        MOE_MODULE.grouped_gemm_time_s = equal
        MOE_MODULE.ragged_grouped_gemm_time_s = ragged
        runs_module.predict_run.cache_clear()


def model_kernel_checks() -> None:
    """The model's own times for the published shapes (BF16, lone-kernel share)."""
    gpus = load_catalog().gpus
    e, rows, n, k, pure_ms, path_ms, cutlass_ms = TE_PR3134_SM100_NVFP4
    b200 = gpu_perf(gpus["b200"], "bf16")
    model_ms = moe.grouped_gemm_time_s(rows, n, k, b200, e) * 1e3
    print("TE pull request 3134, SM100, 8 experts x 128 rows, N 2048, K 2048 (NVFP4), ms:")
    print(
        f"  multi-stream kernel only {pure_ms:.3f}, whole path {path_ms:.3f}, CUTLASS {cutlass_ms:.3f}"
    )
    print(
        f"  per GEMM (multi-stream): {BLACKWELL_FLOOR_US:.1f} us; model, B200 BF16: {model_ms:.3f} ms"
    )
    us = ", ".join(f"{v:.1f}" for v in pr2045_us_per_gemm())
    print(f"TE pull request 2045, H100 BF16 multi-stream, us per GEMM: {us} (Hopper bound)")
    g, routed, n, k, loop_tflops, cutlass_tflops = GROUPED_GEMM_PR37_H100
    h100 = gpu_perf(gpus["h100-sxm"], "bf16")
    lone = replace(h100, gemm_efficiency=microbenchmark_share("h100-sxm"))
    flop = 2.0 * routed * n * k
    model_tflops = flop / moe.grouped_gemm_time_s(routed / g, n, k, lone, g) / 1e12
    print(
        f"grouped_gemm pull request 37, H100 {g} experts x {routed // g} rows, N {n}, K {k}:"
        f" cuBLAS loop {loop_tflops} TFLOP/s ({flop / (loop_tflops * 1e12) / g * 1e6:.1f} us"
        f" per GEMM), CUTLASS grouped {cutlass_tflops}; model (TE, 4 streams) {model_tflops:.1f}"
    )


def main() -> None:
    model_kernel_checks()
    for model, deepep, hybrid in HYBRID_EP_BLOG_GB:
        print(
            f"Hybrid-EP blog, GB200-class, {model}: DeepEP {deepep:.0f} -> Hybrid-EP {hybrid:.0f}"
            f" TFLOP/s/GPU (step time {deepep / hybrid - 1:+.1%})"
        )
    before = scores()
    cases = {
        f"Blackwell {BLACKWELL_FLOOR_US:.1f} us": floor_for(BLACKWELL_FLOOR_US, 0.0),
        f"+ Hopper {HOPPER_BOUND_US:.1f} us": floor_for(BLACKWELL_FLOOR_US, HOPPER_BOUND_US),
    }
    afters = {}
    for label, floor_s in cases.items():
        with per_gemm_floor(floor_s):
            afters[label] = scores()
    labels = list(afters)
    print(f"\nMoE runs, error before -> {' | '.join(labels)}:")
    for name, (_, cls, err) in before.items():
        if cls == "moe":
            cells = "  ".join(f"{afters[lab][name][2]:+7.1%}" for lab in labels)
            print(f"  {name:40s} {err:+7.1%} -> {cells}")
    for label in labels:
        moved = [
            n for n, v in before.items() if v[1] != "moe" and abs(afters[label][n][2] - v[2]) > 5e-4
        ]
        print(f"{label}: runs of other classes moved: {len(moved)}")
    for subset in SETS:
        print(f"  {subset:11s} before: {summary(before, subset)}")
        for label in labels:
            print(f"  {subset:11s} {label}: {summary(afters[label], subset)}")


if __name__ == "__main__":
    main()
