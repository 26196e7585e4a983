"""A fixed time per wave of GEMM output tiles on every GPU: the fit and what it would do.

A what-if, not a model change (docs/validation.md, "A fixed time per GEMM wave on every
GPU"). Each GEMM would take

    t = max(FLOPs / (share x MAMF x eta_shape) + waves x t_wave, bytes / HBM) + t_kernel

with ``waves`` the waves of output tiles (``roofline.gemm_waves``), ``t_kernel``
the per-kernel floor (``kernel_overhead_s``), and the Hopper FP8 epilogue term dropped (a
fixed time per wave that FP8 does not shorten is that store). ``t_wave`` per GPU and precision
is fitted on the calibration GEMM microbenchmarks (``validation/gemm_microbench.toml``):
least squares of the relative error of ``t_meas - floor = ideal / share + waves x t_wave``.

    python benchmarks/gemm_wave_whatif.py fit
        per GPU and precision: share, t_wave and the rows' MAPE, with the floor held at
        kernel_overhead_s, with a free intercept, with none; and the rows' MAPE today
    python benchmarks/gemm_wave_whatif.py predict H100_SHARE [--no-floor]
        the calibration and development runs (never held-out) with the per-wave time, the
        H100 share at H100_SHARE and the Blackwell shares re-derived from it by the rule of
        validation/gemm_rows.py (microbenchmark share x step factor, each row's per-wave time
        and floor taken out). ``--no-floor``: t_wave fitted without the floor (t_wave absorbs
        it) and the rows' floor not taken out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace

import numpy as np

import clusterforge.perf.roofline as roofline
from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, PerfConstants
from validation.gemm_rows import STEP_FACTOR_GPU, GemmRow, load_gemm_rows

# (GPU, precision) of the fitted rows; GPUs that borrow another's t_wave; FP8 on Hopper.
FITTED = (("h100-sxm", "bf16"), ("b200", "bf16"), ("b200", "fp8"), ("b300", "bf16"))
BORROW = {"h200-sxm": "h100-sxm", "gb200": "b200", "b300": "b200", "gb300": "b200"}
# No usable H100 FP8 rows: the BF16 value times the FP8 / BF16 per-wave ratio of tilelang's
# H800 K sweep (benchmarks/fp8_gemm_shape.py: 16 waves; intercepts 41.1 and 33.9 us less the
# 4 us floor, 2.32 and 1.87 us, ratio 0.805; without the floor 2.57 and 2.12 us, 0.825).
HOPPER_FP8_RATIO = {True: 0.805, False: 0.825}
BLACKWELL_SHARES = {"b200": "b200", "gb200": "b200", "b300": "b300", "gb300": "b300"}


def row_terms(row: GemmRow) -> tuple[float, int, float]:
    """(time at a share of 1 without per-wave time, waves, measured time) of one row, s."""
    perf = roofline.gpu_perf(load_catalog().gpus[row.gpu], row.precision)
    flops = 2.0 * row.m * row.n * row.k * row.batch
    efficiency = roofline.gemm_shape_efficiency(row.m, row.n, row.k, perf, row.batch)
    return (
        flops / (perf.matmul_tflops * 1e12 * efficiency),
        roofline.gemm_waves(row.m, row.n, row.k, perf, row.batch),
        flops / (row.gemm_tflops * 1e12),
    )


def fit(
    terms: list[tuple[float, int, float]], floor_s: float, intercept: bool = False
) -> tuple[float, float, float, float]:
    """(share, t_wave, intercept, MAPE of the rows) by least squares of the relative error of
    ``t - floor = ideal / share + waves x t_wave [+ intercept]``."""
    columns = [[ideal, count] + ([1.0] if intercept else []) for ideal, count, _ in terms]
    a = np.array(columns)
    t = np.array([measured - floor_s for *_, measured in terms])
    weight = 1.0 / np.array([measured for *_, measured in terms])
    x = np.linalg.lstsq(a * weight[:, None], t * weight, rcond=None)[0]
    mape = float(np.mean(np.abs(a @ x - t) * weight))
    return 1.0 / float(x[0]), float(x[1]), float(x[2]) if intercept else 0.0, mape


def rows_of(gpu: str, precision: str) -> list[GemmRow]:
    return [
        r
        for r in load_gemm_rows()
        if r.gpu == gpu and r.precision == precision and r.subset == "calibration"
    ]


def today_mape(gpu: str, precision: str) -> float:
    """MAPE of the rows as the model prices them today: their median share, no wave time."""
    terms = [row_terms(r) for r in rows_of(gpu, precision)]
    share = statistics.median(ideal / measured for ideal, _, measured in terms)
    return statistics.fmean(abs(ideal / share / measured - 1) for ideal, _, measured in terms)


def wave_table(with_floor: bool) -> dict[tuple[str, str], float]:
    """t_wave in s per (GPU, precision): fitted, borrowed, Hopper FP8 from the sweep ratio."""
    floor_s = roofline.load_constants().kernel_overhead_s if with_floor else 0.0
    fitted = {key: fit([row_terms(r) for r in rows_of(*key)], floor_s)[1] for key in FITTED}
    fitted[("h100-sxm", "fp8")] = fitted[("h100-sxm", "bf16")] * HOPPER_FP8_RATIO[with_floor]
    for gpu, source in BORROW.items():
        for precision in ("bf16", "fp8"):
            fitted[(gpu, precision)] = fitted[(source, precision)]
    return fitted


def print_fit() -> None:
    floor_s = roofline.load_constants().kernel_overhead_s
    print("GPU       prec rows  today MAPE | floor 4 us: share t_wave MAPE | free intercept:")
    for gpu, precision in FITTED:
        terms = [row_terms(r) for r in rows_of(gpu, precision)]
        held, free, none = fit(terms, floor_s), fit(terms, 0.0, True), fit(terms, 0.0)
        print(
            f"{gpu:<9} {precision:<4} {len(terms):>4} {today_mape(gpu, precision):>8.1%}"
            f"   | {held[0]:.3f} {held[1] * 1e6:5.2f} us {held[3]:5.1%}"
            f" | {free[0]:.3f} {free[1] * 1e6:5.2f} us + {free[2] * 1e6:5.2f} us {free[3]:5.1%}"
            f" | none: {none[0]:.3f} {none[1] * 1e6:5.2f} us {none[3]:5.1%}"
        )


def microbench_share(gpu: str, table: dict[tuple[str, str], float], floor_s: float) -> float:
    """Median share of the GPU's BF16 rows with their per-wave time and floor taken out."""
    wave_s = table[(gpu, "bf16")]
    terms = [row_terms(r) for r in rows_of(gpu, "bf16")]
    return statistics.median(ideal / (t - n * wave_s - floor_s) for ideal, n, t in terms)


