"""ZeRO-3 / FSDP communication: per-unit weight all-gathers and gradient reduce-scatters.

Fully sharded data parallelism (Rajbhandari et al. 2020, ZeRO stage 3, §5.3; Zhao et al.
2023, "PyTorch FSDP", arXiv 2304.11277, §3.3) keeps each GPU's shard of the weights and
materialises one *unit* at a time (an FSDP unit is a transformer block; DeepSpeed fetches
buckets of ``stage3_prefetch_bucket_size`` parameters). Per micro-batch and unit:

* forward: all-gather the unit's BF16 weights (FP8 when the stack gathers FP8 weights);
* backward: all-gather them again when they were freed after the forward
  (``reshard_after_forward``), then reduce-scatter the unit's gradients.

Each collective runs on the shard group over the real fabric (the :class:`CommModel`
simulates it, so its latency grows with the group: a ring all-gather over ``n`` GPUs takes
``n - 1`` steps, ``nNodes - 1`` of them over the network, in NCCL's tuning model,
``src/graph/tuning.cc``). What costs time at thousands of ranks is therefore the number of
calls times that latency, not the bytes: FSDP gathers a block in one call
(:func:`gathers_per_unit`), DeepSpeed fetches each weight matrix of a layer on its own (four
calls where a layer exceeds the 5e7-element prefetch bucket) and reduce-scatters gradients
in 5e8-element buckets (:func:`reduce_per_unit_s`). At a fixed global batch, doubling the
GPUs halves each GPU's compute while every micro-batch still gathers the whole model, so
per-GPU throughput falls once the calls no longer hide behind compute. With prefetch the gather of the next unit runs while the current unit
computes, so a unit costs ``max(compute, comm)``: only one unit's compute can hide one
unit's communication, the first gather and the last reduce-scatter are exposed, and
overlapped traffic slows the compute it overlaps (:func:`overlapped_s`). Without prefetch
every gather waits in front of its unit, and so does every backward gather under FSDP1's
``BACKWARD_POST`` (:data:`~clusterforge.perf.stack_options.FsdpBackwardPrefetch`).

FSDP2 (per-parameter sharding, torchtitan) also copies every gathered block out of the
all-gather buffer into the parameters' own tensors on the compute stream
(:func:`zero3_copy_out_s`), and copies every unit's gradients into a reduce-scatter buffer of
the reduce dtype that the compute stream waits for (:func:`zero3_copy_in_s`,
:func:`deferred_copy_in_s`); FSDP1's flat parameter and DeepSpeed's buffers are the
parameters and gradients themselves.

Pipeline parallelism: the weights of a stage are gathered once per step and kept for all
micro-batches, and the gradients reduce-scattered once after the last one (torchtitan's
``reshard_after_forward=False`` under PP; Liang et al. 2024 §3.1), which costs what ZeRO-2
costs (:func:`~clusterforge.perf.exposure.dp_exposed_s`), except that PyTorch's pipelining
schedules keep the gradients unsharded until the last micro-batch and reduce-scatter them
after the schedule, exposed (``Stack.pipelined_fsdp_no_sync``).

Hybrid sharding (HSDP, Zhao et al. 2023 §3.2.2) shards inside groups of ``shard_size``
GPUs and all-reduces each unit's gradient shard across the replicas after its
reduce-scatter, in every micro-batch's backward (:func:`hsdp_sync_s`): one more call per
unit, whose latency grows with the number of replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes, overlapped_s
from clusterforge.perf.memory import deferred_fsdp_reduce, layer_params_per_gpu
from clusterforge.perf.parallel import ParallelPlan, shard_groups
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.update import stage_weights
from clusterforge.perf.xla_combine import merged_sync_s
from clusterforge.perf.xla_scan import scan_gathers

__all__ = [
    "UnitCollectives",
    "deferred_copy_in_s",
    "fsdp1_grad_prep_s",
    "fsdp_unit_layers",
    "gather_calls_s",
    "gathers_per_unit",
    "hsdp_sync_s",
    "reduce_per_unit_s",
    "unit_collectives",
    "zero3_copy_in_s",
    "zero3_copy_out_s",
    "zero3_exposed_s",
]


def fsdp_unit_layers(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> int:
    """Transformer layers per gathered unit: one (an FSDP unit per block), or as many as
    fill the stack's prefetch bucket (DeepSpeed ``stage3_prefetch_bucket_size``)."""
    layer = layer_params_per_gpu(arch, plan)
    return max(1, round(stack.fsdp_unit_params / layer)) if stack.fsdp_unit_params else 1


