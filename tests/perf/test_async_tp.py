"""PyTorch's micro-pipelined async TP (torchtitan ``enable_async_tensor_parallel``): only
the collectives Inductor fuses with a matmul hide, behind the matmul's ``t - 1`` overlapped
chunks; the fused calls add their shard copies and partial-sum reduction; the input-gradient
reduce-scatters (sums of matmuls) stay exposed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import layer_times
from clusterforge.perf.exposure import layer_comm
from clusterforge.perf.memory import layer_matmul_shapes
from clusterforge.perf.parallel import tokens_per_gpu
from clusterforge.perf.roofline import gemm_time_s, gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

ASYNC = replace(stack_named("torchtitan"), tp_overlap=True)
TP = 8


def _plan(recompute: str = "none", precision: str = "bf16") -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=TP, dp=8),
        global_batch=128,
        micro_batch=16,
        seq_length=8192,
        sequence_parallel=True,
        recompute=recompute,
        zero_stage=3,
        precision=precision,
    )


@dataclass
class Fabric:
    """Fixed seconds per all-gather and per reduce-scatter, whatever their size; the float8
    amax all-reduces (one scalar each, tests/perf/test_fp8_tp.py) take none."""

    gather_s: float
    scatter_s: float

    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        times = {"all_gather": self.gather_s, "reduce_scatter": self.scatter_s, "all_reduce": 0.0}
        return times[collective]


def _exposed(plan: ParallelPlan, fabric: Fabric, stack=ASYNC) -> tuple[float, object]:
    arch = load_catalog().models["llama3-70b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], plan.precision)
    times = layer_times(arch, plan, perf, stack)
    return layer_comm(arch, plan, times, fabric, stack, 8).tp_s, times  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("precision", "recompute", "scatters", "gathers"),
    [
        # BF16: the two input-gradient reduce-scatters stay exposed, nothing else.
        ("bf16", "none", 2, 0),
        ("bf16", "full", 2, 0),
        # Per-op checkpointing: the re-gathered inputs feed the recomputed K and up matmuls.
        ("bf16", "selective", 2, 0),
        # FP8: the gradients are cast before their gather, which then feeds _scaled_mm.
        ("fp8", "none", 2, 0),
        ("fp8", "full", 2, 0),
    ],
)
def test_only_collectives_fused_with_a_matmul_hide(
    precision: str, recompute: str, scatters: int, gathers: int
) -> None:
    """Collectives far shorter than their matmuls: the fused ones cost nothing (copy
    engines, no SM interference), the unfused ones all of their time."""
    gather_s, scatter_s = 1e-9, 1e-6
    exposed, _ = _exposed(_plan(recompute, precision), Fabric(gather_s, scatter_s))
    assert exposed == pytest.approx(scatters * scatter_s + gathers * gather_s)


def test_a_collective_longer_than_its_matmuls_shows_what_the_chunks_cannot_cover() -> None:
    """The local chunk's matmul needs no data: only ``t - 1`` of the ``t`` chunk matmuls
    overlap the peer copies."""
    comm_s = 1000.0
    plan = _plan("none")
    exposed, times = _exposed(plan, Fabric(comm_s, comm_s))
    arch = load_catalog().models["llama3-70b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    tokens = tokens_per_gpu(plan)
    gemms = [gemm_time_s(tokens, n, k, perf) for n, k in layer_matmul_shapes(arch, plan)]
    fused = times.fused_tp  # type: ignore[attr-defined]
    assert fused.attention_in_s == pytest.approx(sum(gemms[:3]))  # Q, K, V
    assert fused.attention_out_s == pytest.approx(gemms[3])
    assert fused.mlp_in_s == pytest.approx(gemms[4] + gemms[5])  # gate, up
    assert fused.mlp_out_s == pytest.approx(gemms[6])
    share = (TP - 1) / TP
    forward = 4 * comm_s - share * (sum(gemms))
    backward = 2 * comm_s - share * (fused.attention_grad_s + fused.mlp_grad_s) + 2 * comm_s
    assert exposed == pytest.approx(forward + backward)


def test_userbuffers_overlap_is_unchanged() -> None:
    """Megatron's TP overlap still hides every collective behind the layer's GEMMs."""
    megatron = stack_named("megatron-core")
    hidden, _ = _exposed(_plan("none"), Fabric(1e-6, 1e-6), megatron)
    raw, _ = _exposed(_plan("none"), Fabric(1e-6, 1e-6), replace(megatron, tp_overlap=False))
    assert hidden < 0.5 * raw


def test_fused_collectives_copy_the_shard_and_sum_the_partials() -> None:
    """Forward: each fused all-gather copies the local shard twice (into the symmetric
    buffer, into the gathered output), each fused reduce-scatter reads the t partials and
    writes one shard; the DTensor layout copies of the plain collectives are gone."""
    arch = load_catalog().models["llama3-70b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan("none")
    bare = replace(stack_named("torchtitan"), tp_overlap=False, tp_layout_copies=False)
    elements = 16 * 8192 * arch.hidden_size
    shard_copies = 2 * 2 * 2 * elements / TP  # two copies, read + write, BF16
    reduction = 2 * elements * (1 + 1 / TP)
    extra = (
        layer_times(arch, plan, perf, ASYNC).forward_s
        - layer_times(arch, plan, perf, bare).forward_s
    )
    expected = memory_time_s(2 * shard_copies + 2 * reduction, perf, num_kernels=4 * (TP + 1))
    assert extra == pytest.approx(expected)


def test_unfused_backward_scatters_keep_their_layout_copies() -> None:
    """Backward (BF16): the two output-gradient gathers are fused (shard copies); the two
    input-gradient reduce-scatters stay DTensor collectives with a copy of the whole
    activation each."""
    arch = load_catalog().models["llama3-70b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan("none")
    bare = replace(stack_named("torchtitan"), tp_overlap=False, tp_layout_copies=False)
    elements = 16 * 8192 * arch.hidden_size
    shard_copies = 2 * 2 * 2 * elements / TP
    layout_copy = 2 * 2 * elements  # read + write of the BF16 activation
    extra = (
        layer_times(arch, plan, perf, ASYNC).backward_s
        - layer_times(arch, plan, perf, bare).backward_s
    )
    expected = memory_time_s(2 * shard_copies + 2 * layout_copy, perf, num_kernels=2 * (TP + 1) + 2)
    assert extra == pytest.approx(expected)
