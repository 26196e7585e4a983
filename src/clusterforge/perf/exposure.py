"""Communication of a training step and how much of it is exposed (not hidden by compute).

Per micro-batch and layer (critical path of every stage):

* TP (Megatron, Shoeybi et al. 2019 §3): 2 all-reduces of the ``b s h`` activation in the
  forward and 2 in the backward (+2 when the forward is recomputed); with sequence
  parallelism each all-reduce becomes an all-gather + reduce-scatter of the same total size
  (Korthikanti et al. 2022 §4.2.2) and the backward re-gathers the input for the weight
  gradient (Calculon's ``seq_par_ag_redo``; DTensor TP keeps the gathered input instead,
  :func:`~clusterforge.perf.compute.tp_backward_regathers`). Overlapped with the GEMMs (``Stack.tp_overlap``,
  NVLink domain only) the collectives hide behind the layer's GEMMs at the cost
  :func:`~clusterforge.perf.compute.overlapped_s` states (Transformer Engine's userbuffers),
  or, under PyTorch's micro-pipelined async TP, only those fused with a matmul hide, behind
  its ``t - 1`` overlapped chunks (:mod:`clusterforge.perf.async_tp`). In an MoE layer under Megatron-Core's
  all-to-all dispatcher the MLP's pair gathers and scatters the routed ``top_k`` copies
  (:func:`_moe_gathers_routed_copies`).
* CP, ring attention (Liu et al. 2023, arXiv 2310.01889; Megatron-Core/Transformer Engine
  context parallelism, ``AttnFuncWithCPAndKVP2P``): ``cp - 1`` steps; in each, every rank
  passes the K, V chunk it holds to the next rank of the ring while it computes attention
  against the chunk it received before, so a step costs ``max(transfer, compute)``. The
  sequence is cut into ``2 cp`` chunks and rank ``r`` holds chunks ``r`` and ``2cp - 1 - r``
  so that every step does the same causal work (Megatron-LM ``get_batch_on_this_cp_rank``):
  a step computes ``1 / cp`` of the rank's attention. The backward's ``cp`` steps pass K, V
  and the partial dK, dV (twice the bytes; K, V alone first, dK, dV alone last) against
  ``1 / cp`` of the attention backward each. A hidden
  step slows the attention by the SMs its transfer occupies, fewer for a hop across the
  network than inside a node (:func:`_ring_step_exposed_s`). The
  all-gather variant (Llama 3, arXiv 2407.21783 §3.3.2; ``Stack.cp_overlap`` off) gathers all
  of K, V before the attention and reduce-scatters dK, dV after it, on the critical path.
  PyTorch's experimental ``context_parallel`` (torchtitan; ``Stack.context_parallel`` "torch")
  gathers K, V once behind the first step and passes FP32 dK, dV step by step in the backward
  (:func:`_torch_cp_exposed_s`).
* EP (GShard, Lepikhin et al. 2020): all-to-all dispatch and combine of ``top_k`` token
  copies, forward and backward; not overlapped (exposed). Megatron-Core's all-to-all
  dispatcher adds an all-gather of the per-expert token counts and an all-to-all of the
  routing probabilities (:func:`_ep_exposed_s`).

Per step:

* PP (Narayanan et al. 2021 §4.1): a ``b s h / t`` send per micro-batch, chunk and direction
  (scatter-gather / SP split over TP). With overlapped sends only the fill and drain hops
  ``2 (p - 1)`` are exposed; without, every send is.
* Tied embeddings with PP > 1 (Shoeybi et al. 2019 §3; Megatron-LM ``_allreduce_embedding_grads``,
  DeepSpeed ``PipelineEngine._exec_reduce_tied_grads``): the first stage's input embedding
  and the last stage's output layer share one weight, so their ``V h / t`` gradients are
  all-reduced between the two stages after the backward, not overlapped.
* DP: gradient all-reduce (ZeRO-0) or reduce-scatter + parameter all-gather (ZeRO-1/2,
  Megatron distributed optimizer, and ZeRO-3 under pipeline parallelism, whose stage weights
  stay gathered for the step); with overlap the reduce hides behind the backward of the
  last micro-batch and the gather behind the forward of the first. ZeRO-3/FSDP without
  pipelining gathers unit by unit: :mod:`clusterforge.perf.sharded`. PyTorch's pipelining
  schedules run FSDP's gradient reduce-scatter only after the last micro-batch's backward
  has finished (``torch/distributed/pipelining/stage.py``, ``backward_maybe_with_nosync``
  and ``perform_reduce_grad``), so there it is exposed whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.perf import async_tp
from clusterforge.perf.async_tp import is_micro_pipelined
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import (
    LayerTimes,
    overlapped_s,
    tp_backward_regathers,
    tp_grad_gather_bytes,
    tp_input_gather_bytes,
)
from clusterforge.perf.flops import kv_dim, q_dim
from clusterforge.perf.memory import deferred_fsdp_reduce
from clusterforge.perf.parallel import GroupKind, ParallelPlan, rank_groups
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.stack import Stack

__all__ = [
    "LayerComm",
    "dp_exposed_s",
    "embedding_sync_s",
    "layer_comm",
    "pp_exposed_s",
]

ACT_BYTES = 2  # BF16 activations on the wire


def _spans_domains(groups: np.ndarray, nvlink_domain_gpus: int) -> bool:
    """True when some group leaves its NVLink domain (ranks are numbered domain by domain)."""
    domains = groups // nvlink_domain_gpus
    return bool(np.any(domains.min(axis=1) != domains.max(axis=1)))


@dataclass(frozen=True)
class LayerComm:
    """Exposed communication seconds per layer and micro-batch on one GPU."""

    tp_s: float
    cp_s: float
    ep_s: float


def _moe_gathers_routed_copies(arch: ModelArch, stack: Stack) -> bool:
    """Whether an MoE layer's TP collectives carry the routed copies instead of the tokens.

    Megatron-Core's all-to-all dispatcher (``MoEAlltoAllTokenDispatcher``, expert tensor
    parallelism equal to TP by default) takes the layer input sequence-sharded, exchanges it
    over EP, then all-gathers the received ``top_k`` copies over the TP group
    (``dispatch_postprocess``) and reduce-scatters the experts' outputs before the combine
    (``combine_preprocess``), in place of a dense MLP's sequence-parallel pair.
    """
    return arch.num_experts > 1 and stack.moe_dispatch_metadata


def _tp_calls_s(
    plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack
) -> tuple[float, float, float]:
    """Seconds of one sequence-parallel all-gather of a matmul input and of one all-gather
    of an output gradient (each FP8 where the stack casts first), and of one reduce-scatter
    (BF16)."""
    groups = rank_groups(plan, "tp")
    elements = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.hidden_size
    return (
        comm.collective_time_s("all_gather", elements * tp_input_gather_bytes(plan, stack), groups),
        comm.collective_time_s("all_gather", elements * tp_grad_gather_bytes(plan, stack), groups),
        comm.collective_time_s("reduce_scatter", elements * ACT_BYTES, groups),
    )


def _tp_raw_s(plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack) -> float:
    """All TP collectives of one layer and micro-batch, seconds (not yet overlapped).

    A parallel block (GPT-J; Chowdhery et al. 2022, PaLM §2) sums the attention and MLP
    outputs before one reduction and feeds both branches from one gathered input: one
    collective pair per layer and direction instead of two.
    """
    if plan.layout.tp == 1:
        return 0.0
    groups = rank_groups(plan, "tp")
    elements = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.hidden_size
    size = elements * ACT_BYTES
    recompute = plan.recompute == "full"
    pairs = 1 if arch.parallel_block else 2
    if plan.sequence_parallel:
        # Inputs gathered for the matmuls and output gradients gathered in the backward
        # (FP8 where the stack casts first), reduce-scatters in BF16.
        gather_input, gather, scatter = _tp_calls_s(plan, arch, comm, stack)
        dense_pairs = pairs
        forward = backward = 0.0
        if _moe_gathers_routed_copies(arch, stack) and pairs == 2:
            # the MLP's pair moves the routed top-k copies (BF16), the reverse pair in the
            # backward; the gathered copies are the grouped GEMM's saved input
            dense_pairs = 1
            routed = arch.top_k * size
            moe_pair = comm.collective_time_s(
                "all_gather", routed, groups
            ) + comm.collective_time_s("reduce_scatter", routed, groups)
            forward, backward = moe_pair, moe_pair
        forward += dense_pairs * (gather_input + scatter)
        backward += dense_pairs * (gather + scatter)
        if tp_backward_regathers(plan, stack):
            backward += dense_pairs * gather_input
        return forward * (2 if recompute else 1) + backward
    reduce = comm.collective_time_s("all_reduce", size, groups)
    return reduce * pairs * (2 + (1 if recompute else 0))


def _tp_exposed_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    intra_node: bool,
) -> float:
    """Exposed TP seconds of one layer and micro-batch: all of them without overlap or
    across NVLink domains; behind the layer's GEMMs under Transformer Engine's userbuffers
    overlap; under PyTorch's micro-pipelined TP what :mod:`clusterforge.perf.async_tp`
    leaves exposed (nothing fused in a parallel block, whose pair is not a matmul pair)."""
    raw_s = _tp_raw_s(plan, arch, comm, stack)
    if not (stack.tp_overlap and intra_node) or plan.layout.tp == 1:
        return raw_s
    if stack.tp_overlap_kind == "micro_pipeline":
        if not is_micro_pipelined(plan, stack) or arch.parallel_block:
            return raw_s
        gather_input, gather, scatter = _tp_calls_s(plan, arch, comm, stack)
        return async_tp.exposed_s(
            times.fused_tp,
            plan,
            gather_input_s=gather_input,
            gather_s=gather,
            scatter_s=scatter,
            regathers=tp_backward_regathers(plan, stack),
        )
    gemm_passes = 3 + (1 if plan.recompute == "full" else 0)
    return overlapped_s(raw_s, times.gemm_forward_s * gemm_passes)


def _kv_bytes(plan: ParallelPlan, arch: ModelArch, stack: Stack) -> float:
    """BF16 bytes of K and V over the whole sequence of one micro-batch on one TP rank
    (all query heads when the model repeats its K, V heads first, ``Stack.kv_heads_expanded``)."""
    width = q_dim(arch) if stack.kv_heads_expanded else kv_dim(arch)
    return plan.micro_batch * plan.seq_length * 2 * width * ACT_BYTES / plan.layout.tp


# PyTorch's context parallelism accumulates dK, dV in FP32 (``_cp_options.convert_to_f32``)
# and passes the FP32 sums between ranks: twice the bytes of the BF16 K, V.
TORCH_CP_GRAD_BYTES_RATIO = 4 / ACT_BYTES


def _torch_cp_exposed_s(
    plan: ParallelPlan, comm: CommModel, times: LayerTimes, kv_bytes: float
) -> tuple[float, float]:
    """(forward, backward) exposed seconds of PyTorch's experimental context parallelism.

    ``_templated_ring_attention`` with the all-gather rotater issues one all-gather of every
    rank's K, V before its first step and waits for it at the second: it hides behind the
    first step's attention only (``1 / cp`` of it). The backward gathers K, V the same way,
    and after every step passes the FP32 dK, dV sums to the next rank (``_AllToAllRotater``,
    ``ft_c.permute_tensor``), each hidden behind the next step's attention backward; the last
    one is waited for after the loop, exposed. (``torch/distributed/tensor/experimental/
    _attention.py``, PyTorch 2.6.)
    """
    cp = plan.layout.cp
    groups = rank_groups(plan, "cp")
    gather = comm.collective_time_s("all_gather", kv_bytes, groups)
    grads = comm.collective_time_s("sendrecv", TORCH_CP_GRAD_BYTES_RATIO * kv_bytes / cp, groups)
    forward = overlapped_s(gather, times.attention_forward_s / cp)
    step_backward = times.attention_backward_s / cp
    backward = overlapped_s(gather, step_backward) + (cp - 1) * overlapped_s(grads, step_backward)
    return forward, backward + grads


# NCCL's channels for a send or receive (``ncclTopoGetNchannels``, src/graph/paths.cc,
# NVIDIA/nccl 2.18-2.28): a peer on another node gets 2 channels per NIC ("start from 2
# channels per NIC"), a peer in the node 2 per NVLink of the path (on an NVSwitch node as many
# as a collective runs); NCCL runs one CTA per channel. A ring step sends to one peer and
# receives from another: 4 CTAs across the network.
NET_P2P_CHANNELS_PER_PEER = 2
RING_STEP_PEERS = 2
# The channels behind ``overlap_interference``: its source takes a collective's 16-32
# channels (SMs); the slowdown is taken as proportional to the CTAs a transfer occupies.
COLLECTIVE_CHANNELS = 32


def _ring_hops(groups: np.ndarray, nvlink_domain_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    """(hops inside an NVLink domain, hops across domains) of the rings over ``groups``, each
    a ``(num_hops, 2)`` array of (sender, receiver) ranks: rank ``i`` sends to ``i + 1``."""
    pairs = np.stack([groups, np.roll(groups, -1, axis=1)], axis=-1).reshape(-1, 2)
    domains = pairs // nvlink_domain_gpus
    crossing = domains[:, 0] != domains[:, 1]
    return pairs[~crossing], pairs[crossing]


def _ring_step_exposed_s(
    transfer_s: float, in_node_s: float | None, window_s: float, crosses_nodes: bool
) -> float:
    """Exposed seconds of one ring step whose transfer (``transfer_s``, the slowest hop)
    runs behind ``window_s`` of attention.

    What the window cannot hide, plus the slowdown the transfer inflicts on the attention:
    ``overlap_interference`` of the transfer on a rank with a peer in its node
    (``in_node_s``: that hop's time; None when no hop stays in a node) and, on a rank with a
    peer on another node, the share of it its 4 CTAs occupy (:data:`NET_P2P_CHANNELS_PER_PEER`);
    the step waits for the slower rank.
    """
    c = load_constants()
    excess = max(0.0, transfer_s - window_s)
    slowdowns = [0.0]
    if in_node_s is not None:
        slowdowns.append(c.overlap_interference * min(in_node_s, window_s))
    if crosses_nodes:
        share = NET_P2P_CHANNELS_PER_PEER * RING_STEP_PEERS / COLLECTIVE_CHANNELS
        slowdowns.append(share * c.overlap_interference * min(transfer_s, window_s))
    return excess + max(slowdowns)


def _ring_exposed_s(
    plan: ParallelPlan, comm: CommModel, times: LayerTimes, size: float, nvlink_domain_gpus: int
) -> tuple[float, float]:
    """(forward, backward) exposed seconds of the overlapped ring (``AttnFuncWithCPAndKVP2P``).

    Forward: ``cp - 1`` transfers of one K, V chunk, each behind one step's attention (the
    first step uses the rank's own K, V). Backward: ``cp`` steps, each behind ``1 / cp`` of
    the attention backward, passing one buffer of K, V and the running dK, dV sums: K, V
    alone on the first step, both on the ``cp - 2`` middle ones, the dK, dV sums alone on
    the last.
    """
    cp = plan.layout.cp
    groups = rank_groups(plan, "cp")
    in_node, across = _ring_hops(groups, nvlink_domain_gpus)

    def step_s(chunk: float, window_s: float) -> float:
        transfer = comm.collective_time_s("sendrecv", chunk, groups)
        in_node_s = None
        if len(in_node) and len(across):
            in_node_s = comm.collective_time_s("sendrecv", chunk, in_node)
        elif len(in_node):
            in_node_s = transfer
        return _ring_step_exposed_s(transfer, in_node_s, window_s, len(across) > 0)

    chunk = size / cp
    forward = (cp - 1) * step_s(chunk, times.attention_forward_s / cp)
    step_backward = times.attention_backward_s / cp
    backward = 2 * step_s(chunk, step_backward) + (cp - 2) * step_s(2 * chunk, step_backward)
    return forward, backward


def _cp_exposed_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    times: LayerTimes,
    stack: Stack,
    nvlink_domain_gpus: int,
) -> float:
    if plan.layout.cp == 1:
        return 0.0
    groups = rank_groups(plan, "cp")
    size = _kv_bytes(plan, arch, stack)
    if stack.context_parallel == "torch":
        forward, backward = _torch_cp_exposed_s(plan, comm, times, size)
    elif stack.cp_overlap:  # ring: one K, V chunk per rank and step, overlapped step by step
        forward, backward = _ring_exposed_s(plan, comm, times, size, nvlink_domain_gpus)
    else:  # gathered before the attention runs: on the critical path
        gather = comm.collective_time_s("all_gather", size, groups)
        scatter = comm.collective_time_s("reduce_scatter", size, groups)
        forward, backward = gather, gather + scatter
    return forward * (2 if plan.recompute == "full" else 1) + backward


# Megatron-Core's all-to-all token dispatcher (``MoEAlltoAllTokenDispatcher``,
# megatron/core/transformer/moe/token_dispatcher.py, NVIDIA/Megatron-LM): the routing
# probabilities travel in their own all-to-all next to the tokens' (FP32 router output), and
# ``preprocess`` all-gathers each rank's per-expert token counts (int64) over the TP x EP group
# to size the variable splits.
PROBS_BYTES = 4
COUNT_BYTES = 8


def _ep_exposed_s(plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack) -> float:
    """Exposed EP seconds per layer and micro-batch: dispatch and combine of the ``top_k``
    token copies in the forward, their reverse all-to-alls in the backward. With Megatron-
    Core's dispatcher (``Stack.moe_dispatch_metadata``) the forward also all-gathers the token
    counts and sends the probabilities in a second all-to-all, whose reverse runs in the
    backward (the probabilities carry the router's gradient; the counts carry none)."""
    if arch.num_experts == 1 or plan.layout.ep == 1:
        return 0.0
    groups = rank_groups(plan, "ep")
    copies = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.top_k
    size = copies * arch.hidden_size * ACT_BYTES / plan.layout.tp
    one = comm.collective_time_s("all_to_all", size, groups)
    forward, backward = 2 * one, 2 * one
    if stack.moe_dispatch_metadata:
        probs = comm.collective_time_s("all_to_all", copies * PROBS_BYTES / plan.layout.tp, groups)
        counts_bytes = arch.num_experts * COUNT_BYTES * plan.layout.ep * plan.layout.tp
        counts = comm.collective_time_s("all_gather", counts_bytes, groups)
        forward, backward = forward + probs + counts, backward + probs
    return forward * (2 if plan.recompute == "full" else 1) + backward


def layer_comm(
    arch: ModelArch,
    plan: ParallelPlan,
    times: LayerTimes,
    comm: CommModel,
    stack: Stack,
    nvlink_domain_gpus: int,
) -> LayerComm:
    """Exposed TP, CP and EP seconds per layer and micro-batch."""
    intra = plan.layout.tp == 1 or not _spans_domains(rank_groups(plan, "tp"), nvlink_domain_gpus)
    return LayerComm(
        tp_s=_tp_exposed_s(plan, arch, comm, stack, times, intra),
        cp_s=_cp_exposed_s(plan, arch, comm, times, stack, nvlink_domain_gpus),
        ep_s=_ep_exposed_s(plan, arch, comm, stack),
    )


def pp_exposed_s(
    plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack, num_micro: int
) -> float:
    """Exposed pipeline send/receive seconds per step."""
    if plan.layout.pp == 1:
        return 0.0
    size = (
        plan.micro_batch
        * plan.seq_length
        / plan.layout.cp
        * arch.hidden_size
        * ACT_BYTES
        / plan.layout.tp
    )
    one = comm.collective_time_s("sendrecv", size, rank_groups(plan, "pp"))
    fill_drain = 2 * (plan.layout.pp - 1) * one
    steady = 2 * plan.layout.vpp * num_micro * one
    if stack.pp_overlap:  # hidden behind the other micro-batches' compute
        return fill_drain + overlapped_s(steady, math.inf)
    return fill_drain + steady


def embedding_sync_s(plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack) -> float:
    """Seconds per step to all-reduce the tied embedding gradient between first and last stage."""
    if plan.layout.pp == 1 or not arch.tied_embeddings:
        return 0.0
    pipelines = plan.layout.groups("pp")  # every rank's pipeline, stage by stage
    pairs = pipelines[:, [0, -1]]  # first and last stage hold the tied weights
    size = arch.vocab_size * arch.hidden_size / plan.layout.tp * stack.grad_reduce_bytes
    return comm.collective_time_s("all_reduce", size, pairs)


def _dp_traffic_s(
    plan: ParallelPlan, params: float, comm: CommModel, stack: Stack, kind: GroupKind
) -> tuple[float, float]:
    """(gradient reduction, parameter gather) seconds of ``params`` over the ``kind`` groups:
    an all-reduce under ZeRO-0, a reduce-scatter and an all-gather under ZeRO-1/2."""
    groups = rank_groups(plan, kind)
    grads = params * stack.grad_reduce_bytes
    if plan.zero_stage == 0:
        return comm.collective_time_s("all_reduce", grads, groups), 0.0
    weights = params * stack.gathered_weight_bytes(plan.precision)
    return (
        comm.collective_time_s("reduce_scatter", grads, groups),
        comm.collective_time_s("all_gather", weights, groups),
    )


def dp_exposed_s(
    plan: ParallelPlan,
    params: float,
    comm: CommModel,
    stack: Stack,
    forward_mb_s: float,
    backward_mb_s: float,
    num_micro: int,
    *,
    expert_params: float = 0.0,
) -> float:
    """Exposed data-parallel seconds per step for a stage holding ``params`` per GPU.

    Dense parameters are reduced over DP x CP (Megatron-Core); the ``expert_params`` among
    them over the expert-data-parallel group, the ``DP x CP / EP`` ranks that hold the same
    experts (Megatron-Core keeps expert parameters in their own buffers and reduces them
    over ``get_expert_data_parallel_group``; with EP inside a node that group has one GPU
    per node). Both reductions share the backward window, both gathers the forward's.
    """
    if plan.layout.dp * plan.layout.cp == 1:
        return 0.0
    reduce, gather = _dp_traffic_s(plan, params - expert_params, comm, stack, "dpcp")
    if expert_params > 0 and plan.layout.ep < plan.layout.dp * plan.layout.cp:
        expert_reduce, expert_gather = _dp_traffic_s(plan, expert_params, comm, stack, "edp")
        reduce, gather = reduce + expert_reduce, gather + expert_gather
    if not stack.dp_overlap:
        return reduce + gather
    if deferred_fsdp_reduce(plan, stack):
        # Reduce-scattered after the schedule's last backward: nothing left to hide behind.
        return reduce + overlapped_s(gather, forward_mb_s)
    return overlapped_s(reduce, backward_mb_s) + overlapped_s(gather, forward_mb_s)
