"""Before/after: FSDP2's root unit in the memory model (adopted), and the reduce-scatter pool.

The torchtitan rows publish ``max_memory_reserved`` (``reserved_bytes.all.peak``): the
caching allocator's segments, live tensors plus cached free blocks. The model prices, where
``Stack.fsdp2_root_unit`` says so (torchtitan; AutoModel's dense models) under ZeRO-3, the
root unit (embedding, final norm, output layer) kept unsharded from the forward to the end
of the backward and its all-gather block cached in the copy-in stream's pool (:mod:`clusterforge.perf.fsdp2_memory`,
read at torch 2.6.0 and 2.7.0, ``torch/distributed/fsdp/_fully_shard/``, which bracket the
rows' torch 1963fc83). This script compares the model with those terms turned off
(``before``) against the model (``adopted``), per development memory row and for every
calibration and development training run.

``C`` stays a what-if on top of the adopted model: the root's reduce-scatter input in the
reduce dtype cached on the reduce-scatter stream's pool, as an earlier FSDP2 allocated it
(``foreach_reduce_scatter`` under ``torch.cuda.stream(reduce_scatter_stream)``,
pytorch/pytorch@01d66d21). torch 2.6.0 and 2.7.0 allocate it on the compute stream
(``foreach_reduce``, ``_fsdp_collectives.py`` line 371 / 391), so C is not what the rows ran
and is printed as an upper bound only.

    PYTHONPATH=src:. python benchmarks/fsdp2_stream_reserve_whatif.py
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory, variant_table

from clusterforge.perf.fsdp2_memory import root_unit_applies, root_unit_params
from clusterforge.perf.memory import GIB, MemoryBreakdown, layer_params_per_gpu, memory_per_gpu

VARIANTS = ("before", "adopted", "C")


def reduce_scatter_pool_gib(arch: Any, plan: Any, stack: Any) -> float:
    """Variant C's extra GiB per GPU: the largest unit's reduce-scatter input (the root's)
    in the reduce dtype; zero where the model prices no FSDP2 root unit."""
    if not root_unit_applies(arch, plan, stack):
        return 0.0
    largest = max(root_unit_params(arch, plan), layer_params_per_gpu(arch, plan))
    return stack.grad_reduce_bytes * largest / GIB


def patched(variant: str) -> Callable[[Any, Any, Any, Any], MemoryBreakdown]:
    """``memory_per_gpu`` as ``variant`` prices it."""

    def memory(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
        if variant == "before":
            return memory_per_gpu(arch, plan, stages, replace(stack, fsdp2_root_unit="none"))
        mem = memory_per_gpu(arch, plan, stages, stack)
        if variant == "C":
            rs = reduce_scatter_pool_gib(arch, plan, stack)
            return replace(mem, reserve_gib=mem.reserve_gib + rs)
        return mem

    return memory


def memory_rows() -> None:
    """Per development memory row: published, and each variant (GiB and error)."""
    rows, table = variant_table(VARIANTS, patched, residual_of=None)
    for key, values in table.items():
        errs = [g / r.measured_gib - 1 for g, r in zip(values, rows, strict=True) if g]
        tt = [
            g / r.measured_gib - 1
            for g, r in zip(values, rows, strict=True)
            if g and r.run.stack.name == "torchtitan"
        ]
        print(
            f"  {key:<7} MAPE {statistics.fmean(abs(e) for e in errs) * 100:5.1f} %"
            f"  median signed {statistics.median(errs) * 100:+5.1f} %"
            f"  torchtitan MAPE {statistics.fmean(abs(e) for e in tt) * 100:5.1f} %"
        )


def main() -> None:
    memory_rows()
    print("training runs, before against adopted (plans, fits, MAPE per set and class):")
    compare(patched_memory(patched("before")), nullcontext())


if __name__ == "__main__":
    main()
