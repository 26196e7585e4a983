"""How fast the model prices an FP8 GEMM against its BF16 twin, shape by shape, next to
published per-shape measurements of both precisions on the same GPU and harness.

Published figures (transcribed here; none is a validation row):

* Hopper, a K sweep: tile-ai/tilelang ``benchmark/matmul/README.md`` (FP16, commit
  b2acfc379, 2025-10-19) and ``benchmark/matmul_fp8/README.md`` (FP8 e4m3, commit
  6d766a962, the same day, re-measured after its swizzle fix), NVIDIA H800 SXM (the H100's
  die, SMs and clocks), driver 560.35.05, M = N = 8,192, K = 256 .. 16,384, tilelang's own
  autotuned kernels. The tables' "Latency (s)" column is in milliseconds (2 M N K / latency
  gives their TFLOP/s column). Both kernels accumulate in the wgmma FP32 registers without
  promotion to CUDA cores, and the FP8 kernel writes its output in FP8 (``C`` has the input
  dtype in ``benchmark_matmul.py``), not in BF16 as training recipes do.
* Blackwell, 24 shapes (m, n, k in 2,048 / 4,096, batch 1, 2, 4): OpenXLA's GEMM table
  (the calibration rows of ``validation/gemm_microbench.toml``), BF16 and FP8 e4m3 -> BF16.

Each precision of the sweep is fitted (least squares) to ``t = FLOPs / R + waves x c``:
a large-shape rate ``R`` and a fixed time ``c`` per wave of 128 x 256 output tiles over
the 132 SMs (prologue and epilogue of each tile, which the K loop does not amortise). The
ratio this gives at a training shape is printed beside the model's (``gemm_time_s`` at the
H100's BF16 and FP8 ceilings), for the forward GEMM (no promotion, as the sweep) and for
the two backward GEMMs, whose recipes promote (FP8 rate taken at the model's measured
ceiling ratio, mamf-finder without fast accumulation, 1,402.6 / 794.5).

    python benchmarks/fp8_gemm_shape.py [RUN ...]

Runs default to the development rows named in ``DEFAULT_RUNS``; held-out runs are refused.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass

from clusterforge.catalog import load_catalog
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.parallel import tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, gpu_perf
from validation.gemm_rows import load_gemm_rows
from validation.runs import Run, load_runs

SWEEP_M = SWEEP_N = 8192
# K -> milliseconds, FP16 (b2acfc379) and FP8 (6d766a962) tables of tile-ai/tilelang.
SWEEP_BF16_MS = {
    256: 0.089056,
    512: 0.132064,
    1024: 0.218816,
    2048: 0.390112,
    4096: 0.746752,
    8192: 1.449888,
    16384: 2.871168,
}
SWEEP_FP8_MS = {
    256: 0.060352,
    512: 0.080096,
    1024: 0.121696,
    2048: 0.204672,
    4096: 0.374816,
    8192: 0.729664,
    16384: 1.427264,
}
TILE_M, TILE_N = 128, 256
DEFAULT_RUNS = ("pub-tt-asynctp-8b-fp8tw-vanilla", "pub-maxtext-h100-llama3-70b-fp8-128gpu")


@dataclass(frozen=True)
class Fit:
    """``t = flops / rate + waves x wave_s`` of one precision of the sweep."""

    rate_flops_per_s: float
    wave_s: float

    def time_s(self, m: float, n: float, k: float, num_sms: int) -> float:
        return 2.0 * m * n * k / self.rate_flops_per_s + waves(m, n, num_sms) * self.wave_s


def waves(m: float, n: float, num_sms: int) -> int:
    """Waves of ``TILE_M x TILE_N`` output tiles (the better orientation) over the SMs."""
    tiles = min(
        math.ceil(m / TILE_M) * math.ceil(n / TILE_N), math.ceil(m / TILE_N) * math.ceil(n / TILE_M)
    )
    return math.ceil(tiles / num_sms)


def fit_sweep(times_ms: dict[int, float], num_sms: int) -> Fit:
    """Least squares of the sweep's times on its FLOPs (one wave count: M, N fixed)."""
    flops = [2.0 * SWEEP_M * SWEEP_N * k for k in times_ms]
    times = [ms * 1e-3 for ms in times_ms.values()]
    mean_f, mean_t = statistics.fmean(flops), statistics.fmean(times)
    slope = sum((f - mean_f) * (t - mean_t) for f, t in zip(flops, times, strict=True)) / sum(
        (f - mean_f) ** 2 for f in flops
    )
    intercept = mean_t - slope * mean_f
    return Fit(1.0 / slope, intercept / waves(SWEEP_M, SWEEP_N, num_sms))


def h100() -> tuple[GpuPerf, GpuPerf]:
    gpu = load_catalog().gpus["h100-sxm"]
    return gpu_perf(gpu, "bf16"), gpu_perf(gpu, "fp8")