def patched_constants(h100_share: float, with_floor: bool) -> PerfConstants:
    """The constants with the H100 / H200 share set and the Blackwell shares re-derived."""
    c = roofline.load_constants()
    table = wave_table(with_floor)
    floor_s = c.kernel_overhead_s if with_floor else 0.0
    step = h100_share / microbench_share(STEP_FACTOR_GPU, table, floor_s)
    sustained = dict(c.sustained_gemm_of_mamf, **{"h100-sxm": h100_share, "h200-sxm": h100_share})
    lone = dict(c.gemm_microbench_share)
    for gpu, source in BLACKWELL_SHARES.items():
        lone[gpu] = microbench_share(source, table, floor_s)
        sustained[gpu] = round(lone[gpu] * step, 2)
    print(f"step factor {step:.3f}; shares " + ", ".join(f"{g} {sustained[g]:.2f}" for g in lone))
    return replace(c, sustained_gemm_of_mamf=sustained, gemm_microbench_share=lone)


def wave_gemm_time_s(
    m: float,
    n: float,
    k: float,
    perf: GpuPerf,
    batch: float,
    output_bytes: float,
    constants: PerfConstants,
    wave_s: float,
) -> float:
    """``roofline.gemm_time_s`` with ``wave_s`` per wave in place of the FP8 epilogue term."""
    flops = 2.0 * m * n * k * batch
    num_bytes = (BF16_BYTES * (m * k + k * n) + output_bytes * m * n) * batch
    efficiency, split, count = 1.0, 1, 0
    if perf.num_sms > 0 and m > 0 and n > 0:
        efficiency, split, count = roofline._tiling(m, n, k, perf, batch)
    num_bytes += 2 * 4 * m * n * batch * (split - 1)
    rate = perf.matmul_tflops * 1e12 * perf.gemm_efficiency
    compute_s = flops / (rate * efficiency) + count * wave_s
    memory_s = num_bytes / (perf.hbm_gbyte_per_s * 1e9 * constants.hbm_efficiency)
    return max(compute_s, memory_s) + constants.kernel_overhead_s


def patch_model(constants: PerfConstants, table: dict[tuple[str, str], float]) -> None:
    """Every clusterforge module sees ``constants`` and the per-wave ``gemm_time_s``."""

    def gemm_time_s(
        m: float,
        n: float,
        k: float,
        perf: GpuPerf,
        batch: float = 1.0,
        *,
        output_bytes: float = BF16_BYTES,
    ) -> float:
        fp8 = perf.matmul_tflops > perf.bf16_matmul_tflops > 0
        wave_s = table.get((perf.gpu_id, "fp8" if fp8 else "bf16"), 0.0)
        return wave_gemm_time_s(m, n, k, perf, batch, output_bytes, constants, wave_s)

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if not name.startswith("clusterforge"):
            continue
        if hasattr(module, "load_constants"):
            module.load_constants = lambda: constants  # type: ignore[attr-defined]
        if hasattr(module, "gemm_time_s"):
            module.gemm_time_s = gemm_time_s  # type: ignore[attr-defined]


def print_predictions() -> None:
    """Per set, class and GPU: MAPE and median signed error of the runs (no held-out)."""
    from validation.runs import load_runs, predict_run, run_design

    groups: dict[str, list[float]] = {}
    for run in load_runs():
        if run.subset not in ("calibration", "development"):
            continue
        outcome = predict_run(run)
        if outcome.prediction is None:
            continue
        gpu = run_design(run).compute.gpu.id
        keys = [f"set {run.subset}", f"{run.subset[:3]} gpu {gpu}"]
        if run.subset == "development":
            keys.append(f"class {outcome.run_class}")
        for key in keys:
            groups.setdefault(key, []).append(outcome.error)
    for key, errors in sorted(groups.items()):
        mape = statistics.fmean(abs(e) for e in errors)
        print(
            f"  {key:28} n={len(errors):3}  MAPE {mape:6.1%}  median {statistics.median(errors):+6.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("fit", "predict", "today"))
    parser.add_argument("h100_share", nargs="?", type=float, default=0.79)
    parser.add_argument("--no-floor", action="store_true")
    args = parser.parse_args()
    if args.mode == "fit":
        print_fit()
        return
    if args.mode == "predict":
        with_floor = not args.no_floor
        table = wave_table(with_floor)
        print("t_wave " + ", ".join(f"{g} {p} {s * 1e6:.2f} us" for (g, p), s in table.items()))
        patch_model(patched_constants(args.h100_share, with_floor), table)
    print_predictions()


if __name__ == "__main__":
    main()
