"""torchao float8 TP as torchtitan runs it: every cast of a sharded DTensor first all-reduces
its amax over the TP group (DTensor's ``aten.max`` is a linear reduction, ``Partial("max")``),
and torchtitan's per-op checkpointing recomputes the FP8 input casts in the backward."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.fp8_tp import amax_all_reduces
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

TORCHTITAN = replace(stack_named("torchtitan"), tp_overlap=False, fused_elementwise=True)


def _plan(recompute: str, precision: str = "fp8", tp: int = 8) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=tp, dp=8),
        global_batch=96,
        micro_batch=12,
        seq_length=8192,
        sequence_parallel=tp > 1,
        recompute=recompute,
        zero_stage=3,
        precision=precision,
    )


@dataclass
class ReduceCounter:
    """An all-reduce takes 1 s, any other collective nothing: a layer's TP seconds count
    its all-reduces."""

    sizes: list[float]

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        if collective != "all_reduce":
            return 0.0
        self.sizes.append(size_bytes)
        return 1.0


@pytest.mark.parametrize(
    ("recompute", "stack", "expected"),
    [
        # forward: attention and MLP inputs, wo and w2 inputs; backward: 7 output gradients
        ("none", TORCHTITAN, 4 + 7),
        ("selective", TORCHTITAN, 4 + 7),  # the recomputed casts reuse the saved amax
        ("full", TORCHTITAN, 4 + 4 + 7),
        ("none", replace(TORCHTITAN, tp_overlap=True), 4 + 7),  # async TP hides none
        ("none", replace(TORCHTITAN, tp_fp8_all_gather=False), 0),
        ("none", stack_named("megatron-core"), 0),
    ],
)
def test_float8_tp_all_reduces_each_casts_amax(recompute: str, stack, expected: int) -> None:
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "fp8")
    plan = _plan(recompute)
    fabric = ReduceCounter([])
    exposed = layer_comm(arch, plan, layer_times(arch, plan, perf, stack), fabric, stack, 8)  # type: ignore[arg-type]
    assert exposed.tp_s == pytest.approx(expected)
    assert set(fabric.sizes) <= {4}  # one FP32 scalar each


def test_no_amax_reductions_in_bf16_or_without_tp() -> None:
    arch = load_catalog().models["llama3-8b"]
    assert amax_all_reduces(arch, _plan("none", "bf16"), TORCHTITAN) == (0, 0)
    assert amax_all_reduces(arch, _plan("none", tp=1), TORCHTITAN) == (0, 0)


def test_op_checkpointing_recomputes_the_fp8_input_casts() -> None:
    """Per-op checkpointing saves matmuls, SDPA, reduce-scatters and ``max``, not the FP8
    copies that the weight gradients read: the backward recasts the two norm outputs on their
    sequence shard and the wo, w2 inputs (read BF16, write FP8: 3 B per element)."""
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "fp8")
    fp8 = layer_times(arch, _plan("selective"), perf, TORCHTITAN)
    h, t = arch.hidden_size, 8
    elements = (2 * h / t + 4096 / t + 14336 / t) * 12 * 8192
    # the same recomputed matmuls and element-wise ops without torchao's casts
    plain = layer_times(arch, _plan("selective"), perf, replace(TORCHTITAN, fp8_torchao=False))
    assert fp8.recompute_s - plain.recompute_s == pytest.approx(
        memory_time_s(3.0 * elements, perf, num_kernels=4)
    )
    full = layer_times(arch, _plan("full"), perf, TORCHTITAN)
    assert full.recompute_s == pytest.approx(full.forward_s)  # a full rerun already casts


def test_row_parallel_gradients_are_transposed_after_their_fp8_gather() -> None:
    """``Float8RowwiseParallel`` casts the wo and w2 output gradients on their sequence shard
    and all-gathers the FP8 data, one layout only: the weight-gradient GEMM's column-major
    copy is made of the gathered gradient (``preprocess_addmm``: read and write 1 B per
    element of tokens x h), not by the shard's cast, which then writes one layout (3 B, not 4)."""
    from clusterforge.perf.fp8 import fp8_layer_bytes

    arch = load_catalog().models["llama3-8b"]
    h, t, tokens = arch.hidden_size, 8, 12 * 8192
    _, with_tp = fp8_layer_bytes(arch, _plan("none"), TORCHTITAN)
    plain = replace(TORCHTITAN, tp_fp8_all_gather=False)
    _, without = fp8_layer_bytes(arch, _plan("none"), plain)
    # two row-parallel gradients: + 2 B x h gathered, - 1 B x h / t on the shard
    assert with_tp - without == pytest.approx(2 * (2.0 * h - 1.0 * h / t) * tokens)
    eager = replace(TORCHTITAN, fused_elementwise=False)
    _, eager_tp = fp8_layer_bytes(arch, _plan("none"), eager)
    _, eager_plain = fp8_layer_bytes(arch, _plan("none"), replace(eager, tp_fp8_all_gather=False))
    # eager already writes the copy as its own pass (2 B): now of h instead of h / t
    assert eager_tp - eager_plain == pytest.approx(2 * 2.0 * (h - h / t) * tokens)
