"""What a different per-kernel cost or HBM streaming share would do to every class.

A sensitivity probe, not a model change: it predicts the calibration and development rows
(never the held-out ones) with one of the roofline's memory-side inputs changed, and prints
per-class MAPE / median signed error, per GPU and for the rows named on the command line.

    python benchmarks/hbm_kernel_whatif.py kernel 8e-6
        every kernel costs 8 us instead of ``kernel_overhead_s``
    python benchmarks/hbm_kernel_whatif.py hbm a100-80gb:0.929,h100-sxm:1.019
        each listed GPU streams HBM at that multiple of ``hbm_efficiency`` x datasheet

Used to test whether H100's optimistic eager rows come from a per-kernel device cost or a
lower HBM share on H100 (docs/validation.md, "Memory-bound kernels on H100").
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import clusterforge.perf.roofline as roofline
import clusterforge.perf.step as step
from clusterforge.perf.roofline import GpuPerf, PerfConstants
from validation.runs import Outcome, load_runs, predict_run, run_design


def _patch_kernel(seconds: float) -> None:
    """Every module that reads the constants sees ``kernel_overhead_s = seconds``."""
    patched = replace(roofline.load_constants(), kernel_overhead_s=seconds)

    def constants() -> PerfConstants:
        return patched

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("clusterforge") and hasattr(module, "load_constants"):
            module.load_constants = constants  # type: ignore[attr-defined]


def _patch_hbm(factors: dict[str, float]) -> None:
    """Each GPU id in ``factors`` streams HBM at that multiple of the model's rate."""
    original = step.gpu_perf

    def scaled(gpu, precision, constants=None) -> GpuPerf:  # type: ignore[no-untyped-def]
        perf = original(gpu, precision, constants)
        factor = factors.get(gpu.id, 1.0)
        return replace(perf, hbm_gbyte_per_s=perf.hbm_gbyte_per_s * factor)

    step.gpu_perf = scaled  # type: ignore[assignment]


def _cell(errors: list[float]) -> str:
    mape = statistics.fmean(abs(e) for e in errors) * 100
    return (
        f"n={len(errors):3}  MAPE {mape:5.2f} %  median {statistics.median(errors) * 100:+6.2f} %"
    )


def error_groups(outcomes: list[Outcome]) -> dict[str, list[float]]:
    """Signed errors by set, and the development runs' by class and by GPU."""
    groups: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        if o.run.subset == "calibration":
            groups["set calibration"].append(o.error)
            continue
        groups["set development"].append(o.error)
        groups[f"class {o.run_class}"].append(o.error)
        groups[f"gpu {run_design(o.run).compute.gpu.id}"].append(o.error)
    return groups


def _before_after_cell(errors: list[float]) -> str:
    mape = statistics.fmean(abs(e) for e in errors) * 100
    return f"{mape:5.2f} / {statistics.median(errors) * 100:+6.2f}"


def compare_outcomes(
    label: str,
    before: list[Outcome],
    after: list[Outcome],
    listed: Callable[[Outcome], bool],
    width: int = 40,
) -> None:
    """Print MAPE / median signed error per group before -> after, then each ``listed`` run's
    error before -> after (the what-ifs that patch the model and predict again)."""
    print(f"== {label}: MAPE / median signed %, before -> after")
    old, new = error_groups(before), error_groups(after)
    for name in sorted(old):
        cells = f"{_before_after_cell(old[name])} -> {_before_after_cell(new[name])}"
        print(f"  {name:28} n={len(old[name]):3}  {cells}")
    after_by_name = {o.run.name: o for o in after}
    for o in filter(listed, before):
        new_error = after_by_name[o.run.name].error * 100
        print(f"  {o.run.name:{width}} {o.error * 100:+6.1f} -> {new_error:+6.1f} %")


def _report(outcomes: list[Outcome], rows: list[str]) -> None:
    groups = error_groups(outcomes)
    for name, errors in sorted(groups.items()):
        print(f"  {name:30} {_cell(errors)}")
    for o in outcomes:
        if any(o.run.name.startswith(prefix) for prefix in rows):
            print(f"  {o.run.name:44} {o.error * 100:+6.1f} %")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("kernel", "hbm", "none"))
    parser.add_argument("value", nargs="?", default="")
    parser.add_argument("--rows", default="fms-fsdp-h100,llmfoundry-h100", help="name prefixes")
    args = parser.parse_args()
    if args.mode == "kernel":
        _patch_kernel(float(args.value))
    elif args.mode == "hbm":
        pairs = (item.split(":") for item in args.value.split(","))
        _patch_hbm({gpu: float(f) for gpu, f in pairs})
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    outcomes = [o for o in map(predict_run, runs) if o.prediction is not None]
    _report(outcomes, args.rows.split(","))


if __name__ == "__main__":
    main()
