"""What a different GB300 GEMM ceiling would do to the GB300 rows and to every class.

A sensitivity probe, not a model change. GB300 has no published MAMF, so the model takes
``default_mamf_fraction`` of its 2,500 / 5,000 TFLOP/s dense BF16 / FP8 peak (1,950 / 3,900).
This script predicts the calibration and development rows (never the held-out ones) with the
GB300 BF16 and FP8 MAMF set to a named reading, and prints per-class MAPE / median signed
error before and after, plus the GB300 rows and their GB200 twins.

    python benchmarks/gb300_gemm_whatif.py            # the readings below
    python benchmarks/gb300_gemm_whatif.py --scale 1.05,1.10,1.15
        the model's own GB300 ceiling times each factor (sensitivity only)

Readings (none is a primary MAMF; docs/validation.md, "GB300 against GB200 on the same
recipes"):
- ``cfregly``: cfregly/ai-performance-engineering code/docs/gb300-fp8-dual2sm.md
  (2026-06-11, NGC PyTorch 26.05): cuBLAS BF16 1,818.7 TFLOP/s; ``torch._scaled_mm`` FP8 best
  cube 3,807 (8,192^3).
- ``triton2023``: facebookexperimental/triton pull request 2023 (2026-07-14): "cuBLAS GEMM
  ~1600-2174 tflops at 1400 W" on a GB300 with the SM clock locked at 2,070 MHz; precision and
  shape not stated. Taken as BF16 at the top of the range, FP8 at the same share of peak.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace

from benchmarks.hbm_kernel_whatif import compare_outcomes

import clusterforge.perf.roofline as roofline
from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import PerfConstants
from validation.runs import Outcome, load_runs, predict_run

READINGS: dict[str, tuple[float, float]] = {
    "cfregly": (1818.7, 3807.0),
    "triton2023": (2174.0, 2174.0 * 2.0),
}
TWIN_PREFIXES = ("bridge2511-gb300", "bridge2602-gb300", "bridge2511-gb200", "bridge2602-gb200")
_ORIGINAL: Callable[[], PerfConstants] = roofline.load_constants


def _install(loader: Callable[[], PerfConstants]) -> None:
    """Every clusterforge module that reads the constants calls ``loader``."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("clusterforge") and hasattr(module, "load_constants"):
            module.load_constants = loader  # type: ignore[attr-defined]


def _with_gb300_mamf(bf16_tflops: float, fp8_tflops: float) -> Callable[[], PerfConstants]:
    base = _ORIGINAL()
    mamf = dict(base.mamf_tflops)
    mamf[("gb300", "bf16")] = bf16_tflops
    mamf[("gb300", "fp8")] = fp8_tflops
    patched = replace(base, mamf_tflops=mamf)
    return lambda: patched


def _outcomes() -> list[Outcome]:
    predict_run.cache_clear()  # predictions are cached per run; the constants changed
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    return [o for o in map(predict_run, runs) if o.prediction is not None]


def outcomes_with_gb300_mamf(bf16_tflops: float, fp8_tflops: float) -> list[Outcome]:
    """Calibration and development outcomes with GB300's MAMF set; the model's own constants
    (and a fresh prediction cache) are put back afterwards."""
    _install(_with_gb300_mamf(bf16_tflops, fp8_tflops))
    try:
        return _outcomes()
    finally:
        _install(_ORIGINAL)
        predict_run.cache_clear()


def _compare(label: str, before: list[Outcome], after: list[Outcome]) -> None:
    compare_outcomes(label, before, after, lambda o: o.run.name.startswith(TWIN_PREFIXES), width=40)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="", help="factors on the model's GB300 ceiling")
    args = parser.parse_args()
    before = _outcomes()
    cases: dict[str, tuple[float, float]] = dict(READINGS)
    if args.scale:
        perf_peak = load_catalog().gpus["gb300"]
        fraction = _ORIGINAL().default_mamf_fraction
        for factor in (float(f) for f in args.scale.split(",")):
            cases[f"x{factor:.2f}"] = (
                perf_peak.bf16_dense_tflops * fraction * factor,
                perf_peak.fp8_dense_tflops * fraction * factor,
            )
    for label, (bf16, fp8) in cases.items():
        after = outcomes_with_gb300_mamf(bf16, fp8)
        _compare(f"{label} (GB300 MAMF {bf16:,.0f} / {fp8:,.0f} TFLOP/s)", before, after)


if __name__ == "__main__":
    main()
