"""Megatron-FSDP's root module and FP8 shard scales: the model with and without them.

Prints calibration and development without the mechanism (patched out for the run) and
with it (the model as shipped, :mod:`clusterforge.perf.megatron_fsdp`), and every
``zero_stage`` 3 development row of the ``megatron-bridge`` and ``nemo`` stacks. Without
it the model prices Megatron-FSDP (``zero_stage`` 3 on ``megatron-bridge``, no pipelining)
like any per-unit FSDP (:func:`clusterforge.perf.sharded.zero3_exposed_s`): per micro-batch
and transformer layer an all-gather of the FP8 weights before the forward and again before
the backward, a BF16 reduce-scatter after the backward, one unit gathered ahead, and per
micro-batch the embedding's BF16 all-gather and reduce-scatter exposed (``ends``).
Megatron-FSDP as the NeMo 25.11 container runs it (NVIDIA/Megatron-LM at 0d8e0714cd29, the
Megatron-Core pin of NVIDIA-NeMo/Megatron-Bridge v0.2.1;
``megatron/core/distributed/fsdp/mcore_fsdp_adapter.py`` and
``megatron/core/distributed/fsdp/src/megatron_fsdp/``) does the same per layer
(``_pre_forward_param_unshard``, ``_post_forward`` releasing the unit, ``_pre_backward``
re-gathering it, ``_post_backward`` reduce-scattering it every micro-batch because
``grad_reduce_every_bprop`` holds for ``optim_grads_params``), and differs in two places:

* Only ``TransformerLayer`` is an FSDP unit (``fsdp_unit_modules = [TransformerLayer]``
  in ``mcore_fsdp_adapter.py``). The embedding, the output layer and the final norm are
  gathered by their own forward pre-hook (``recurse=False``), are never released during the
  step (``_post_forward`` and the release in ``_post_backward`` act on units only, and
  ``_root_pre_backward`` marks only unit buckets releasable), and ``all_gather_params``
  gathers only buckets that are ``EMPTY``: so they are all-gathered once per step, in BF16,
  while their gradients are reduce-scattered after every micro-batch's backward. With
  untied embeddings the output layer (vocabulary x hidden, as large as the embedding) is a
  second such gather and reduce-scatter: its gather is prefetched in forward order behind
  the last layer's forward, its reduce-scatter runs behind the last layer's backward.
* With FP8 parameters (``fp8_param_gather``, set by Megatron-Bridge's
  ``bf16_with_fp8_current_scaling_mixed``) each step ends by quantizing the FP32 shards to
  FP8 (``quantize_param_shard``, ``megatron_fsdp/utils.py``), which all-reduces (MAX) one
  packed amax per FP8 weight over the data-parallel group: four per layer (QKV, projection,
  FC1, FC2), one call, exposed.

Priced (``Stack.fsdp_root_once_per_step``, ``megatron-bridge``) at ``zero_stage`` 3
without pipelining, for every row: the
embedding gather once per step instead of once per micro-batch, the untied output layer's
gather once per step behind one layer's forward and its reduce-scatter per micro-batch
behind one layer's backward (:func:`~clusterforge.perf.compute.overlapped_s`), and the
amax all-reduce once per step (FP8 only), all at netsim's time for the shard group.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/megatron_fsdp_whatif.py

Calibration and development rows only (never held-out); nothing is refitted.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from clusterforge.perf import sharded, step
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.megatron_fsdp import AMAX_BYTES, FP8_WEIGHTS_PER_LAYER, root_module_delta_s
from clusterforge.perf.parallel import num_micro_batches, shard_groups
from clusterforge.perf.sharded import unit_collectives
from validation.class_errors import fitted_errors
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

__all__ = ["MEGATRON_FSDP_STACKS", "captured_times", "main"]

MEGATRON_FSDP_STACKS = frozenset({"megatron-bridge", "nemo"})
_AS_MODELLED = sharded.zero3_exposed_s
_ROOT = step.root_module_delta_s
Errors = dict[str, tuple[str, str, float]]  # run name -> (subset, class, signed error)


def _without_root(*args: Any, **kwargs: Any) -> float:
    return 0.0


def _summary(errors: Errors, subset: str) -> list[str]:
    by_class: dict[str, list[float]] = defaultdict(list)
    for sub, cls, err in errors.values():
        if sub == subset:
            by_class[cls].append(err)
    every = [e for v in by_class.values() for e in v]
    lines = [
        f"all {len(every)} runs MAPE {100 * statistics.fmean(map(abs, every)):.2f} % "
        f"median {100 * statistics.median(every):+.2f} %"
    ]
    for cls, v in sorted(by_class.items()):
        mape = 100 * statistics.fmean(map(abs, v))
        lines.append(
            f"{cls} {len(v)} runs MAPE {mape:.2f} % median {100 * statistics.median(v):+.1f} %"
        )
    return lines


def _megatron_fsdp_rows() -> list[str]:
    return sorted(
        run.name
        for run in load_runs()
        if run.subset == "development"
        and run.stack.name in MEGATRON_FSDP_STACKS
        and run.base.zero_stage == 3
    )


def captured_times(run: Run) -> LayerTimes:
    """The layer times the model's ZeRO-3 pricing receives for ``run``'s chosen plan."""
    seen: list[LayerTimes] = []

    def record(*args: Any, **kwargs: Any) -> float:
        seen.append(args[4])
        return _AS_MODELLED(*args, **kwargs)

    predict_run.cache_clear()
    step.zero3_exposed_s = record  # type: ignore[attr-defined]
    try:
        predict_run(run)
    finally:
        step.zero3_exposed_s = _AS_MODELLED  # type: ignore[attr-defined]
        predict_run.cache_clear()
    return seen[-1]


def _together_detail() -> None:
    """Per-layer collectives and the priced delta on the Together 70B rows, by GPU count."""
    print("Llama 3 70B Megatron-FSDP on use3a-ss (development), ms per micro-batch and layer:")
    head = f"{'GPUs':>5} {'gather':>7} {'reduce':>7} {'fwd':>6} {'bwd':>6} {'delta/step':>10}"
    print(f"  {head} {'amax AR':>7}")
    for run in load_runs():
        if run.subset != "development" or not run.name.startswith("together-b200-llama3-70b"):
            continue
        pred = predict_run(run).prediction
        assert pred is not None
        plan, arch = pred.plan, run.arch
        comm = run_comm(run_design(run))
        c = unit_collectives(arch, plan, comm, run.stack, layers=arch.num_layers)
        times = captured_times(run)
        layers, micro = arch.num_layers, num_micro_batches(plan)
        delta = root_module_delta_s(
            arch, plan, comm, run.stack, times, layers=layers, num_micro=micro
        )
        amax_bytes = FP8_WEIGHTS_PER_LAYER * layers * AMAX_BYTES
        amax = comm.collective_time_s("all_reduce", amax_bytes, shard_groups(plan)[0])
        print(
            f"  {plan.layout.dp:>5} {c.gather_s * 1e3:7.2f} {c.reduce_s * 1e3:7.2f} "
            f"{times.forward_s * 1e3:6.2f} {times.backward_s * 1e3:6.2f} "
            f"{delta * 1e3:10.2f} {amax * 1e3:7.3f}"
        )


def main() -> None:
    _together_detail()
    after = fitted_errors()
    step.root_module_delta_s = _without_root  # type: ignore[attr-defined]
    try:
        before = fitted_errors()
    finally:
        step.root_module_delta_s = _ROOT  # type: ignore[attr-defined]
        predict_run.cache_clear()
    for subset in ("calibration", "development"):
        print(f"\n{subset}: without -> with the root module and FP8 shard scales")
        for line, moved in zip(_summary(before, subset), _summary(after, subset), strict=True):
            print(f"  {line:<52} -> {moved.split(' runs ')[1]}")
    print("\nzero_stage 3 megatron-bridge / nemo development rows (signed error):")
    for name in _megatron_fsdp_rows():
        if name in before:
            print(f"  {name:<48} {100 * before[name][2]:+6.2f} -> {100 * after[name][2]:+6.2f} %")
        else:
            print(f"  {name:<48} no plan fits")
    print("\nruns moved by 0.1 points or more (calibration and development):")
    for name, (subset, _, old) in before.items():
        new = after[name][2]
        if abs(new - old) >= 0.001:
            print(f"  {subset:<11} {name:<48} {100 * old:+6.2f} -> {100 * new:+6.2f} %")


if __name__ == "__main__":
    main()