def gathers_per_unit(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> int:
    """All-gather calls per gathered unit and pass: one for an FSDP block (one flat or
    grouped buffer); for DeepSpeed, one per fetched weight matrix when each is larger
    than the prefetch bucket, fewer when the bucket coalesces several (never under one)."""
    if not stack.fsdp_unit_params or stack.zero3_gathers_per_layer <= 1:
        return 1
    layer = layer_params_per_gpu(arch, plan)
    return max(1, min(stack.zero3_gathers_per_layer, round(layer / stack.fsdp_unit_params)))


def gather_calls_s(comm: CommModel, size_bytes: float, calls: int, groups: np.ndarray) -> float:
    """Seconds of ``calls`` all-gathers that move ``size_bytes`` together over ``groups``:
    every call pays the ring's latency at the group's size (``n - 1`` steps, NCCL's
    ``ncclTopoTuneModel``), so splitting a unit multiplies the latency, not the bytes."""
    return calls * comm.collective_time_s("all_gather", size_bytes / calls, groups)


def reduce_per_unit_s(
    comm: CommModel, unit_params: float, grad_bytes: float, stack: Stack, groups: np.ndarray
) -> float:
    """Reduce-scatter seconds per unit: one call per unit, or the unit's share of one
    ``zero3_reduce_bucket_params`` bucket (DeepSpeed's ``reduce_bucket_size``)."""
    bucket = max(unit_params, stack.zero3_reduce_bucket_params)
    one = comm.collective_time_s("reduce_scatter", bucket * grad_bytes, groups)
    return one * unit_params / bucket


def _gathered_copy_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per micro-batch to read and write every gathered weight byte of ``layers``
    ZeRO-3 layers once per gather (forward, and backward when resharded after the
    forward); memory-bound, one kernel per layer and gather. Zero below ZeRO-3 and under
    pipeline parallelism (gathered once per step)."""
    if plan.zero_stage < 3 or plan.layout.pp > 1:
        return 0.0
    gathered = (
        layers * layer_params_per_gpu(arch, plan) * stack.gathered_weight_bytes(plan.precision)
    )
    passes = 2 if stack.fsdp_reshard_after_forward else 1
    return passes * memory_time_s(2 * gathered, perf, num_kernels=layers)


def zero3_copy_out_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per micro-batch of the gathered weights' copies on the compute stream.

    FSDP2 gathers a block's shards into one flat buffer and then copies it into the
    per-parameter unsharded tensors (``foreach_all_gather_copy_out`` in
    ``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py``), a read and a write of
    every gathered byte, once per gather: in the forward, and again in the backward when
    the block was resharded after the forward. Zero for stacks whose gathered buffer is
    the parameters (FSDP1's flat parameter, DeepSpeed).

    XLA without while-loop double buffering (``Stack.scan_carry_copies``) copies the same
    bytes once per gather for another reason: the collective pipeliner moves each scanned
    layer's all-gather into the iteration before, whose result the loop carries to the
    next iteration, and the carried buffer is the one the current iteration still reads,
    so copy insertion adds a device-to-device copy of the gathered weights at the end of
    every iteration (the double-buffering pass, ``loop_double_buffer_transformer.cc``,
    openxla/xla pull request 5473, 2023-09: with the loop unrolled by two "some of the
    additional copies that result from potential read-after-write hazards will be
    removed", the savings "proportional to sizes of weights and number of layers";
    ``gpu_compiler.cc`` ``AddDoubleBufferingPasses``: "Mostly to get rid of extra D2D
    copies"). The same kernel count and bytes as FSDP2's copy-out; a stack has one or
    the other.
    """
    if not (stack.fsdp_copy_out or stack.scan_carry_copies):
        return 0.0
    return _gathered_copy_s(arch, plan, stack, perf, layers)


def _copy_in_s(params: float, bytes_per_param: float, perf: GpuPerf, layers: int) -> float:
    """One ``_chunk_cat`` per unit: the ``layers`` blocks and the root unit (embeddings, norm
    and output layer), streaming ``bytes_per_param`` per gradient through HBM."""
    return memory_time_s(params * bytes_per_param, perf, num_kernels=layers + 1)


def zero3_copy_in_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, index: int, layers: int
) -> float:
    """Seconds per micro-batch of FSDP2's reduce-scatter copy-in, on the critical path.

    Before each unit's reduce-scatter, ``foreach_reduce`` (PyTorch
    ``torch/distributed/_composable/fsdp/_fsdp_collectives.py``, Dec 2024) allocates the
    reduce-scatter input in the reduce dtype and ``torch._chunk_cat``-s the unit's unsharded
    gradients into it: read the BF16 gradient (2 B), write ``grad_reduce_bytes`` (FP32 in
    torchtitan: 4 B). The copy runs on the reduce-scatter stream once the unit's backward is
    done, and the compute stream then waits for it (``current_stream.wait_stream(
    reduce_scatter_stream)``) before freeing the gradients, so the next unit's backward
    starts only after it: memory-bound time added to every micro-batch that reduces (later
    PyTorch runs the copy on the compute stream itself, the same cost). The reduced shard is
    viewed out, not copied, when the reduce dtype is the sharded parameters' (FP32); adding it
    into an earlier micro-batch's shard runs on the reduce-scatter stream behind the next
    unit's backward, like the reduce-scatter, and is not charged here. Zero without FSDP2,
    below ZeRO-2, without sharding, and for a pipelined stage that reduces once per step
    (:func:`deferred_copy_in_s`).
    """
    if (
        not stack.fsdp_copy_in
        or plan.zero_stage < 2
        or plan.layout.dp * plan.layout.cp < 2
        or deferred_fsdp_reduce(plan, stack)
    ):
        return 0.0
    params = stage_weights(arch, plan, index, layers)
    return _copy_in_s(params, BF16_BYTES + stack.grad_reduce_bytes, perf, layers)


