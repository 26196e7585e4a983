"""Delayed scaling's amax all-reduces (adopted) against the model without them, and a what-if
on the FP8 GEMM ceiling.

``amax``: the model prices, per micro-batch and model chunk, Transformer Engine's blocking
amax all-reduce over the stage's TP x DP x CP GPUs after the chunk's forward and after its
backward, with the fused scale update (:mod:`clusterforge.perf.fp8_amax`, read at
NVIDIA/TransformerEngine v2.2 and NVIDIA/Megatron-LM 7094270). This mode prints the
per-set and per-class MAPE and median signed error without the mechanism (it monkeypatched
to zero here) and with it (the model as it stands), then the rows it moves.

``ceiling``: a sensitivity probe, not a model change: each listed GPU's FP8 GEMM ceiling
(``gpu:tflops,...``) replaced.

Calibration and development rows only; held-out rows are skipped.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/fp8_amax_reduction_whatif.py amax
    PYTHONPATH=$PWD/src:$PWD python benchmarks/fp8_amax_reduction_whatif.py ceiling gb200:2906.9
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from clusterforge.perf import step
from clusterforge.perf.roofline import load_constants
from validation.runs import Outcome, load_runs, predict_run


def _cell(errors: list[float]) -> str:
    mape = statistics.fmean(abs(e) for e in errors) * 100
    return (
        f"n={len(errors):3}  MAPE {mape:5.2f} %  median {statistics.median(errors) * 100:+6.2f} %"
    )


def _outcomes() -> dict[str, Outcome]:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    predict_run.cache_clear()
    return {o.run.name: o for o in map(predict_run, runs) if o.prediction is not None}


def _keys(o: Outcome) -> list[str]:
    if o.run.subset == "calibration":
        return ["set calibration"]
    return ["set development", f"class {o.run_class}"]


def _report(pairs: list[tuple[Outcome, float, float]]) -> None:
    """Per set and class before / after, then every row whose error moved."""
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    for o, old, new in pairs:
        for key in _keys(o):
            before[key].append(old)
            after[key].append(new)
    for key in sorted(before):
        print(f"  {key:26} before {_cell(before[key])}   after {_cell(after[key])}")
    for o, old, new in pairs:
        if abs(new - old) > 5e-4:
            print(f"  {o.run.name:52} {old * 100:+6.1f} -> {new * 100:+6.1f} %")


def _ceiling_pairs(spec: str) -> list[tuple[Outcome, float, float]]:
    """Errors with each listed GPU's FP8 GEMM ceiling (``gpu:tflops,...``) replaced."""
    base = _outcomes()
    mamf = load_constants().mamf_tflops  # the cached constants every module reads
    saved = dict(mamf)
    for item in spec.split(","):
        gpu, tflops = item.split(":")
        mamf[(gpu, "fp8")] = float(tflops)
    try:
        moved = _outcomes()
    finally:
        mamf.clear()
        mamf.update(saved)
        predict_run.cache_clear()
    return [(o, o.error, moved[name].error) for name, o in base.items() if name in moved]


def _without_amax_pairs() -> list[tuple[Outcome, float, float]]:
    """(outcome, error without the amax reductions, error with them) per row."""
    adopted = _outcomes()
    saved = step.amax_reduction_s
    step.amax_reduction_s = lambda *args, **kwargs: 0.0  # type: ignore[assignment]
    try:
        without = _outcomes()
    finally:
        step.amax_reduction_s = saved
        predict_run.cache_clear()
    return [(o, without[name].error, o.error) for name, o in adopted.items() if name in without]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("amax", "ceiling"))
    parser.add_argument("value", nargs="?", default="gb200:2906.9")
    args = parser.parse_args()
    pairs = _without_amax_pairs() if args.mode == "amax" else _ceiling_pairs(args.value)
    _report(pairs)


if __name__ == "__main__":
    main()
