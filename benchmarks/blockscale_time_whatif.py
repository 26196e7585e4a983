"""What-if: the NVFP4 GEMM rate of the block-scaled rows, bracketed.

A sensitivity probe, not a model change. The model prices an NVFP4 GEMM at the FP8 ceiling's
share of the FP8 peak applied to the FP4 peak (``clusterforge.perf.roofline.gpu_perf``): the
FP4 / FP8 dense-peak ratio of the catalog, 2.0 on B200 and GB200 (9,000 / 4,500 and 10,000 /
5,000 TFLOP/s) and about 3.0 on B300 and GB300 (13,125 / 4,500 and 15,000 / 5,000). No
primary measured NVFP4 GEMM figure was read for these parts (docs/validation.md, "Step time
of MXFP8 and NVFP4 runs"), so this script predicts the calibration and development rows
(never the held-out ones) with the NVFP4 speed-up over the FP8 ceiling capped at a factor,
and prints per set, class and GPU the MAPE / median signed error before and after, plus
every block-scaled development row.

    PYTHONPATH=src:. python benchmarks/blockscale_time_whatif.py
    PYTHONPATH=src:. python benchmarks/blockscale_time_whatif.py --caps 2.0,1.5,1.0

Caps: ``2.0`` leaves B200 / GB200 as the model has them and brings B300 / GB300 down to the
same ratio; ``1.0`` prices NVFP4 GEMMs at the FP8 rate (the lower bound: no FP4 speed-up at
all, only the model's quantize passes and smaller operands remain).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from benchmarks.hbm_kernel_whatif import compare_outcomes

import clusterforge.perf.roofline as roofline
from clusterforge.catalog import Gpu
from clusterforge.perf.roofline import GpuPerf, PerfConstants
from validation.runs import Outcome, load_runs, predict_run

_ORIGINAL = roofline.gpu_perf


def _capped(cap: float) -> Callable[..., GpuPerf]:
    """``gpu_perf`` with the FP4 peak at most ``cap`` times the FP8 peak."""

    def gpu_perf(gpu: Gpu, precision: str, constants: PerfConstants | None = None) -> GpuPerf:
        if precision == "nvfp4" and gpu.fp4_dense_tflops > cap * gpu.fp8_dense_tflops:
            gpu = gpu.model_copy(update={"fp4_dense_tflops": cap * gpu.fp8_dense_tflops})
        return _ORIGINAL(gpu, precision, constants)

    return gpu_perf


def _install(function: Callable[..., GpuPerf]) -> None:
    """Every clusterforge module that imported ``gpu_perf`` calls ``function``."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("clusterforge") and hasattr(module, "gpu_perf"):
            module.gpu_perf = function  # type: ignore[attr-defined]


def _outcomes() -> list[Outcome]:
    predict_run.cache_clear()  # predictions are cached per run; the rates changed
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    return [o for o in map(predict_run, runs) if o.prediction is not None]


def outcomes_with_cap(cap: float) -> list[Outcome]:
    """Calibration and development outcomes under the cap; the model's own function (and a
    fresh prediction cache) are put back afterwards."""
    _install(_capped(cap))
    try:
        return _outcomes()
    finally:
        _install(_ORIGINAL)
        predict_run.cache_clear()


def _compare(label: str, before: list[Outcome], after: list[Outcome]) -> None:
    compare_outcomes(
        label,
        before,
        after,
        lambda o: o.run.subset == "development" and o.run.base.precision == "nvfp4",
        width=60,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--caps", default="2.0,1.5,1.0", help="FP4 / FP8 peak caps")
    args = parser.parse_args()
    before = _outcomes()
    for cap in (float(c) for c in args.caps.split(",")):
        _compare(f"NVFP4 at most {cap:.2f} x the FP8 ceiling", before, outcomes_with_cap(cap))


if __name__ == "__main__":
    main()
