"""The allocator's own reserve (``benchmarks/allocator_reserve_whatif.py``): two 32 MiB
cuBLAS workspaces on Hopper (FSDP2's copy-in block is in the model's weights now, on
torchtitan only), and sourced parts that never exceed a published reserved peak.
Development rows only."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks.allocator_reserve_whatif import (
    allocator_reserve_gib,
    cublas_workspace_gib,
    patched,
)
from benchmarks.memory_whatif_common import patched_memory

from clusterforge.perf.fsdp2_memory import fsdp2_root_bytes
from clusterforge.perf.memory import RUNTIME_RESERVE_GIB, layer_params_per_gpu
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design


def _rows() -> list[Any]:
    return [r for r in load_memory_rows() if r.subset == "development"]


def _plan(row: Any) -> Any:
    pred = best_prediction(row.run, run_comm(run_design(row.run)))
    assert pred is not None
    return pred.plan


def test_two_hopper_cublas_workspaces() -> None:
    assert cublas_workspace_gib() == pytest.approx(2 * 32 / 1024)


def test_the_copy_in_block_only_on_fsdp2() -> None:
    rows = {r.id: r for r in _rows()}
    tt, ds = rows["mem-tt-h100-8b-8gpu-fsdp"], rows["mem-mleng-zero3-h200-8b-8k"]
    for row, priced in ((tt, True), (ds, False)):
        arch, plan, stack = row.run.arch, _plan(row), row.run.stack
        root = fsdp2_root_bytes(arch, plan, stack, layer_params_per_gpu(arch, plan), True)
        assert (root > 0.0) == priced, row.id
    assert allocator_reserve_gib() == pytest.approx(cublas_workspace_gib())


def test_the_sourced_parts_stay_under_every_published_reserved_peak() -> None:
    with patched_memory(patched("S")):
        for row in _rows():
            pred = best_prediction(row.run, run_comm(run_design(row.run)))
            assert pred is not None
            assert row.kind == "max_reserved"
            assert pred.memory.total_gib < row.measured_gib, row.id
            assert pred.memory.reserve_gib < RUNTIME_RESERVE_GIB