def print_sweep(bf16: Fit, fp8: Fit) -> None:
    p16, p8 = h100()
    print("H800 K sweep (M = N = 8,192): FP8 / BF16 speed, published and as priced (H100)")
    print("      K   BF16 TFLOP/s   FP8 TFLOP/s   published   model")
    for k, ms16 in SWEEP_BF16_MS.items():
        flops = 2.0 * SWEEP_M * SWEEP_N * k
        model = gemm_time_s(SWEEP_M, SWEEP_N, k, p16) / gemm_time_s(SWEEP_M, SWEEP_N, k, p8)
        print(
            f"{k:>7,} {flops / ms16 / 1e9:>14,.0f} {flops / SWEEP_FP8_MS[k] / 1e9:>13,.0f}"
            f" {ms16 / SWEEP_FP8_MS[k]:>11.2f} {model:>7.2f}"
        )
    for name, fit in (("BF16", bf16), ("FP8", fp8)):
        print(
            f"fit {name:<4}: rate {fit.rate_flops_per_s / 1e12:,.0f} TFLOP/s, "
            f"{fit.wave_s * 1e6:.2f} us per wave of {TILE_M} x {TILE_N} tiles"
        )
    print(f"model ceilings: BF16 {p16.matmul_tflops:,.1f}, FP8 {p8.matmul_tflops:,.1f} TFLOP/s")


def layer_gemms(run: Run) -> list[tuple[str, float, float, float]]:
    """(name, m, n, k) of one layer's forward weight GEMMs as ``perf/compute.py`` prices them."""
    arch, plan = run.arch, run.base.with_(micro_batch=min(run.micro_batches))
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    m = tokens_per_gpu(plan)
    up = (2 if arch.gated_mlp else 1) * f / t
    return [
        ("qkv", m, (q_dim(arch) + 2 * kv_dim(arch)) / t, h),
        ("out", m, h, q_dim(arch) / t),
        ("up", m, up, h),
        ("down", m, h, f / t),
    ]


def print_run(run: Run, bf16: Fit, fp8: Fit) -> None:
    """Per GEMM: BF16 / FP8 time ratio as priced, and from the sweep's fit."""
    p16, p8 = h100()
    promoted = Fit(bf16.rate_flops_per_s * p8.matmul_tflops / p16.matmul_tflops, fp8.wave_s)
    print(f"\n{run.name}: BF16 / FP8 time per GEMM (forward shapes)")
    print("  GEMM            m        n        k   model   sweep fwd   sweep bwd")
    sums = [0.0] * 6
    for name, m, n, k in layer_gemms(run):
        times = (
            gemm_time_s(m, n, k, p16),
            gemm_time_s(m, n, k, p8),
            bf16.time_s(m, n, k, p16.num_sms),
            fp8.time_s(m, n, k, p16.num_sms),
            bf16.time_s(m, n, k, p16.num_sms),
            promoted.time_s(m, n, k, p16.num_sms),
        )
        sums = [s + x for s, x in zip(sums, times, strict=True)]
        print(
            f"  {name:<6} {m:>9,.0f} {n:>8,.0f} {k:>8,.0f} {times[0] / times[1]:>7.2f}"
            f" {times[2] / times[3]:>11.2f} {times[4] / times[5]:>11.2f}"
        )
    print(
        f"  layer  {'':>26} {sums[0] / sums[1]:>7.2f} {sums[2] / sums[3]:>11.2f}"
        f" {sums[4] / sums[5]:>11.2f}"
    )


def print_blackwell() -> None:
    """The B200 rows: measured FP8 / BF16 speed against the model's, per shape."""
    rows = {(r.gpu, r.precision, r.m, r.n, r.k, r.batch): r for r in load_gemm_rows()}
    gpu = load_catalog().gpus["b200"]
    p16, p8 = gpu_perf(gpu, "bf16"), gpu_perf(gpu, "fp8")
    quotients = []
    for (gpu_id, precision, m, n, k, batch), row in rows.items():
        twin = rows.get((gpu_id, "bf16", m, n, k, batch))
        if gpu_id != "b200" or precision != "fp8" or twin is None:
            continue
        measured = row.gemm_tflops / twin.gemm_tflops
        model = gemm_time_s(m, n, k, p16, batch) / gemm_time_s(m, n, k, p8, batch)
        quotients.append((measured / model, measured, model, (m, n, k, batch)))
    quotients.sort()
    print("\nB200 (OpenXLA table, 24 shapes): measured FP8 / BF16 speed over the model's")
    print(f"  median {statistics.median(q[0] for q in quotients):.3f}")
    for label, q in (("lowest", quotients[0]), ("highest", quotients[-1])):
        print(f"  {label}: {q[3]} measured {q[1]:.2f}, model {q[2]:.2f}")


def main(names: list[str]) -> None:
    bf16 = fit_sweep(SWEEP_BF16_MS, h100()[0].num_sms)
    fp8 = fit_sweep(SWEEP_FP8_MS, h100()[0].num_sms)
    print_sweep(bf16, fp8)
    runs = {r.name: r for r in load_runs()}
    for name in names or DEFAULT_RUNS:
        run = runs.get(name)
        if run is None or run.subset == "heldout":
            print(f"\n{name}: not a calibration or development run")
            continue
        print_run(run, bf16, fp8)
    print_blackwell()


if __name__ == "__main__":
    main(sys.argv[1:])
