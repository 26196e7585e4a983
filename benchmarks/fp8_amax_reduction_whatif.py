"""What-if: price delayed scaling's amax all-reduce per model chunk in Megatron-Core runs.

A sensitivity probe, not a model change. Megatron-Core (NVIDIA/Megatron-LM 7094270, the NeMo
25.04 recipes' commit) wraps each ``TransformerBlock.forward`` -- one model chunk of one
micro-batch -- in a single ``fp8_autocast`` when the recipe is delayed scaling
(``use_outer_fp8_context``, megatron/core/transformer/transformer_block.py), with
``fp8_group = get_amax_reduction_group(with_context_parallel=True)``: the tensor x data x
context parallel group, every GPU of the pipeline stage (megatron/core/fp8_utils.py,
megatron/core/parallel_state.py). Transformer Engine v2.2 reduces the amaxes of every
delayed-scaling tensor registered under that (recipe, group) key when the outermost autocast
exits (``fp8_autocast_exit`` -> ``reduce_and_update_fp8_tensors(forward=True)``) and again
at the end of the first module's backward (``reduce_and_update_bwd_fp8_tensors``), each time
one ``torch.distributed.all_reduce(MAX)`` of the concatenated amaxes on the stream, then one
fused ``fused_amax_and_scale_update_after_reduction`` kernel
(transformer_engine/pytorch/fp8.py, layernorm_linear.py at tag v2.2).

Priced here: per step, 2 x micro-batches x virtual chunks such all-reduces (the slowest
stage's group, timed by the run's own collective model at the buffer's size, 4 B per amax
of each FP8 tensor of the stage) plus one kernel each, added to the step. Applies to runs
with FP8, delayed scaling and a Megatron-Core stack. Prints per-set and per-class MAPE and
median signed error before and after, and the affected rows (calibration and development
rows only; held-out rows are skipped).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/fp8_amax_reduction_whatif.py
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.roofline import load_constants
from validation.runs import Outcome, load_runs, predict_run, run_comm, run_design

MEGATRON_STACKS = ("nemo", "megatron-core", "megatron-bridge")
# FP8 tensors with an amax per layer in TE's delayed-scaling meta: forward input, weight and
# output of each of the four GEMMs (12), backward grad-output and grad-input (8).
AMAX_TENSORS_PER_LAYER = 20
AMAX_BYTES = 4.0


def amax_reduction_s(o: Outcome) -> float:
    """Seconds per step the delayed-scaling amax reductions add to ``o``'s prediction."""
    p, stack = o.prediction, o.run.stack
    if p is None or p.plan.precision != "fp8" or stack.fp8_scaling != "delayed":
        return 0.0
    if stack.name not in MEGATRON_STACKS:
        return 0.0
    plan = p.plan
    group = plan.layout.groups("tp", stage=0).reshape(1, -1)  # TP x CP x DP of one stage
    if group.shape[1] <= 1:
        return 0.0
    layers = max(p.stage_layers)
    size_bytes = layers * AMAX_TENSORS_PER_LAYER * AMAX_BYTES
    comm = run_comm(run_design(o.run))
    reduce_s = comm.collective_time_s("all_reduce", size_bytes, group)
    kernel_s = load_constants().kernel_overhead_s
    chunks = num_micro_batches(plan) * max(1, plan.layout.vpp)
    return 2 * chunks * (reduce_s + kernel_s)


def _error(o: Outcome, extra_s: float) -> float:
    p = o.prediction
    assert p is not None
    scaled = o.predicted * p.step_time_s / (p.step_time_s + extra_s)
    return (scaled - o.run.published) / o.run.published


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("amax", "ceiling"))
    parser.add_argument("value", nargs="?", default="gb200:2906.9")
    args = parser.parse_args()
    if args.mode == "amax":
        outcomes = _outcomes().values()
        pairs = [(o, o.error, _error(o, amax_reduction_s(o))) for o in outcomes]
    else:
        pairs = _ceiling_pairs(args.value)
    _report(pairs)


if __name__ == "__main__":
    main()
