"""DeepSpeed ZeRO-3's peak on the ml-engineering DeepSpeed rows: the model against the model
before the December 3 DeepSpeed ZeRO-3 peak change, and with only part of it.

The change (adopted; docs/validation.md, "DeepSpeed ZeRO-3 at peak"):

- ``bucket``: DeepSpeed v0.19.2 (deepspeedai/DeepSpeed b919284a)
  ``deepspeed/runtime/zero/stage3.py`` ``__add_grad_to_ipg_bucket`` (lines 1381-1404) copies
  each gradient into the contiguous bucket as its hook fires and points ``param.grad.data``
  at the copy, so the model's "one gathered unit's unsharded gradient" (``max(layer,
  fsdp_unit_params)`` x ``grad_buffer_bytes``, 0.81 GiB for a Llama 3.1 8B layer) counted
  the bucket's bytes twice; outside the bucket is only the fresh BF16 gradient of the
  weight whose hook runs, at most the layer's largest (4096 x 14336, 0.11 GiB);
- ``liger``: ``Stack.liger_kernels`` (``clusterforge.perf.liger_memory``): Liger-Kernel
  0.8.0's fused linear cross-entropy as the loss transient, and the recomputed layer's
  incoming and down-projection input gradients beside its recomputed activations.

Variants: ``before`` (both undone), ``bucket only`` (Liger off), ``model`` (both). Prints
the development memory rows' MAPE per variant, then the memory rows and the training runs
whose plan or fit changes, ``before`` against the model. Held-out rows are not predicted.

    PYTHONPATH=src:. python benchmarks/deepspeed_zero3_peak_whatif.py
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory

from clusterforge.perf.memory import (
    GIB,
    MemoryBreakdown,
    layer_matmul_shapes,
    layer_params_per_gpu,
    memory_per_gpu,
)
from clusterforge.perf.roofline import BF16_BYTES
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design

MemoryFn = Callable[[Any, Any, Any, Any], MemoryBreakdown]


def _bucket_delta_bytes(arch: Any, plan: Any, stack: Any) -> float:
    """What the bucket change did: the largest fresh BF16 gradient in, the unit's out."""
    if plan.zero_stage < 3 or stack.zero3_reduce_bucket_params <= 0:
        return 0.0
    if stack.pipelined_fsdp_no_sync and plan.layout.pp > 1:
        return 0.0
    unit = max(layer_params_per_gpu(arch, plan), stack.fsdp_unit_params)
    counted = unit * (stack.unit_grad_bytes or stack.grad_buffer_bytes)
    largest = max(cols * inner for cols, inner in layer_matmul_shapes(arch, plan))
    return BF16_BYTES * largest - counted


def _bucket_only(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    return memory_per_gpu(arch, plan, stages, replace(stack, liger_kernels=False))


def _before(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    mem = _bucket_only(arch, plan, stages, stack)
    delta = _bucket_delta_bytes(arch, plan, stack)
    return replace(mem, weights_gib=mem.weights_gib - delta / GIB)


def _memory_mape(label: str, memory: MemoryFn) -> None:
    """The development memory rows' errors and MAPE, overall and for the DeepSpeed file."""
    errors: dict[str, float] = {}
    with patched_memory(memory):
        for row in load_memory_rows():
            if row.subset != "development":
                continue
            pred = best_prediction(row.run, run_comm(run_design(row.run)))
            if pred is not None:
                errors[row.id] = pred.memory.total_gib / row.measured_gib - 1.0
    mleng = {k: v for k, v in errors.items() if k.startswith("mem-mleng-zero3")}
    signed = "  ".join(
        f"{k.removeprefix('mem-mleng-zero3-')} {v * 100:+5.1f} %" for k, v in mleng.items()
    )
    all_mape = statistics.fmean(abs(e) for e in errors.values()) * 100
    ds_mape = statistics.fmean(abs(e) for e in mleng.values()) * 100
    print(
        f"{label:<12} memory dev MAPE {all_mape:5.2f} % ({len(errors)} rows), "
        f"DeepSpeed {ds_mape:5.2f} %"
    )
    print(f"{'':<12} {signed}")


def main() -> None:
    variants: dict[str, MemoryFn] = {
        "before": _before,
        "bucket only": _bucket_only,
        "model": memory_per_gpu,
    }
    for label, memory in variants.items():
        _memory_mape(label, memory)
    print("\nthroughput and memory rows, before -> model:")
    compare(patched_memory(_before), nullcontext())


if __name__ == "__main__":
    main()
