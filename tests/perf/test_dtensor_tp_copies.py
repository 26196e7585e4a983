"""Sequence-parallel TP through DTensor (torchtitan): PyTorch's functional all-gather and
reduce-scatter work on dimension 0, so gathering or scattering the sequence dimension of a
``[batch, sequence, hidden]`` activation copies the whole tensor next to every call
(``torch.cat(torch.chunk(...))`` in ``torch/distributed/_functional_collectives.py``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

TORCHTITAN = replace(stack_named("torchtitan"), tp_overlap=False)


def _plan(tp: int, recompute: str = "none") -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=tp, dp=8),
        global_batch=96,
        micro_batch=12,
        seq_length=8192,
        sequence_parallel=tp > 1,
        recompute=recompute,
        zero_stage=3,
    )


def test_each_sequence_parallel_collective_copies_the_gathered_activation() -> None:
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(8, "full")
    with_copies = layer_times(arch, plan, perf, TORCHTITAN)
    without = layer_times(arch, plan, perf, replace(TORCHTITAN, tp_layout_copies=False))
    size = 12 * 8192 * arch.hidden_size * 2  # the gathered BF16 activation
    # Forward: an all-gather and a reduce-scatter around attention and around the MLP;
    # backward: their two mirrors (under full recomputation the recomputed forward's
    # gathered inputs are saved for the weight gradients: no re-gather).
    assert with_copies.forward_s - without.forward_s == pytest.approx(
        memory_time_s(4 * 2 * size, perf, num_kernels=4)
    )
    assert with_copies.backward_s - without.backward_s == pytest.approx(
        memory_time_s(4 * 2 * size, perf, num_kernels=4)
    )
    assert with_copies.recompute_s == pytest.approx(with_copies.forward_s)


def test_op_level_checkpointing_re_gathers_the_inputs_in_the_backward() -> None:
    """torchtitan's per-op checkpointing does not save all-gather outputs: the backward
    recomputes the two gathers (one per column-parallel input), each with its copy."""
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(8, "selective")
    with_copies = layer_times(arch, plan, perf, TORCHTITAN)
    without = layer_times(arch, plan, perf, replace(TORCHTITAN, tp_layout_copies=False))
    size = 12 * 8192 * arch.hidden_size * 2
    assert with_copies.backward_s - without.backward_s == pytest.approx(
        memory_time_s(6 * 2 * size, perf, num_kernels=6)
    )


@dataclass
class CountingFabric:
    """An all-gather takes 1 s and a reduce-scatter 1,000 s, so a layer's TP seconds count
    its calls of each kind."""

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        return {"all_gather": 1.0, "reduce_scatter": 1000.0}[collective]


@pytest.mark.parametrize(
    ("stack", "recompute", "gathers", "scatters"),
    [
        # Megatron keeps the input shard and re-gathers it for the weight gradient.
        (stack_named("megatron-core"), "full", 2 + 2 + 2 + 2, 2 + 2 + 2),
        (stack_named("megatron-core"), "none", 2 + 2 + 2, 2 + 2),
        # DTensor: autograd saves the gathered input unless op checkpointing dropped it.
        (TORCHTITAN, "full", 2 + 2 + 2, 2 + 2 + 2),
        (TORCHTITAN, "none", 2 + 2, 2 + 2),
        (TORCHTITAN, "selective", 2 + 2 + 2, 2 + 2),
    ],
)
def test_tp_calls_per_layer(stack, recompute: str, gathers: int, scatters: int) -> None:
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(8, recompute)
    times = layer_times(arch, plan, perf, stack)
    exposed = layer_comm(arch, plan, times, CountingFabric(), replace(stack, tp_overlap=False), 8)  # type: ignore[arg-type]
    assert exposed.tp_s == gathers + 1000 * scatters


def test_no_copies_without_tp() -> None:
    """(Under async TP the fused collectives do without them: tests/perf/test_async_tp.py.)"""
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    off = replace(TORCHTITAN, tp_layout_copies=False)
    assert layer_times(arch, _plan(1), perf, TORCHTITAN) == layer_times(arch, _plan(1), perf, off)


@dataclass
class BytesFabric:
    """A collective takes one second per GiB of its buffer; it records the all-gathers."""

    gathers: list[float]

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        if collective == "all_gather":
            self.gathers.append(size_bytes)
        return size_bytes / 2**30


def test_float8_tp_gathers_the_matmul_inputs_in_fp8() -> None:
    """torchao's ``PrepareFloat8ModuleInput``/``Float8ColwiseParallel`` cast the input to
    float8 before the all-gather, and ``Float8RowwiseParallel`` casts the output gradient
    before the backward's all-gather: in FP8 runs every TP gather moves one byte per element
    (and its layout copy too); the reduce-scatters stay BF16."""
    arch = load_catalog().models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "fp8")
    plan = replace(_plan(8, "none"), precision="fp8")
    size = 12 * 8192 * arch.hidden_size  # elements of the gathered activation
    fp8 = BytesFabric([])
    times = layer_times(arch, plan, perf, TORCHTITAN)
    layer_comm(arch, plan, times, fp8, TORCHTITAN, 8)  # type: ignore[arg-type]
    # The forward gathers inputs in FP8, the backward FP8 output gradients.
    assert set(fp8.gathers) == {size}
    bf16 = BytesFabric([])
    plain = replace(TORCHTITAN, tp_fp8_all_gather=False)
    layer_comm(arch, plan, layer_times(arch, plan, perf, plain), bf16, plain, 8)  # type: ignore[arg-type]
    assert set(bf16.gathers) == {2 * size}
    # Forward copies: two gathered inputs at 1 B and two scattered outputs at 2 B.
    off = replace(TORCHTITAN, tp_layout_copies=False)
    extra = times.forward_s - layer_times(arch, plan, perf, off).forward_s
    assert extra == pytest.approx(memory_time_s(2 * (2 * size + 2 * 2 * size), perf, num_kernels=4))
