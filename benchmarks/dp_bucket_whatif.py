"""What-if: Megatron-Core's data-parallel collectives priced bucket by bucket.

Not a model change (``src/`` is untouched). The model prices a Megatron-Core stage's
gradient reduce-scatter (all-reduce without the distributed optimizer) and its parameter
all-gather as one call each over the whole stage (``clusterforge.perf.exposure``
``_dp_traffic_s``), so NCCL's per-call latency is paid once per step. Megatron-Core's
``DistributedDataParallel`` issues one call per bucket: buckets close at ``bucket_size``
parameters, by default ``max(40,000,000, 1,000,000 x DP)`` (``DistributedDataParallel.__init__``
and ``_ParamAndGradBuffer``, NVIDIA/Megatron-LM core_r0.8.0-r0.12; the rule
:func:`clusterforge.perf.param_gather.bucket_params` already uses), and each call pays
NCCL's latency for its group (``ncclTopoTuneModel`` / ``ncclTopoGetAlgoTime``,
NVIDIA/nccl ``src/graph/tuning.cc``: the ring's base latency plus ``nNodes - 1`` network
steps for a reduce-scatter or all-gather, ``2 (nNodes - 1)`` for a ring all-reduce, each at
the network's hardware latency), which grows with the nodes the data-parallel group spans.
Here each of the two collectives is ``ceil(params / bucket)`` calls of a bucket each
(with interleaving, the first model chunk's buckets and one call per later chunk:
:func:`bucket_calls`), the bytes split evenly over the calls, at netsim's time for that
size and group, on the stacks built on Megatron-Core's DDP
(``megatron-core``, ``megatron-bridge``, ``nemo``); the overlap rule is unchanged.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/dp_bucket_whatif.py

Calibration and development rows only (never held-out); nothing is refitted.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from benchmarks.scale_trend import print_trend, twin_groups

from clusterforge.perf import exposure
from clusterforge.perf.comm import CommModel
from clusterforge.perf.parallel import GroupKind, ParallelPlan, rank_groups
from clusterforge.perf.param_gather import bucket_params
from clusterforge.perf.stack import Stack
from validation.class_errors import fitted_errors
from validation.runs import Run, predict_run

__all__ = ["MEGATRON_DDP_STACKS", "bucket_calls", "bucketed_dp_traffic_s", "main"]

MEGATRON_DDP_STACKS = frozenset({"megatron-core", "megatron-bridge", "nemo"})
_ONE_CALL = exposure._dp_traffic_s

Errors = dict[str, tuple[str, str, float]]  # run name -> (subset, class, signed error)


def bucket_calls(params: float, bucket: float, chunks: int = 1) -> int:
    """Calls of one data-parallel collective over ``params`` in buckets of ``bucket``, the
    stage split into ``chunks`` interleaved model chunks of which only the first is bucketed
    (Megatron-LM ``megatron/training/training.py`` ``get_model``:
    ``disable_bucketing=(model_chunk_idx > 0)``, "communication for these model chunks is
    overlapped with compute anyway"): one call for each later chunk."""
    return max(1, math.ceil(params / chunks / bucket)) + chunks - 1


def _calls_s(
    comm: CommModel, kind: str, total_bytes: float, calls: int, groups: np.ndarray
) -> float:
    if total_bytes <= 0.0:
        return 0.0
    return calls * comm.collective_time_s(kind, total_bytes / calls, groups)  # type: ignore[arg-type]


def bucketed_dp_traffic_s(
    plan: ParallelPlan, params: float, comm: CommModel, stack: Stack, kind: GroupKind
) -> tuple[float, float]:
    """``_dp_traffic_s`` with one call per Megatron-Core bucket on Megatron-Core DDP stacks."""
    if stack.name not in MEGATRON_DDP_STACKS:
        return _ONE_CALL(plan, params, comm, stack, kind)
    groups = rank_groups(plan, kind)
    calls = bucket_calls(params, bucket_params(plan), plan.layout.vpp)
    grads = params * stack.grad_reduce_bytes
    if plan.zero_stage == 0:
        return _calls_s(comm, "all_reduce", grads, calls, groups), 0.0
    weights = params * stack.gathered_weight_bytes(plan.precision)
    return (
        _calls_s(comm, "reduce_scatter", grads, calls, groups),
        _calls_s(comm, "all_gather", weights, calls, groups),
    )


def _summary(errors: Errors, subset: str, classes: dict[str, str]) -> str:
    by_class: dict[str, list[float]] = defaultdict(list)
    for name, (sub, _, err) in errors.items():
        if sub == subset:
            by_class[classes[name]].append(err)
    every = [e for v in by_class.values() for e in v]
    cells = "; ".join(
        f"{c} {len(v)} {100 * statistics.fmean(map(abs, v)):.2f} ({100 * statistics.median(v):+.1f})"
        for c, v in sorted(by_class.items())
    )
    mape = 100 * statistics.fmean(map(abs, every))
    return f"{len(every)} runs MAPE {mape:.2f} % median {100 * statistics.median(every):+.2f} % | {cells}"


def _moved(before: Errors, after: Errors) -> None:
    print("\nruns moved by 0.3 points or more (calibration and development):")
    for name, (subset, _, err) in before.items():
        new = after[name][2]
        if abs(new - err) >= 0.003:
            print(f"  {subset:<11} {name:<48} {100 * err:+6.1f} -> {100 * new:+6.1f} %")


def _slopes(title: str, error: Callable[[Run], float]) -> None:
    print_trend(twin_groups(), error, title)


def main() -> None:
    before = fitted_errors()
    _slopes("one call per collective (as modelled)", lambda r: predict_run(r).error)
    exposure._dp_traffic_s = bucketed_dp_traffic_s  # type: ignore[assignment]
    try:
        after = fitted_errors()
        _slopes("one call per Megatron-Core bucket", lambda r: predict_run(r).error)
    finally:
        exposure._dp_traffic_s = _ONE_CALL
        predict_run.cache_clear()
    classes = {name: cls for name, (_, cls, _) in before.items()}
    for subset in ("calibration", "development"):
        print(f"\n{subset}: MAPE, median signed | class runs MAPE (median)")
        print(f"  as modelled {_summary(before, subset, classes)}")
        print(f"  bucketed    {_summary(after, subset, classes)}")
    _moved(before, after)


if __name__ == "__main__":
    main()
