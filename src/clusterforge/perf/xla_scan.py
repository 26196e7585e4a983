"""FSDP in an XLA layer scan whose all-gathers are not pipelined (``Stack.xla_pipelined_all_gather``).

JAX's scanned layers are one XLA while loop; under FSDP the SPMD partitioner puts each
layer's weight all-gathers into the loop body. XLA's collective pipeliner
(``--xla_gpu_enable_pipelined_all_gather``) moves them into the iteration before, which is
the model's one unit prefetched (:func:`~clusterforge.perf.sharded.zero3_exposed_s`). Off,
an iteration's gathers are issued inside it and must end inside it:

- the all-gather combiner merges the layer's gathers in groups up to
  ``xla_gpu_all_gather_combine_threshold_bytes`` (default ``kDefaultAllGatherCombineThreshold
  = 30 * 1024 * 1024 + 7``, openxla/xla ``xla/service/collective_utils.h``, every version
  read); a gather larger than the threshold is left alone;
- the latency-hiding scheduler keeps one all-gather in flight (``SchedulerConfig::
  all_gather_overlap_limit = 1``, ``xla/service/latency_hiding_scheduler.h``; the GPU
  configuration, ``gpu_hlo_schedule.cc``, leaves it), and places each gather's done in
  front of the first op that reads it: the next gather starts there, so it overlaps only
  the compute between the previous group's first use and its own;
- the first gather of each iteration has nothing of its own iteration to hide behind.

The layer's weights are taken in the order the forward reads them: the norms' and biases'
small tensors (one combined group read by the first norm), the fused Q/K/V kernel
(Transformer Engine's Flax ``TransformerLayer``, ``fuse_qkv_params = True``,
``transformer_engine/jax/flax/transformer.py``), the attention output, the MLP's input and
output kernels; the backward reads them in reverse after the recomputed forward (under full
recomputation it reads them in forward order for the recomputation and keeps them). The
compute between them is the layer's own (:class:`~clusterforge.perf.compute.LayerTimes`):
the weight GEMMs shared by their FLOPs, a backward GEMM twice its forward, the attention
next to its projections, the remaining element-wise time spread evenly over the four places
a block runs it (the two norms, the activation, the residual tail).

The reduce-scatters are left as the model prices them (behind the next layer's backward):
whether the 2024 builds pipelined them by default was not read at a commit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.memory import layer_params_per_gpu
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.stack_base import Stack

__all__ = [
    "XLA_ALL_GATHER_COMBINE_BYTES",
    "ScanGathers",
    "chain_exposed_s",
    "combined_groups",
    "layer_weights",
    "scan_gathers",
]

# XLA's default all-gather combine threshold: ``kDefaultAllGatherCombineThreshold =
# 30 * 1024 * 1024 + 7`` (openxla/xla ``xla/service/collective_utils.h``), which a run
# keeps when its XLA_FLAGS do not set ``--xla_gpu_all_gather_combine_threshold_bytes``.
XLA_ALL_GATHER_COMBINE_BYTES = 30 * 1024 * 1024 + 7

# Places of a block's element-wise work: first norm, second norm with the residual, the
# MLP's activation, the residual tail.
_ELEMENTWISE_PLACES = 4


@dataclass(frozen=True)
class ScanGathers:
    """Seconds per iteration (one layer, one micro-batch) of the gathers left exposed in
    the forward and in the backward, and of the backward's gathers hidden behind compute
    (the comm stream's share the reduce-scatters can no longer use)."""

    forward_s: float
    backward_s: float
    backward_hidden_s: float


def combined_groups(sizes_bytes: list[float], threshold_bytes: float) -> list[tuple[int, float]]:
    """Gathers in order of first use merged greedily up to ``threshold_bytes``: (index of the
    group's first member, bytes). A gather larger than the threshold stays alone."""
    groups: list[tuple[int, float]] = []
    for index, size in enumerate(sizes_bytes):
        if groups and groups[-1][1] + size <= threshold_bytes:
            groups[-1] = (groups[-1][0], groups[-1][1] + size)
        else:
            groups.append((index, size))
    return groups


def chain_exposed_s(
    ops: list[tuple[int, float]], gathers_s: dict[int, float]
) -> tuple[float, float]:
    """(idle, hidden) seconds of one iteration: ``ops`` are (gather read first, -1 for none;
    compute seconds) in program order, ``gathers_s`` the seconds of the gather each op
    index waits for. The first gather starts with the iteration, each next one when the op
    that reads the one before starts (one in flight, its done in front of that op)."""
    order = sorted(gathers_s)
    pending = dict.fromkeys(order, 0.0)
    t = idle = 0.0
    if order:
        pending[order[0]] = gathers_s[order[0]]
    for index, (reads, compute_s) in enumerate(ops):
        if reads >= 0:
            ready = pending[index]
            idle += max(0.0, ready - t)
            t = max(t, ready)
            later = [k for k in order if k > index]
            if later:
                pending[later[0]] = t + gathers_s[later[0]]
        t += compute_s
    return idle, sum(gathers_s.values()) - idle


def layer_weights(arch: ModelArch, plan: ParallelPlan) -> list[float]:
    """Parameters per GPU in forward order: small tensors (the norms), QKV, output, MLP in,
    MLP out (a MoE layer's router and experts split between the two MLP places)."""
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    total = layer_params_per_gpu(arch, plan)
    qkv = h * (q_dim(arch) + 2 * kv_dim(arch)) / t
    out = q_dim(arch) * h / t
    up, down = (2 if arch.gated_mlp else 1) * f * h / t, f * h / t
    if arch.num_experts > 1:
        mlp = total - qkv - out
        return [0.0, qkv, out, mlp * up / (up + down), mlp * down / (up + down)]
    return [max(0.0, total - qkv - out - up - down), qkv, out, up, down]


def _forward_ops(times: LayerTimes, shares: list[float]) -> list[tuple[int, float]]:
    """The forward's ops, each reading the weight of the same index (norm, QKV + attention,
    output projection + norm, MLP in + activation, MLP out + residual tail)."""
    gemm = [times.gemm_forward_s * s for s in shares]
    rest = max(0.0, times.forward_s - times.gemm_forward_s - times.attention_forward_s)
    part = rest / _ELEMENTWISE_PLACES
    return [
        (0, part),
        (1, gemm[1] + times.attention_forward_s),
        (2, gemm[2] + part),
        (3, gemm[3] + part),
        (4, gemm[4] + part),
    ]


def _backward_ops(times: LayerTimes, shares: list[float]) -> list[tuple[int, float]]:
    """The backward's ops after a partial recomputation: the recomputed forward (norms,
    attention) reading the small tensors, then MLP out, MLP in, output, QKV."""
    gemm = [2.0 * times.gemm_forward_s * s for s in shares]
    rest = times.backward_s - 2.0 * times.gemm_forward_s - times.attention_backward_s
    part = max(0.0, rest) / _ELEMENTWISE_PLACES
    return [
        (0, times.recompute_s + part),
        (4, gemm[4] + part),
        (3, gemm[3] + part),
        (2, gemm[2] + times.attention_backward_s),
        (1, gemm[1] + part),
    ]


def _gather_times(
    comm: CommModel, ops: list[tuple[int, float]], weights_bytes: list[float], shard: np.ndarray
) -> dict[int, float]:
    """Seconds of each combined gather, keyed by the index of the op that first reads it
    (ops reading no weight, index -1, are passed over)."""
    readers = [(i, weights_bytes[w]) for i, (w, _) in enumerate(ops) if w >= 0]
    groups = combined_groups([size for _, size in readers], XLA_ALL_GATHER_COMBINE_BYTES)
    return {
        readers[first][0]: comm.collective_time_s("all_gather", size, shard)
        for first, size in groups
        if size > 0
    }


def _iteration_s(
    comm: CommModel, ops: list[tuple[int, float]], weights_bytes: list[float], shard: np.ndarray
) -> tuple[float, float]:
    """(exposed, hidden) gather seconds of one iteration whose ops read ``weights_bytes``:
    the compute's waits, plus the slowdown the hidden part inflicts on the compute it
    overlaps (``overlap_interference``, as :func:`~clusterforge.perf.compute.overlapped_s`)."""
    gathers = _gather_times(comm, ops, weights_bytes, shard)
    # an op whose weight was merged into an earlier group waits for nothing new
    indexed = [(i if i in gathers else -1, c) for i, (_, c) in enumerate(ops)]
    idle, hidden = chain_exposed_s(indexed, gathers)
    return idle + load_constants().overlap_interference * hidden, hidden


def scan_gathers(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    shard: np.ndarray,
    *,
    regather: bool,
) -> ScanGathers:
    """Exposed gather seconds of one layer iteration, forward and backward, without the
    pipelined all-gather (see the module docstring); ``regather``: the backward gathers
    the weights again (ZeRO-3 resharded after the forward)."""
    params = layer_weights(arch, plan)
    weights_bytes = [p * stack.gathered_weight_bytes(plan.precision) for p in params]
    shares = [p / max(sum(params[1:]), 1.0) for p in params]
    forward = _forward_ops(times, shares)
    fwd_exposed, _ = _iteration_s(comm, forward, weights_bytes, shard)
    if not regather:
        return ScanGathers(fwd_exposed, 0.0, 0.0)
    if plan.recompute == "full":
        scale = times.recompute_s / max(times.forward_s, 1e-30)
        ops = [(w, c * scale) for w, c in forward]
        ops.append((-1, times.backward_s))
    else:
        ops = _backward_ops(times, shares)
    bwd_exposed, hidden = _iteration_s(comm, ops, weights_bytes, shard)
    return ScanGathers(fwd_exposed, bwd_exposed, hidden)
