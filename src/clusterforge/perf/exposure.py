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
* CP (context parallelism): :mod:`clusterforge.perf.cp_exposure`.
* EP (GShard, Lepikhin et al. 2020): all-to-all dispatch and combine of the ``top_k`` token
  copies, forward and backward, with Megatron-Core's dispatchers and overlap:
  :mod:`clusterforge.perf.ep_exposure`.

Per step:

* PP (Narayanan et al. 2021 §4.1): a ``b s h / t`` send per micro-batch, chunk and direction
  (scatter-gather / SP split over TP). With overlapped sends only the fill and drain hops
  ``2 (p - 1)`` are exposed; without, every send is, and so under Megatron-Core's combined
  1F1B schedule with VP at PP 2 (:func:`combined_schedule_sends_exposed`).
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

from clusterforge.catalog import Gpu, ModelArch
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
from clusterforge.perf.cp_exposure import cp_exposed_s
from clusterforge.perf.ep_exposure import ep_exposed_s
from clusterforge.perf.fp8_tp import amax_reduce_s
from clusterforge.perf.memory import deferred_fsdp_reduce
from clusterforge.perf.parallel import GroupKind, ParallelPlan, rank_groups
from clusterforge.perf.stack import Stack

__all__ = [
    "LayerComm",
    "combined_schedule_sends_exposed",
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
    return arch.num_experts > 1 and stack.moe_dispatch_metadata and stack.moe_dispatcher != "flex"


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


def _ep_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    gpu: Gpu | None,
    nvlink_domain_gpus: int,
) -> float:
    """Exposed EP seconds per layer and micro-batch (:mod:`clusterforge.perf.ep_exposure`)."""
    if arch.num_experts == 1 or plan.layout.ep == 1:
        return 0.0
    in_domain = not _spans_domains(rank_groups(plan, "ep"), nvlink_domain_gpus)
    return ep_exposed_s(plan, arch, comm, stack, times, gpu, in_domain, nvlink_domain_gpus)


def layer_comm(
    arch: ModelArch,
    plan: ParallelPlan,
    times: LayerTimes,
    comm: CommModel,
    stack: Stack,
    nvlink_domain_gpus: int,
    gpu: Gpu | None = None,
) -> LayerComm:
    """Exposed TP, CP and EP seconds per layer and micro-batch (TP with the blocking amax
    all-reduces of torchao's float8 TP, :mod:`clusterforge.perf.fp8_tp`; ``gpu``: needed by
    the flex MoE dispatcher, whose rate follows its NVLink bandwidth)."""
    intra = plan.layout.tp == 1 or not _spans_domains(rank_groups(plan, "tp"), nvlink_domain_gpus)
    return LayerComm(
        tp_s=_tp_exposed_s(plan, arch, comm, stack, times, intra)
        + amax_reduce_s(arch, plan, comm, stack),
        cp_s=cp_exposed_s(plan, arch, comm, times, stack, nvlink_domain_gpus),
        ep_s=_ep_s(plan, arch, comm, stack, times, gpu, nvlink_domain_gpus),
    )


def combined_schedule_sends_exposed(plan: ParallelPlan, arch: ModelArch, stack: Stack) -> bool:
    """Whether every steady-state stage-boundary send is on the critical path: an MoE run
    under Megatron-Core's combined 1F1B schedule (``Stack.moe_a2a_overlap``) with VP at PP 2.

    ``TransformerModelChunkSchedulePlan.run`` (megatron/core/models/common/
    model_chunk_schedule_plan.py at NVIDIA/Megatron-LM b0cc2706ddc6 and 0d8e0714cd29, the
    pins of Megatron-Bridge v0.3.0 and v0.2.0) runs one chunk's forward and another's
    backward layer pair by layer pair and issues ``post_forward`` (the activation send) and
    ``post_backward`` (the gradient send) only after the last pair; the next step's
    ``pre_forward`` / ``pre_backward`` wait on the matching receives
    (``forward_backward_pipelining_with_interleaving``, pipeline_parallel/schedules.py,
    with ``overlap_p2p_comm``, which Megatron-Bridge's ``CommOverlapConfig`` sets for PP > 1
    with VP > 1). At PP 2 with the default group of PP micro-batches per chunk
    (``microbatch_group_size_per_vp_stage``, model_parallel_config.py) the warm-up counts
    of ``get_pp_rank_microbatches`` (2 (PP - rank - 1) + (VP - 1) x group, plus one with the
    overlap) line both stages' steps up: the first stage's step j needs the last stage's
    step j outputs and the last stage's step j + 2 the first stage's step j outputs, two
    transfers per two steps, so each combined step waits on its predecessor's activation
    and gradient (both towards the other stage) in full. The ordinary interleaved schedule
    sends the activation after the forward half and hides it. At PP > 2 the derivation does
    not hold and the sends stay overlapped (an upper bound by the first layer's attention
    weight gradient, which ``run`` places behind the gradient send).
    """
    layout = plan.layout
    moe_overlap = arch.num_experts > 1 and stack.moe_a2a_overlap
    return moe_overlap and layout.pp == 2 and layout.vpp > 1


def pp_exposed_s(
    plan: ParallelPlan, arch: ModelArch, comm: CommModel, stack: Stack, num_micro: int
) -> float:
    """Exposed pipeline send/receive seconds per step: ``2 VP m`` steady-state sends (one
    activation and one gradient per micro-batch and chunk, i.e. per combined step of the
    combined 1F1B schedule) overlapped with compute or, where
    :func:`combined_schedule_sends_exposed` holds or the sends block, exposed."""
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
    exposed = combined_schedule_sends_exposed(plan, arch, stack)
    if stack.pp_overlap and not exposed:  # hidden behind the other micro-batches' compute
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
    serial_gather_s: float = 0.0,
) -> float:
    """Exposed data-parallel seconds per step for a stage holding ``params`` per GPU.

    Dense parameters are reduced over DP x CP (Megatron-Core); the ``expert_params`` among
    them over the expert-data-parallel group, the ``DP x CP / EP`` ranks that hold the same
    experts (Megatron-Core keeps expert parameters in their own buffers and reduces them
    over ``get_expert_data_parallel_group``; with EP inside a node that group has one GPU
    per node). Both reductions share the backward window, both gathers the forward's, less
    ``serial_gather_s``: gathers the GPU waits on in series (Megatron-Core's one-ahead
    bucket dispatch, :func:`~clusterforge.perf.param_gather.expert_gather_chain_s`), exposed
    whole.
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
    serial = min(serial_gather_s, gather)
    return (
        overlapped_s(reduce, backward_mb_s) + overlapped_s(gather - serial, forward_mb_s) + serial
    )
