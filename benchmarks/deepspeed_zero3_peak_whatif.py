"""What-if: DeepSpeed ZeRO-3's peak without the double-counted unit gradient, with and
without Liger's fused linear cross-entropy (the ml-engineering DeepSpeed rows).

DeepSpeed v0.19.2 (deepspeedai/DeepSpeed b919284a) ``deepspeed/runtime/zero/stage3.py``
``__add_grad_to_ipg_bucket`` (lines 1381-1404): with ``contiguous_gradients`` each gradient,
as its hook fires, is copied into the contiguous bucket (``bucket.buffer.narrow(...)
.copy_(param.grad)``), the fresh tensor is handed back to the allocator on the compute
stream (``record_stream``) and ``param.grad.data`` points at the copy. The bucket (lines
626-630, ``reduce_bucket_size`` elements) is already counted (``_reduce_bucket_bytes``), so
the model's "one gathered unit's unsharded gradient" (``_gathered_bytes``: ``max(layer,
fsdp_unit_params)`` parameters x ``grad_buffer_bytes``, 0.81 GiB for a Llama 3.1 8B layer)
counts the same bytes twice; outside the bucket is only the fresh BF16 gradient of the
parameter whose hook is running, at most the layer's largest weight (a 4096 x 14336 MLP
matrix, 0.11 GiB). The output layer's gradient (128256 x 4096 = 5.25e8 elements, more than
``reduce_bucket_size`` 5e8) is not copied (the ``<= self.reduce_bucket_size`` test) and is
reduced when the next gradient arrives (``reduce_independent_p_g_buckets_and_remove_grads``),
before the first layer's recomputation; under Liger it is ``grad_weight`` itself, which the
Liger variant prices at the loss.

Variants, each against the model as it is:

- ``bucket``: the unit gradient replaced by the largest single weight's BF16 gradient;
- ``bucket+liger``: that, and Liger's loss transient of ``liger_flce_memory_whatif.py``
  (liger-kernel 0.8.0; the rows' training script, stas00/ml-engineering 380e078a
  ``insights/when-to-upgrade-gpus/benchmark.py``, builds the model with
  ``AutoLigerKernelForCausalLM`` and ``USE_LIGER = 1`` by default);
- ``bucket+liger+grads``: that, and the gradients the recomputed layer's backward holds at
  its peak beside the recomputed activations: the incoming gradient of the layer's output
  (BF16, ``h`` per token) and, at the down projection's backward, the gradient of its input
  (BF16, ``ffn`` per token), formed while the saved gate, up and SwiGLU outputs are still
  alive; Liger 0.8.0's SwiGLU backward then writes its two gradients into the saved gate
  and up tensors (linkedin/Liger-Kernel v0.8.0 c4b16d43
  ``src/liger_kernel/ops/swiglu.py`` ``_swiglu_backward_kernel``: ``tl.store(a_ptr ...,
  da_row)``, ``tl.store(b_ptr ..., db_row)``), so nothing larger follows.

Model unchanged.

    PYTHONPATH=src:. python benchmarks/deepspeed_zero3_peak_whatif.py
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.liger_flce_memory_whatif import _liger_bytes
from benchmarks.liger_flce_memory_whatif import _patched as liger_patched
from benchmarks.memory_whatif_common import compare, patched_memory

from clusterforge.perf.flops import ffn_size
from clusterforge.perf.memory import (
    GIB,
    MemoryBreakdown,
    activation_bytes_per_layer,
    layer_matmul_shapes,
    layer_params_per_gpu,
    memory_per_gpu,
)
from clusterforge.perf.roofline import BF16_BYTES
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design

MemoryFn = Callable[[Any, Any, Any, Any], MemoryBreakdown]


def _unit_gradient_delta_bytes(arch: Any, plan: Any, stack: Any) -> float:
    """The model's unit gradient taken out, the largest fresh BF16 gradient put in."""
    if stack.name != "deepspeed" or plan.zero_stage < 3 or stack.zero3_reduce_bucket_params <= 0:
        return 0.0
    if plan.layout.pp > 1:
        return 0.0
    unit = max(layer_params_per_gpu(arch, plan), stack.fsdp_unit_params)
    counted = unit * (stack.unit_grad_bytes or stack.grad_buffer_bytes)
    largest = max(cols * inner for cols, inner in layer_matmul_shapes(arch, plan))
    return BF16_BYTES * largest - counted


def _with_bucket(memory: MemoryFn) -> MemoryFn:
    def patched(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
        mem = memory(arch, plan, stages, stack)
        delta = _unit_gradient_delta_bytes(arch, plan, stack)
        return replace(mem, weights_gib=mem.weights_gib + delta / GIB)

    return patched


def _with_layer_grads(memory: MemoryFn) -> MemoryFn:
    """The recomputed layer's incoming and down-projection input gradients added to its
    transient, where the layer (not the loss) sets the peak."""

    def patched(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
        mem = memory(arch, plan, stages, stack)
        if stack.name != "deepspeed" or plan.recompute != "full" or plan.layout.pp > 1:
            return mem
        tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
        layer = activation_bytes_per_layer(arch, plan.with_(recompute="none"), stack)
        grads = BF16_BYTES * tokens * (arch.hidden_size + ffn_size(arch) / plan.layout.tp)
        loss = _liger_bytes(arch, plan)
        delta = max(layer + grads, loss) - max(layer, loss)
        return replace(mem, activations_gib=mem.activations_gib + delta / GIB)

    return patched


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
        f"{label:<20} memory dev MAPE {all_mape:5.2f} % ({len(errors)} rows), DeepSpeed {ds_mape:5.2f} %"
    )
    print(f"{'':<20} {signed}")


def main() -> None:
    variants: dict[str, MemoryFn] = {
        "model": memory_per_gpu,
        "bucket": _with_bucket(memory_per_gpu),
        "bucket+liger": _with_bucket(liger_patched),
        "bucket+liger+grads": _with_layer_grads(_with_bucket(liger_patched)),
        "liger": liger_patched,
    }
    for label, memory in variants.items():
        _memory_mape(label, memory)
    for label in ("bucket", "bucket+liger", "bucket+liger+grads"):
        print(f"\nthroughput and memory rows, model -> {label}:")
        compare(nullcontext(), patched_memory(variants[label]))


if __name__ == "__main__":
    main()
