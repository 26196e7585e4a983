"""Expert-parallel (EP) communication of an MoE layer and how much of it is exposed.

GShard (Lepikhin et al. 2020): all-to-all dispatch and combine of the ``top_k`` token copies,
forward and backward; not overlapped (exposed). Megatron-Core's all-to-all dispatcher adds an
all-gather of the per-expert token counts and an all-to-all of the routing probabilities
(:func:`_ep_raw_s`); its flex dispatcher (DeepEP / HybridEP) sends tokens and probabilities in
one fused kernel each way at DeepEP's rate (:func:`_flex_raw_s`); Megatron-Core's EP
all-to-all overlap hides them behind another micro-batch's compute (:func:`ep_exposed_s`).
Called by :func:`clusterforge.perf.exposure.layer_comm`, which says whether the EP group stays
inside one NVLink domain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.moe import flex_dispatch_s, flex_ranks_per_token
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches, rank_groups
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.stack import Stack

__all__ = [
    "FLEX_OVERLAP_HIDDEN_SHARE",
    "combined_step_share",
    "ep_exposed_s",
    "ep_overlapped_s",
    "flex_domains_per_token",
]

ACT_BYTES = 2  # BF16 activations on the wire

# Megatron-Core's all-to-all token dispatcher (``MoEAlltoAllTokenDispatcher``,
# megatron/core/transformer/moe/token_dispatcher.py, NVIDIA/Megatron-LM): the routing
# probabilities travel in their own all-to-all next to the tokens' (FP32 router output), and
# ``preprocess`` all-gathers each rank's per-expert token counts (int64) over the TP x EP group
# to size the variable splits.
PROBS_BYTES = 4
COUNT_BYTES = 8

# Share of the flex dispatcher's communication time that runs beside compute under
# Megatron-Core's EP all-to-all overlap, measured: NVIDIA-NeMo/Megatron-Bridge at 7ded17dae
# (pull request #5094), skills/nemo-mbridge-perf-moe-comm-overlap/card.yaml
# ``comm_hidden_on_percent: 36.55`` (communication concurrent with GEMM or attention, 3,959 ms
# of a rank-0 Nsight Systems trace; 0.11 % without the overlap): Qwen3-30B-A3B, 16 H100,
# BF16, EP 16, micro-batch 1, HybridEP. The rest of it stays exposed even where the other
# micro-batch's compute would be long enough to hold it.
FLEX_OVERLAP_HIDDEN_SHARE = 0.3655


def flex_domains_per_token(arch: ModelArch, group: Sequence[int], domain_gpus: int) -> float:
    """Expected NVLink domains a token goes to under balanced routing, when the EP ``group``
    (global ranks) spans domains of ``domain_gpus`` GPUs: a domain holding ``E / d`` of the
    ``E`` experts is missed by all ``top_k`` uniform choices with probability
    ``C(E - E/d, k) / C(E, k)`` (as :func:`~clusterforge.perf.moe.flex_ranks_per_token` per
    rank). Without a domain size (0) every routed copy counts (``top_k``)."""
    if domain_gpus <= 0:
        return float(arch.top_k)
    domains = len({int(rank) // domain_gpus for rank in group})
    experts, k = arch.num_experts, arch.top_k
    missed = math.comb(experts - experts // domains, k) / math.comb(experts, k)
    return domains * (1.0 - missed)


def _flex_raw_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    stack: Stack,
    gpu: Gpu | None,
    in_domain: bool,
    domain_gpus: int,
) -> float:
    """One direction's (forward or backward) seconds of the flex dispatcher's dispatch and
    combine: inside an NVLink domain at DeepEP's rate (:func:`~clusterforge.perf.moe.
    flex_dispatch_s`) over the per-rank traffic (one row per token and destination rank,
    :func:`~clusterforge.perf.moe.flex_ranks_per_token`, the FP32 probabilities of its
    ``top_k`` experts riding along in the dispatch); across domains as two all-to-alls of
    one row per token and destination domain (:func:`flex_domains_per_token`): DeepEP's
    internode kernels send a token once over RDMA to each node that holds one or more of its
    experts and forward it to those ranks over NVLink there (DeepEP V1, "forwarding data
    from NVLink domain to RDMA domain", docs/legacy.md; ``tests/test_internode.py`` counts
    the RDMA traffic as ``num_rdma_token_sent``, the (token, node) pairs)."""
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    row = arch.hidden_size * ACT_BYTES / plan.layout.tp
    if not in_domain:
        groups = rank_groups(plan, "ep")
        rows = tokens * flex_domains_per_token(arch, groups[0], domain_gpus)
        return 2 * comm.collective_time_s("all_to_all", rows * row, groups)
    if gpu is None:
        raise ValueError(
            "the flex MoE dispatcher needs the GPU (its NVLink bandwidth): pass gpu= to layer_comm"
        )
    rows = tokens * flex_ranks_per_token(arch, plan)
    sms = stack.moe_flex_sms
    dispatch, _ = flex_dispatch_s(rows * row + tokens * arch.top_k * PROBS_BYTES, gpu, sms)
    _, combine = flex_dispatch_s(rows * row, gpu, sms)
    return dispatch + combine


def _ep_raw_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    stack: Stack,
    gpu: Gpu | None,
    in_domain: bool,
    domain_gpus: int,
) -> tuple[float, float]:
    """(forward, backward) EP seconds per layer and micro-batch, none hidden: dispatch and
    combine of the ``top_k`` token copies in the forward, their reverse all-to-alls in the
    backward. With Megatron-Core's all-to-all dispatcher (``Stack.moe_dispatch_metadata``)
    the forward also all-gathers the token counts and sends the probabilities in a second
    all-to-all, whose reverse runs in the backward (the probabilities carry the router's
    gradient; the counts carry none; drop-and-pad runs, ``Stack.moe_drop_and_pad``, know
    them without it). The flex dispatcher moves tokens and probabilities
    in its fused kernels (:func:`_flex_raw_s`). A full recompute repeats the forward's."""
    groups = rank_groups(plan, "ep")
    copies = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.top_k
    if stack.moe_dispatcher == "flex":
        forward = backward = _flex_raw_s(plan, arch, comm, stack, gpu, in_domain, domain_gpus)
    else:
        size = copies * arch.hidden_size * ACT_BYTES / plan.layout.tp
        one = comm.collective_time_s("all_to_all", size, groups)
        forward, backward = 2 * one, 2 * one
        if stack.moe_dispatch_metadata:
            probs_size = copies * PROBS_BYTES / plan.layout.tp
            probs = comm.collective_time_s("all_to_all", probs_size, groups)
            counts_bytes = arch.num_experts * COUNT_BYTES * plan.layout.ep * plan.layout.tp
            counts = comm.collective_time_s("all_gather", counts_bytes, groups)
            if stack.moe_drop_and_pad:  # the counts are the fixed capacity: not gathered
                counts = 0.0
            forward, backward = forward + probs + counts, backward + probs
    return forward * (2 if plan.recompute == "full" else 1), backward


def combined_step_share(plan: ParallelPlan) -> float:
    """Share of a stage's forward (and backward) chunks that Megatron-Core's EP all-to-all
    overlap runs merged with another micro-batch's backward (forward).

    Without pipelining every forward but the first is merged with the previous
    micro-batch's backward (``combined_1f1b_schedule_for_no_pipelining``). Under interleaved
    pipelining the 1F1B steps merge them, after ``2 (p - 1) + (v - 1) p + 1`` warm-up
    forwards on the first stage, one more than without the overlap
    (``get_pp_rank_microbatches`` in megatron/core/pipeline_parallel/schedules.py, group size
    ``p`` by default); the first stage has the most, so it sets the step.
    """
    m = num_micro_batches(plan)
    pp, vpp = plan.layout.pp, plan.layout.vpp
    if pp == 1:
        return (m - 1) / m
    chunks = m * vpp
    warmup = 2 * (pp - 1) + (vpp - 1) * pp + 1
    return max(0, chunks - warmup) / chunks


def ep_overlapped_s(
    forward_s: float,
    backward_s: float,
    times: LayerTimes,
    share: float,
    interference: float,
    hidden_share: float = 1.0,
) -> float:
    """Exposed EP seconds of one layer and micro-batch when a ``share`` of its forwards run
    merged with another micro-batch's backward: the forward's dispatch and combine hide
    behind that layer's backward compute and the backward's behind the forward compute, up
    to ``hidden_share`` of what fits; the rest stays exposed, and the hidden part slows the
    compute beside it by ``interference`` (the communication's share of the SMs)."""

    def hidden(comm_s: float, window_s: float) -> float:
        hidden_s = hidden_share * min(comm_s, window_s)
        return comm_s - hidden_s + interference * hidden_s

    merged = hidden(forward_s, times.backward_s) + hidden(backward_s, times.forward_s)
    return (1.0 - share) * (forward_s + backward_s) + share * merged


def ep_exposed_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    gpu: Gpu | None,
    in_domain: bool,
    domain_gpus: int = 0,
) -> float:
    """Exposed EP seconds per layer and micro-batch (:func:`_ep_raw_s`): all of them, or,
    under Megatron-Core's EP all-to-all overlap (``Stack.moe_a2a_overlap``), what
    :func:`ep_overlapped_s` leaves of them; the flex kernels hide at the measured
    :data:`FLEX_OVERLAP_HIDDEN_SHARE` and slow the compute beside them by their SMs' share of
    the GPU (``Stack.moe_flex_sms``), NCCL's all-to-alls by ``overlap_interference``
    (:func:`~clusterforge.perf.compute.overlapped_s`)."""
    if arch.num_experts == 1 or plan.layout.ep == 1:
        return 0.0
    forward, backward = _ep_raw_s(plan, arch, comm, stack, gpu, in_domain, domain_gpus)
    if not stack.moe_a2a_overlap:
        return forward + backward
    share = combined_step_share(plan)
    if stack.moe_dispatcher == "flex" and gpu is not None and gpu.num_sms > 0:
        interference = stack.moe_flex_sms / gpu.num_sms
        return ep_overlapped_s(
            forward, backward, times, share, interference, FLEX_OVERLAP_HIDDEN_SHARE
        )
    interference = load_constants().overlap_interference
    return ep_overlapped_s(forward, backward, times, share, interference)
