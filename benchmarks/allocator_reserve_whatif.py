"""What-if: the model's 4 GiB runtime reserve replaced by the caching allocator's own parts.

Every development memory row publishes the caching allocator's reserved peak
(``max_reserved``: torchtitan's ``reserved_bytes.all.peak``, ml-engineering's
``torch.cuda.max_memory_reserved``). The allocator counts into ``reserved_bytes`` only the
memory it maps or ``cudaMalloc``s for its own segments (``map_block`` / ``alloc_block`` in
``c10/cuda/CUDACachingAllocator.cpp``), so the CUDA context and NCCL's buffers (NCCL
allocates them itself with ``cudaMalloc`` or ``cuMemCreate``, NVIDIA/nccl v2.21.5-1
``src/include/alloc.h`` ``ncclCudaCalloc``) are outside that figure. What the allocator does
hold besides the model's tensors, read in the rows' software:

- cuBLAS workspaces: ``getCurrentCUDABlasHandle`` (``aten/src/ATen/cuda/
  CublasHandlePool.cpp``) allocates one workspace per (handle, stream) pair through
  ``CUDACachingAllocator::get()->allocate``; its size is ``CUBLAS_WORKSPACE_CONFIG`` or, by
  default, ``4096 * 8 * 1024`` B (32 MiB) on compute capability 9.x ("32MiB for Hopper";
  later versions add 10.x and 12.x), ``:4096:2:16:8`` (8.125 MiB) before. Handles are per
  thread: counted as two on the compute stream, the forward's thread and the autograd
  engine's device thread (``torch/csrc/autograd/engine.cpp``, not read at the rows'
  release); one if both passes share a handle.
- FSDP2's per-stream blocks (torchtitan, ZeRO-3): the root unit's all-gather output cached
  in the copy-in stream's pool and the root unit kept unsharded from the forward to the end
  of the backward, now in the model (:mod:`clusterforge.perf.fsdp2_memory`, in
  ``weights_gib``; read at torch v2.6.0 and v2.7.0, ``torch/distributed/fsdp/_fully_shard/``,
  which bracket the rows' torch 1963fc8).
- Rounding: with ``expandable_segments`` the large pool maps 20 MiB pages and the small pool
  2 MiB pages per stream, so at most 22 MiB per allocating stream (compute, copy-in,
  reduce-scatter): under 0.07 GiB, not priced.

Variants (``reserve_gib`` only; every other part of the model unchanged):

- ``model``: ``RUNTIME_RESERVE_GIB`` = 4 GiB on top of the model's tensors, FSDP2's root
  unit and copy-in block included (the earlier variant ``B``, adopted).
- ``S``: the 4 GiB replaced by the sourced allocator parts not in the model: two cuBLAS
  workspaces; the CUDA context and NCCL's buffers are left out, as the published figure
  leaves them out. ``S`` is what the memory rows measure; a fit against HBM would need the
  parts outside the allocator too, so the training-run comparison under ``S`` is an upper
  bound on what fits, not a candidate.

The residual column is published minus ``S``: the reserved bytes no source read here
accounts for.

    PYTHONPATH=src:. python benchmarks/allocator_reserve_whatif.py
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory, variant_table

from clusterforge.perf.memory import GIB, MemoryBreakdown, memory_per_gpu

# CublasHandlePool.cpp, parseChosenWorkspaceSize: the default on compute capability 9.x
# (and 10.x, 12.x in later versions), and the ``:4096:2:16:8`` default before Hopper.
CUBLAS_WORKSPACE_HOPPER_BYTES = 4096 * 8 * 1024
CUBLAS_WORKSPACE_DEFAULT_BYTES = 4096 * 1024 * 2 + 16 * 1024 * 8
# One handle per thread that runs GEMMs on the compute stream: the forward's and the
# autograd engine's device thread.
CUBLAS_HANDLES = 2

VARIANTS = ("model", "S")


def cublas_workspace_gib(handles: int = CUBLAS_HANDLES) -> float:
    """cuBLAS workspaces held in the caching allocator on a Hopper or Blackwell GPU."""
    return handles * CUBLAS_WORKSPACE_HOPPER_BYTES / GIB


def allocator_reserve_gib() -> float:
    """The reserve above the model's tensors that the allocator's source makes certain and
    the model does not price: two cuBLAS workspaces (FSDP2's copy-in block and the root's
    unsharded parameters are in the model's ``weights_gib``)."""
    return cublas_workspace_gib()


def patched(variant: str) -> Callable[[Any, Any, Any, Any], MemoryBreakdown]:
    """``memory_per_gpu`` with ``variant``'s reserve."""

    def memory(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
        mem = memory_per_gpu(arch, plan, stages, stack)
        if variant == "model":
            return mem
        return replace(mem, reserve_gib=allocator_reserve_gib())

    return memory


def _summary(key: str, rows: list[Any], values: list[float | None]) -> None:
    def errs(source: str = "") -> list[float]:
        return [
            g / r.measured_gib - 1
            for g, r in zip(values, rows, strict=True)
            if g and source in r.id
        ]

    line = f"  {key:<6} MAPE {statistics.fmean(abs(e) for e in errs()) * 100:5.1f} %"
    line += f"  median signed {statistics.median(errs()) * 100:+5.1f} %"
    for name, source in (("mleng", "mem-mleng"), ("tt tables", "mem-tt-h100"), ("#1185", "1185")):
        line += f"  {name} {statistics.fmean(abs(e) for e in errs(source)) * 100:5.1f} %"
    print(line)


def memory_rows() -> None:
    """Per development memory row: published, each variant (GiB, error), and the residual."""
    rows, table = variant_table(VARIANTS, patched, residual_of="S")
    for key, values in table.items():
        _summary(key, rows, values)


def main() -> None:
    print(f"cuBLAS workspaces in the allocator: {cublas_workspace_gib():.4f} GiB")
    memory_rows()
    print("training runs, model against S (the reserve without the CUDA context and NCCL):")
    compare(nullcontext(), patched_memory(patched("S")))


if __name__ == "__main__":
    main()
