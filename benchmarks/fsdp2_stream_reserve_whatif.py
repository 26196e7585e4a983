"""What-if: the caching allocator's per-stream pools under FSDP2 (torchtitan memory rows).

The torchtitan rows publish ``max_memory_reserved`` (``reserved_bytes.all.peak``): the
caching allocator's segments, live tensors plus cached free blocks. Read in PyTorch's
``c10/cuda/CUDACachingAllocator.cpp`` (the stored version, pytorch/pytorch@001074d): "Once
freed, blocks can be re-allocated on the same stream, but not on any other stream"; sizes
are rounded to 512 B (``kMinBlockSize``), requests up to 1 MiB go to 2 MiB segments, 1-10 MiB
to 20 MiB segments, larger ones are rounded to 2 MiB (``kRoundLarge``); cached blocks go
back to CUDA only on an allocation failure or ``empty_cache``. FSDP2
(``torch/distributed/_composable/fsdp/``): ``foreach_all_gather`` allocates a unit's
whole all-gather output with ``torch.empty`` inside ``torch.cuda.stream(
all_gather_copy_in_stream)``, so its block lives in that stream's pool, and
``FSDPState._lazy_init`` sets the root unit's ``post_forward_mesh_info = None`` (the root,
torchtitan's embedding, final norm and output layer, is not resharded after the forward).

Terms priced (``Stack.name == "torchtitan"``, ZeRO-3):

A. copy-in pool: the stream's cached block is as large as the largest unit's all-gather
   output, the root's (BF16: torchao's float8 converts the layers' linears only); the
   model's prefetched unit stands for one layer's output in it, so the extra reserve is
   ``2 B x root - gathered B x layer`` per GPU.
B. A + the root's unsharded BF16 parameters, alive from its all-gather at the start of the
   forward to its reshard after the backward (the model counts layer units only; with
   pipeline stages every stage stays gathered and is already counted).
C. B + the reduce-scatter input in the reduce dtype on the reduce-scatter stream's pool, the
   root's, as an earlier FSDP2 allocated it (``foreach_reduce_scatter`` under
   ``torch.cuda.stream(reduce_scatter_stream)``, pytorch/pytorch@01d66d21); v2.5.1 and later
   allocate it on the compute stream, where the next step's activations reuse it, so C is
   an upper bound, not a candidate.

torchtitan 9dec370 launches with ``expandable_segments:True`` (``run_llama_train.sh`` line
22): one segment per stream, the same per-stream rule.

At the rows' release: torch 1963fc83 (2024-12-23) lies between the 2.6.0 and 2.7.0 releases,
whose ``torch/distributed/fsdp/_fully_shard/`` agree on A and B (``foreach_all_gather``
under the copy-in stream, the root's ``post_forward_mesh_info = None``) and allocate the
reduce-scatter input on the compute stream, so C is not what the rows ran
(``benchmarks/allocator_reserve_whatif.py`` and its docs section).

Rounding of the largest transient to 2 MiB is under 0.002 GiB and not priced.

    PYTHONPATH=src:. python benchmarks/fsdp2_stream_reserve_whatif.py
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory

from clusterforge.perf.memory import GIB, MemoryBreakdown, layer_params_per_gpu, memory_per_gpu
from clusterforge.perf.roofline import BF16_BYTES
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design

VARIANTS = ("A", "B", "C")


def root_params_per_gpu(arch: Any, plan: Any) -> float:
    """The root unit's parameters per GPU after TP: embedding, and the output layer
    without pipeline stages (the final norm's few thousand are left out)."""
    embedding = arch.vocab_size * arch.hidden_size / plan.layout.tp
    if plan.layout.pp == 1 and not arch.tied_embeddings:
        return 2.0 * embedding
    return embedding


def stream_terms_gib(arch: Any, plan: Any, stack: Any) -> dict[str, float]:
    """Extra GiB per GPU of terms A (copy-in pool), B (root unsharded), C (reduce-scatter
    pool); all zero outside FSDP2 ZeRO-3."""
    if stack.name != "torchtitan" or plan.zero_stage < 3:
        return {"copy_in": 0.0, "root": 0.0, "rs": 0.0}
    root = root_params_per_gpu(arch, plan)
    layer = layer_params_per_gpu(arch, plan)
    prefetched = stack.gathered_weight_bytes(plan.precision) * layer * min(1, stack.fsdp_prefetch)
    copy_in = max(0.0, BF16_BYTES * max(root, layer) - prefetched)
    unsharded = BF16_BYTES * root if plan.layout.pp == 1 else 0.0
    rs = stack.grad_reduce_bytes * max(root, layer)
    return {"copy_in": copy_in / GIB, "root": unsharded / GIB, "rs": rs / GIB}


def patched(variant: str) -> Callable[[Any, Any, Any, Any], MemoryBreakdown]:
    """``memory_per_gpu`` with the terms of ``variant`` added."""

    def memory(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
        mem = memory_per_gpu(arch, plan, stages, stack)
        t = stream_terms_gib(arch, plan, stack)
        reserve = t["copy_in"] + (t["rs"] if variant == "C" else 0.0)
        weights = t["root"] if variant in ("B", "C") else 0.0
        return replace(
            mem,
            weights_gib=mem.weights_gib + weights,
            reserve_gib=mem.reserve_gib + reserve,
        )

    return memory


def _row_gib(row: Any) -> float | None:
    pred = best_prediction(row.run, run_comm(run_design(row.run)))
    return pred.memory.total_gib if pred is not None else None


def memory_rows() -> None:
    """Per development memory row: published, model, and each variant (GiB and error)."""
    rows = [r for r in load_memory_rows() if r.subset == "development"]
    table: dict[str, list[float | None]] = {"model": [_row_gib(r) for r in rows]}
    for v in VARIANTS:
        with patched_memory(patched(v)):
            table[v] = [_row_gib(r) for r in rows]
    head = "".join(f"{k:>16}" for k in table)
    print(f"  {'memory row (development)':<40} {'GiB':>6}{head}")
    for i, row in enumerate(rows):
        cells = ""
        for values in table.values():
            gib = values[i]
            err = f"{(gib / row.measured_gib - 1) * 100:+5.1f} %" if gib else "no fit"
            cells += f"{gib or 0.0:>7.1f} {err:>8}"
        print(f"  {row.id:<40} {row.measured_gib:>6.1f}{cells}")
    for key, values in table.items():
        errs = [g / r.measured_gib - 1 for g, r in zip(values, rows, strict=True) if g]
        tt = [
            g / r.measured_gib - 1
            for g, r in zip(values, rows, strict=True)
            if g and r.run.stack.name == "torchtitan"
        ]
        print(
            f"  {key:<6} MAPE {statistics.fmean(abs(e) for e in errs) * 100:5.1f} %"
            f"  median signed {statistics.median(errs) * 100:+5.1f} %"
            f"  torchtitan MAPE {statistics.fmean(abs(e) for e in tt) * 100:5.1f} %"
        )


def main() -> None:
    memory_rows()
    print("training runs, model against variant B (plans, fits, MAPE per set and class):")
    compare(nullcontext(), patched_memory(patched("B")))


if __name__ == "__main__":
    main()
