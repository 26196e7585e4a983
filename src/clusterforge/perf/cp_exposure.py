"""Context parallelism: how much of its K, V traffic a layer leaves exposed.

Ring attention (Liu et al. 2023, arXiv 2310.01889; Megatron-Core/Transformer Engine
context parallelism, ``AttnFuncWithCPAndKVP2P``): ``cp - 1`` steps; in each, every rank
passes the K, V chunk it holds to the next rank of the ring while it computes attention
against the chunk it received before, so a step costs ``max(transfer, compute)``. The
sequence is cut into ``2 cp`` chunks and rank ``r`` holds chunks ``r`` and ``2cp - 1 - r``
so that every step does the same causal work (Megatron-LM ``get_batch_on_this_cp_rank``):
a step computes ``1 / cp`` of the rank's attention. The backward's ``cp`` steps pass K, V
and the partial dK, dV (twice the bytes; K, V alone first, dK, dV alone last) against
``1 / cp`` of the attention backward each. A hidden step slows the attention by the SMs its
transfer occupies, fewer for a hop across the network than inside a node
(:func:`_ring_step_exposed_s`). The all-gather variant (Llama 3, arXiv 2407.21783 §3.3.2; ``Stack.cp_overlap`` off) gathers all
of K, V before the attention and reduce-scatters dK, dV after it, on the critical path.
PyTorch's experimental ``context_parallel`` (torchtitan; ``Stack.context_parallel`` "torch")
gathers K, V once behind the first step and passes FP32 dK, dV step by step in the backward
(:func:`_torch_cp_exposed_s`).
"""

from __future__ import annotations

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes, overlapped_s
from clusterforge.perf.flops import kv_dim, q_dim
from clusterforge.perf.parallel import ParallelPlan, rank_groups
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.stack import Stack

__all__ = ["cp_exposed_s"]

ACT_BYTES = 2  # BF16 K, V on the wire


def _kv_bytes(plan: ParallelPlan, arch: ModelArch, stack: Stack) -> float:
    """BF16 bytes of K and V over the whole sequence of one micro-batch on one TP rank
    (all query heads when the model repeats its K, V heads first, ``Stack.kv_heads_expanded``)."""
    width = q_dim(arch) if stack.kv_heads_expanded else kv_dim(arch)
    return plan.micro_batch * plan.seq_length * 2 * width * ACT_BYTES / plan.layout.tp


# PyTorch's context parallelism accumulates dK, dV in FP32 (``_cp_options.convert_to_f32``)
# and passes the FP32 sums between ranks: twice the bytes of the BF16 K, V.
TORCH_CP_GRAD_BYTES_RATIO = 4 / ACT_BYTES

# Under ``torch.compile`` a functional collective is traced with its wait right behind it:
# ``_maybe_wrap_tensor`` in ``torch/distributed/_functional_collectives.py`` returns
# ``wait_tensor(self)`` when ``_are_we_tracing()`` (the ``AsyncCollectiveTensor`` that defers
# the wait to the first use exists only in eager), and Inductor moves a wait away from its
# collective only under ``reorder_for_compute_comm_overlap``, False by default
# (``torch/_inductor/config.py``; PyTorch 2.5-2.6, and still so in later releases). torchtitan
# compiles each transformer block with ``fullgraph=True`` (``apply_compile``,
# ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370), so the ring attention that
# context parallelism dispatches inside the block is traced: its all-gather of K, V and its
# dK, dV passes each block the compute stream until they land.
COMPILED_WAITS_AT_ISSUE = True


def _torch_cp_exposed_s(
    plan: ParallelPlan, comm: CommModel, times: LayerTimes, kv_bytes: float, compiled: bool
) -> tuple[float, float]:
    """(forward, backward) exposed seconds of PyTorch's experimental context parallelism.

    ``_templated_ring_attention`` with the all-gather rotater issues one all-gather of every
    rank's K, V before its first step and waits for it at the second: it hides behind the
    first step's attention only (``1 / cp`` of it). The backward gathers K, V the same way,
    and after every step passes the FP32 dK, dV sums to the next rank (``_AllToAllRotater``,
    ``ft_c.permute_tensor``), each hidden behind the next step's attention backward; the last
    one is waited for after the loop, exposed. (``torch/distributed/tensor/experimental/
    _attention.py``, PyTorch 2.6.)

    ``compiled`` (the block under ``torch.compile``, ``Stack.fused_elementwise``): every
    collective waits where it is issued (:data:`COMPILED_WAITS_AT_ISSUE`), so the gather
    and each of the ``cp`` dK, dV passes are exposed whole.
    """
    cp = plan.layout.cp
    groups = rank_groups(plan, "cp")
    gather = comm.collective_time_s("all_gather", kv_bytes, groups)
    grads = comm.collective_time_s("sendrecv", TORCH_CP_GRAD_BYTES_RATIO * kv_bytes / cp, groups)
    if compiled and COMPILED_WAITS_AT_ISSUE:
        return gather, gather + cp * grads
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


def cp_exposed_s(
    plan: ParallelPlan,
    arch: ModelArch,
    comm: CommModel,
    times: LayerTimes,
    stack: Stack,
    nvlink_domain_gpus: int,
) -> float:
    """Exposed CP seconds of one layer and micro-batch (forward twice under full recompute)."""
    if plan.layout.cp == 1:
        return 0.0
    groups = rank_groups(plan, "cp")
    size = _kv_bytes(plan, arch, stack)
    if stack.context_parallel == "torch":
        forward, backward = _torch_cp_exposed_s(
            plan, comm, times, size, compiled=stack.fused_elementwise
        )
    elif stack.cp_overlap:  # ring: one K, V chunk per rank and step, overlapped step by step
        forward, backward = _ring_exposed_s(plan, comm, times, size, nvlink_domain_gpus)
    else:  # gathered before the attention runs: on the critical path
        gather = comm.collective_time_s("all_gather", size, groups)
        scatter = comm.collective_time_s("reduce_scatter", size, groups)
        forward, backward = gather, gather + scatter
    return forward * (2 if plan.recompute == "full" else 1) + backward