def deferred_copy_in_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per step of the copy-in of a pipelined FSDP2 stage (first stage's ``layers``).

    Such a stage accumulates its gradients unsharded in the reduce dtype and reduce-scatters
    them after the schedule (:func:`~clusterforge.perf.memory.deferred_fsdp_reduce`), so its
    copy-in reads the accumulator and writes the reduce-scatter input, ``grad_reduce_bytes``
    each, once per step, with no compute left to hide behind (exposed with the reduction).
    """
    if not stack.fsdp_copy_in or not deferred_fsdp_reduce(plan, stack):
        return 0.0
    if plan.layout.dp * plan.layout.cp < 2:
        return 0.0
    params = stage_weights(arch, plan, 0, layers)
    return _copy_in_s(params, 2 * stack.grad_reduce_bytes, perf, layers)


# FSDP1's gradient preparation (PyTorch ``torch/distributed/fsdp/_runtime_utils.py``, 2.0-2.5):
# on the post-backward stream ``_post_backward_hook`` casts the unit's unsharded flat gradient
# to the reduce dtype when it differs from the parameter dtype
# (``flat_param.grad.to(handle._reduce_dtype)``: read the BF16 gradient, write the reduce
# dtype), then ``_reduce_grad`` divides it in place by ``_gradient_predivide_factor``
# (``_div_if_needed``: read and write the reduce dtype) and only then calls
# ``reduce_scatter_tensor``. The factor (``_get_gradient_predivide_factor`` in
# ``_init_utils.py``: doubled while it divides the world size and stays below its quotient)
# exceeds 1 on every group of two or more ranks. One kernel each; the post-divide touches
# only the shard (1/n of it, left out).
FSDP1_GRAD_PREP_KERNELS = 2


def fsdp1_grad_prep_s(stack: Stack, perf: GpuPerf | None, params: float) -> float:
    """Seconds of FSDP1's cast and pre-divide of the unsharded gradients of ``params``
    parameters, in front of their reduce-scatter on the same stream (memory-bound); zero
    without ``Stack.fsdp_grad_prep`` or without the GPU's rates."""
    if not stack.fsdp_grad_prep or perf is None:
        return 0.0
    reduce = stack.grad_reduce_bytes
    cast = BF16_BYTES + reduce if reduce != BF16_BYTES else 0.0
    return memory_time_s(params * (cast + 2 * reduce), perf, num_kernels=FSDP1_GRAD_PREP_KERNELS)


@dataclass(frozen=True)
class UnitCollectives:
    """Seconds of one gathered unit's collectives in one micro-batch, and of the ends (the
    root unit: embedding gather, reduce-scatter and HSDP sync), each on its own; with the
    gradient preparation that runs in front of a unit's reduce-scatter on its stream
    (``prep_s``, FSDP1) and the root unit's (``ends_prep_s``), and the root unit's HSDP
    sync alone (``ends_sync_s``, part of ``ends_s``)."""

    units: int
    gather_s: float
    regather_s: float
    reduce_s: float
    sync_s: float
    ends_s: float
    prep_s: float = 0.0
    ends_prep_s: float = 0.0
    ends_sync_s: float = 0.0

    @property
    def per_micro_batch_s(self) -> float:
        """All of them back to back: what one micro-batch would pay with no overlap."""
        unit = self.gather_s + self.regather_s + self.reduce_s + self.sync_s
        return self.units * unit + self.ends_s


def unit_collectives(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    *,
    layers: int,
    perf: GpuPerf | None = None,
) -> UnitCollectives:
    """Each collective of a stage with ``layers`` layers, per unit and micro-batch (PP = 1),
    at the times ``comm`` gives for the shard and replica groups: every call pays the
    group's latency (a ring's ``n - 1`` steps, NCCL's ``ncclTopoTuneModel``). ``perf``:
    the GPU's rates, for FSDP1's gradient preparation (:func:`fsdp1_grad_prep_s`)."""
    shard, replicas = shard_groups(plan)
    per_unit = fsdp_unit_layers(arch, plan, stack)
    unit_params = per_unit * layer_params_per_gpu(arch, plan)
    calls = gathers_per_unit(arch, plan, stack)
    gathered = unit_params * stack.gathered_weight_bytes(plan.precision)
    gather = gather_calls_s(comm, gathered, calls, shard)
    # ZeRO-2 (FSDP SHARD_GRAD_OP) keeps each unit gathered from its forward to its backward.
    regather = gather if plan.zero_stage == 3 and stack.fsdp_reshard_after_forward else 0.0
    embedding = arch.vocab_size * arch.hidden_size / plan.layout.tp
    ends = comm.collective_time_s("all_gather", embedding * BF16_BYTES, shard)
    ends += comm.collective_time_s("reduce_scatter", embedding * stack.grad_reduce_bytes, shard)
    ends_sync = hsdp_sync_s(comm, embedding, stack, shard, replicas)
    ends += ends_sync
    return UnitCollectives(
        units=math.ceil(layers / per_unit),
        gather_s=gather,
        regather_s=regather,
        reduce_s=reduce_per_unit_s(comm, unit_params, stack.grad_reduce_bytes, stack, shard),
        # HSDP: each unit's gradient shard is all-reduced across the replicas right after its
        # reduce-scatter, in every backward (FSDP1 HYBRID_SHARD and FSDP2 on a 2-D mesh both
        # synchronise every micro-batch unless gradient sync is turned off).
        sync_s=hsdp_sync_s(comm, unit_params, stack, shard, replicas),
        ends_s=ends,
        prep_s=fsdp1_grad_prep_s(stack, perf, unit_params),
        ends_prep_s=fsdp1_grad_prep_s(stack, perf, embedding),
        ends_sync_s=ends_sync,
    )


def zero3_exposed_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    *,
    layers: int,
    num_micro: int,
    perf: GpuPerf | None = None,
) -> float:
    """Exposed ZeRO-3/FSDP seconds per step of a stage with ``layers`` layers (PP = 1).

    A unit's gradient preparation (FSDP1, ``perf`` given) runs on the reduce-scatter's
    stream in front of it, so it counts as part of that reduction: hidden behind the next
    unit's backward with it, exposed with it after the last. Unrolled XLA layers whose
    replica all-reduces XLA merges across layers (``Stack.unrolled_all_reduce_combine_bytes``)
    pay the merged calls instead (:func:`~clusterforge.perf.xla_combine.merged_sync_s`)."""
    c = unit_collectives(arch, plan, comm, stack, layers=layers, perf=perf)
    merged = 0.0
    if stack.unrolled_all_reduce_combine_bytes > 0 and c.sync_s > 0:
        merged = merged_sync_s(arch, plan, comm, stack, times, layers)
        c = replace(c, sync_s=0.0, ends_s=c.ends_s - c.ends_sync_s, ends_sync_s=0.0)
    units, gather, regather = c.units, c.gather_s, c.regather_s
    reduce, sync = c.prep_s + c.reduce_s, c.sync_s
    per_unit = fsdp_unit_layers(arch, plan, stack)
    fwd_unit = per_unit * times.forward_s
    bwd_unit = per_unit * (times.backward_s + times.recompute_s)
    if stack.fsdp_prefetch == 0:
        forward = units * gather
        backward = units * (regather + reduce + sync)
    elif not stack.xla_pipelined_all_gather:
        forward, backward = _scan_unpipelined_s(arch, plan, comm, stack, times, c, reduce + sync)
    else:
        forward = gather + (units - 1) * overlapped_s(gather, fwd_unit)
        # BACKWARD_POST issues each backward gather only once the unit before it has its
        # gradients: it waits in front of every unit (Stack.fsdp_backward_prefetch).
        waits = regather if stack.fsdp_backward_prefetch == "post" else 0.0
        backward = (
            regather
            + (units - 1) * (waits + overlapped_s(regather - waits + reduce + sync, bwd_unit))
            + reduce
            + sync
        )
    return num_micro * (forward + backward + c.ends_s + c.ends_prep_s + merged)


