"""MaxText HSDP on A3: the replica all-reduces as XLA's all-reduce combiner merges them.

The development rows of ``pub_maxtext_a3_hsdp.toml`` state
``unrolled_all_reduce_combine_bytes = 1073741824``: MaxText's A3 Llama 2 7B scripts
(AI-Hypercomputer/maxtext ``MaxText/configs/a3/llama_2_7b/{1,4,16}vm.sh`` at efb6d9e4a) run
the layers unrolled (``scan_layers=false``) with
``--xla_gpu_all_reduce_combine_threshold_bytes=1073741824``, so XLA merges the cross-VM
gradient all-reduces of many layers into 1 GiB calls taken in the parameter tree's order
(:mod:`clusterforge.perf.xla_combine`). This prints each such row's merged calls, then the
signed error of every ``maxtext``-stack development run three ways: ``per layer`` (the
setting cleared: one replica all-reduce per layer behind the next layer's backward, the
model before), ``backward`` (merged calls taken in the order the backward produces the
gradients, a contrast: what the combiner would do were the post order the backward's)
and ``tree`` (the model), with the calibration and development summaries of each.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/a3_hsdp_combine.py

Calibration and development rows only (never held-out).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import replace
from functools import partial

from clusterforge.perf import sharded
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.xla_combine import merged_sync_s, stage_calls
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = ["A3_FILE", "VARIANTS", "main", "print_calls", "variant_errors"]

A3_FILE = "pub_maxtext_a3_hsdp.toml"
VARIANTS = ("per layer", "backward", "tree")

Errors = dict[str, tuple[str, str, float]]  # name -> (subset, class, signed error)


def print_calls() -> None:
    """Each A3 HSDP development row's merged replica all-reduces in tree order: bytes,
    tensors, the layers of backward before each can start, and its time."""
    runs = [r for r in load_runs() if r.subset == "development" and r.file.endswith(A3_FILE)]
    for run in sorted(runs, key=lambda r: r.base.layout.num_gpus):
        pred = predict_run(run).prediction
        if pred is None or shard_groups(pred.plan)[1].shape[1] < 2:
            continue
        comm, replicas = run_comm(run_design(run)), shard_groups(pred.plan)[1]
        layers = run.arch.num_layers
        print(f"{run.name}: merged replica all-reduces, tree order")
        for call in stage_calls(run.arch, pred.plan, run.stack, layers):
            ms = 1e3 * comm.collective_time_s("all_reduce", call.size_bytes, replicas)
            print(
                f"  {call.members:3d} tensors {call.size_bytes / 2**20:7.1f} MiB, after "
                f"{call.ready_layers} of {layers} layers' backward, {ms:6.1f} ms"
            )


def _cleared(run: Run) -> Run:
    return replace(run, stack=replace(run.stack, unrolled_all_reduce_combine_bytes=0.0))


def variant_errors(variant: str) -> Errors:
    """Signed error of every calibration and development run under ``variant``."""
    predict_run.cache_clear()
    if variant == "backward":
        sharded.merged_sync_s = partial(merged_sync_s, order="backward")  # type: ignore[assignment]
    out: Errors = {}
    try:
        for run in load_runs():
            if run.subset not in ("calibration", "development"):
                continue
            outcome = predict_run(_cleared(run) if variant == "per layer" else run)
            if outcome.prediction is not None:
                out[run.name] = (run.subset, outcome.run_class, outcome.error)
    finally:
        sharded.merged_sync_s = merged_sync_s  # type: ignore[assignment]
        predict_run.cache_clear()
    return out


def _summary(errors: Errors, subset: str) -> str:
    by_class: dict[str, list[float]] = defaultdict(list)
    for sub, cls, err in errors.values():
        if sub == subset:
            by_class[cls].append(err)
    every = [e for v in by_class.values() for e in v]
    cells = "; ".join(
        f"{c} {len(v)} {100 * statistics.fmean(map(abs, v)):.2f} ({100 * statistics.median(v):+.1f})"
        for c, v in sorted(by_class.items())
    )
    mape = 100 * statistics.fmean(map(abs, every))
    head = f"{len(every)} runs MAPE {mape:.2f} % median {100 * statistics.median(every):+.2f} %"
    return f"{head}\n      {cells}"


def main() -> None:
    print_calls()
    results = {v: variant_errors(v) for v in VARIANTS}
    base = results["tree"]
    print("\nmaxtext-stack development runs, signed error: " + " / ".join(VARIANTS))
    for name, (subset, cls, _) in sorted(base.items()):
        if subset == "development" and "maxtext" in name:
            row = " / ".join(f"{100 * r[name][2]:+6.1f}" for r in results.values())
            print(f"  {name:<48} {cls:<16} {row} %")
    for subset in ("calibration", "development"):
        print(f"\n{subset}: MAPE, median signed | class runs MAPE (median)")
        for label, errs in results.items():
            print(f"  {label:<10} {_summary(errs, subset)}")


if __name__ == "__main__":
    main()