def _scan_unpipelined_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    c: UnitCollectives,
    reduce_s: float,
) -> tuple[float, float]:
    """(forward, backward) exposed seconds per micro-batch of a layer scan whose all-gathers
    XLA does not pipeline (:mod:`clusterforge.perf.xla_scan`): every layer's gathers exposed
    as its iteration leaves them; its reduce-scatter (and HSDP sync) behind the next layer's
    backward less the gathers hidden there, the last one exposed."""
    shard, _ = shard_groups(plan)
    it = scan_gathers(arch, plan, comm, stack, times, shard, regather=c.regather_s > 0)
    window = max(0.0, times.backward_s + times.recompute_s - it.backward_hidden_s)
    backward = c.units * it.backward_s + (c.units - 1) * overlapped_s(reduce_s, window)
    return c.units * it.forward_s, backward + reduce_s


def hsdp_sync_s(
    comm: CommModel, params: float, stack: Stack, shard: np.ndarray, replicas: np.ndarray
) -> float:
    """Seconds to all-reduce the gradient shard of ``params`` parameters across the HSDP
    replicas (Zhao et al. 2023 §3.2.2); zero under full sharding."""
    if replicas.shape[1] < 2:
        return 0.0
    owned = params / shard.shape[1]
    return comm.collective_time_s("all_reduce", owned * stack.grad_reduce_bytes, replicas)
