"""NCCL's latency model: the fixed cost of one collective call and the pipeline fill.

:func:`latency_s` is NCCL's ``latency`` term of ``latency + size / bandwidth``
(``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` in NCCL's ``src/graph/tuning.cc``): a
base latency per algorithm and protocol plus a hardware latency per step by link kind
(NVLink, PCIe, network), a network step also paying the path latency of our graph.
:func:`tree_fill_s` and :func:`chain_fill_s` add the time the first chunk of a tree or chain
spends crossing its hops beyond that latency, before the pipeline runs full; a call
across nodes also pays a fixed cost NCCL's table leaves out (fitted). The
bandwidth side (protocols, payload shares, channel ceilings) is :mod:`.tuner`; the
constants are NCCL's, in ``data/nccl.toml`` with their sources.
"""

from __future__ import annotations

from typing import assert_never, get_args

from clusterforge.constants import read_constants
from clusterforge.netsim.tuner import (
    NCCL_CONSTANTS,
    PROTOCOL_INDEX,
    LinkKind,
    Triple,
    TuningContext,
    nccl_triples,
)
from clusterforge.netsim.vocab import Algorithm, Protocol

__all__ = [
    "chain_fill_s",
    "latency_s",
    "nccl_latency_s",
    "tree_fill_s",
    "tuner_latency_s",
    "tuner_offset_s",
]

_BASE_US: dict[str, Triple] = nccl_triples(
    "base_latency_us", NCCL_CONSTANTS.rows("base_latency_us")
)
_HW_US: dict[str, dict[str, Triple]] = {
    kind: nccl_triples(f"hw_latency_us.{kind}", rows)
    for kind, rows in NCCL_CONSTANTS.tables("hw_latency_us").items()
}
if set(_BASE_US) != set(get_args(Algorithm)) or set(_HW_US) != set(get_args(LinkKind)):
    raise ValueError("nccl.toml: base latencies need every algorithm, hw latencies every link")
_NET_OVERHEAD_US = NCCL_CONSTANTS.number("net_overhead_us")  # per network operation, x86 host
# the cost of a call across nodes beyond NCCL's table (latency_s), fitted
_EFFICIENCY = read_constants("clusterforge.netsim", "efficiency.toml")
_CALL_ACROSS_NODES_US = _EFFICIENCY.number("call_across_nodes_us")
# a tree's chunk by protocol: one step of a channel's buffer (NCCL_BUFFSIZE / NCCL_STEPS for
# Simple; LL128 keeps 15 of each 16 words of its step, LL half of its step)
_STEPS = NCCL_CONSTANTS.integer("nccl_steps")
_TREE_CHUNK: dict[Protocol, int] = {
    "simple": _EFFICIENCY.integer("pipeline_chunk_bytes") // _STEPS,
    "ll128": NCCL_CONSTANTS.integer("ll128_buffer_bytes") // _STEPS // 16 * 15,
    "ll": NCCL_CONSTANTS.integer("ll_buffer_bytes") // _STEPS // 2,
}


def tree_fill_s(ctx: TuningContext, protocol: Protocol, size_bytes: float) -> float:
    """Seconds the first chunk of a tree all-reduce spends crossing the tree beyond NCCL's
    per-hop latency (:func:`latency_s`), before the pipeline runs full.

    The chunk is one buffer step of ``protocol`` (``calcCollChunking`` in
    ``src/enqueue.cc``: chunkSteps 1 for trees; LL128 halves it down to 128 KiB, then
    32 KiB, while a channel's share of the message is below 64, then 16, x (1 + log2 nodes +
    ppn / 10) / ppn chunks), and never more than a channel's share of the message.  It
    climbs the chain of each node's GPUs (``ncclTopoPreset``: ppn - 1 hops) and the tree
    between nodes, and comes back down: the hops NCCL's tree latency counts.  The two trees
    run on two copies of the search channels, so every GPU carries 2 x channels chains: a
    chain hop moves the chunk at the GPU's scale-up payload rate over 2 x channels, a
    network hop at the node's network rate over 2 x channels, and a hop takes the longer
    of that and NCCL's hop latency.  On nodes of 8 GPUs this adds little; through the
    72-GPU chain of an NVL72 rack it adds milliseconds.  0 on one node."""
    if ctx.num_nodes < 2 or ctx.num_channels < 1:
        return 0.0
    lanes = 2 * ctx.num_channels
    ppn = ctx.ranks_per_node
    chunk = _TREE_CHUNK[protocol]
    if protocol == "ll128":
        steps = 1 + _log2i(ctx.num_nodes) + 0.1 * ppn
        for times, floor in ((64, 131072), (16, 32768)):
            while size_bytes // (lanes * chunk) < steps * times / ppn and chunk > floor:
                chunk //= 2
    share = min(float(chunk), size_bytes / lanes)
    chain_us = share / (ctx.intra_gbyte_per_s / lanes) / 1e3
    net_us = share / (ctx.node_net_gbyte_per_s / lanes) / 1e3
    chain = 2 * (ppn - 1) * max(0.0, chain_us - _hw_us(ctx.intra, "tree", protocol))
    net = 2 * _log2i(ctx.num_nodes) * max(0.0, net_us - _inter_us("tree", protocol, ctx))
    return (chain + net) * 1e-6


def chain_fill_s(ctx: TuningContext, protocol: Protocol, size_bytes: float) -> float:
    """Seconds the first chunk of a chain (broadcast, reduce) across nodes waits at its
    network hops beyond NCCL's per-hop latency (:func:`latency_s`).

    NCCL's network proxy posts a step only once the GPU has written all of it (the GPU's
    tail past the step in ``sendProxyProgress``, ``src/transport/net.cc``), so a chunk
    crosses each network hop whole, while inside a node LL and LL128 lines stream on as
    their flags land.  A chain's chunk is one buffer step of ``protocol`` (``calcCollChunking``
    in ``src/enqueue.cc``: chunkSteps 1, and no LL128 halving, which is for trees), and never
    more than a channel's share of the message.  The chain enters each of the m nodes once:
    m - 1 network hops, each moving the chunk at the node's network rate over the 2 x
    channels NCCL runs (two copies of the search channels), and each costing the longer of
    that and NCCL's hop latency.  An LL128 broadcast on 8x400G H100 nodes pays about 20 us
    per hop from 16 MiB up.  0 on one node."""
    if ctx.num_nodes < 2 or ctx.num_channels < 1:
        return 0.0
    lanes = 2 * ctx.num_channels
    share = min(float(_TREE_CHUNK[protocol]), size_bytes / lanes)
    net_us = share / (ctx.node_net_gbyte_per_s / lanes) / 1e3
    hop_us = max(0.0, net_us - _inter_us("ring", protocol, ctx))
    return (ctx.num_nodes - 1) * hop_us * 1e-6


def _log2i(n: int) -> int:
    return max(0, int(n).bit_length() - 1)


def _hw_us(kind: LinkKind, algorithm: str, protocol: Protocol) -> float:
    table = _HW_US[kind]
    key = algorithm if algorithm in table else "ring"
    return table[key][PROTOCOL_INDEX[protocol]]


def _inter_us(algorithm: str, protocol: Protocol, ctx: TuningContext) -> float:
    """One network step: NCCL's hardware latency (the tree figure when ranks are alone on
    their node) plus ``latencyInter``, twice for Simple (the receive flush).  NCCL takes
    ``latencyInter`` from the net plugin (``graph->latencyInter = net->net.latency``,
    ``src/graph/search.cc``): aws-ofi-nccl reports 35-75 us on EFA
    (:func:`~clusterforge.netsim.ofi_tuner.net_latency_s`); NCCL's own InfiniBand / RoCE
    transport reports none, and there our graph's path latency fills the slot."""
    key = "tree" if ctx.ranks_per_node == 1 else algorithm
    path_us = (ctx.net_plugin_latency_s or ctx.net_path_latency_s) * 1e6
    return _hw_us("net", key, protocol) + path_us * (2 if protocol == "simple" else 1)


def _ring_us(algorithm: str, protocol: Protocol, ctx: TuningContext) -> float:
    n, m = ctx.num_ranks, ctx.num_nodes
    steps = {"all_reduce": 2 * (n - 1), "reduce_scatter": n - 1, "all_gather": n - 1}
    nsteps = steps.get(ctx.collective, n)
    intra = _hw_us(ctx.intra, algorithm, protocol)
    if m > 1:
        intra = max(intra, _NET_OVERHEAD_US * (3 if protocol == "simple" else 1))
    inter_steps = 0 if m == 1 else (2 * (m - 1) if ctx.collective == "all_reduce" else m - 1)
    inter_steps = min(inter_steps, nsteps)
    total = (nsteps - inter_steps) * intra + inter_steps * _inter_us(algorithm, protocol, ctx)
    if protocol == "simple" and m > 1 and ctx.collective == "all_reduce":
        total *= 1.4  # NCCL's "plateau effect of ring" on Ampere and newer
    return total


def latency_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """Latency of one collective call (seconds), before any byte moves: NCCL's estimate
    (:func:`nccl_latency_s`) plus, where the communicator spans nodes, the fixed cost of a
    call across nodes that NCCL's table leaves out (``call_across_nodes_us``, fitted on
    calibration rows: data/efficiency.toml).  It is paid once per call, whatever the
    algorithm and however many network hops: the 4-node calls of the cluster it was fitted
    on exceed NCCL's table by as much as its 2-node calls."""
    call_us = _CALL_ACROSS_NODES_US if ctx.num_nodes > 1 else 0.0
    return nccl_latency_s(algorithm, protocol, ctx) + call_us * 1e-6


def tuner_latency_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """The latency NCCL's tuner ranks ``algorithm`` and ``protocol`` by (seconds): its
    ``comm->latencies``, which ``ncclTopoGetAlgoTime`` adds to ``size / bandwidth`` to pick
    the fastest pair.  It is :func:`nccl_latency_s` except for broadcast and reduce (our
    ``chain``): ``ncclTopoTuneModel`` (``src/graph/tuning.cc``, NVIDIA/nccl v2.24.3-1 to commit
    5067397) charges a ring graph found with ``sameChannels`` (the search's first try,
    ``ncclTopoCompute`` in ``src/graph/search.cc``, kept on symmetric nodes) its base latency
    plus one hardware step, the network's across nodes (``hwLat[NET][RING]``: LL 2.7, LL128
    4.0, Simple 14 us), since consecutive calls stream down the chain.  The call itself still
    takes :func:`latency_s`: this only orders the candidates, so across nodes NCCL switches
    a broadcast from LL128 to Simple as soon as Simple's bandwidth gain outweighs 4.4 us."""
    if algorithm != "chain":
        return nccl_latency_s(algorithm, protocol, ctx)
    hw = "net" if ctx.num_nodes > 1 else ctx.intra
    step_us = _HW_US[hw]["ring"][PROTOCOL_INDEX[protocol]]
    return (_BASE_US["chain"][PROTOCOL_INDEX[protocol]] + step_us) * 1e-6


def tuner_offset_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """Seconds NCCL's ranking latency (:func:`tuner_latency_s`) exceeds the latency of NCCL's
    model that the call's time contains (:func:`nccl_latency_s`): added to a candidate's time,
    it orders the candidates as NCCL's tuner does (0 but for broadcast and reduce)."""
    return tuner_latency_s(algorithm, protocol, ctx) - nccl_latency_s(algorithm, protocol, ctx)


def nccl_latency_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
    """NCCL's latency of one collective call (seconds), before any byte moves."""
    base = _BASE_US[algorithm][PROTOCOL_INDEX[protocol]]
    ppn, m = ctx.ranks_per_node, ctx.num_nodes
    intra = _hw_us(ctx.intra, algorithm, protocol)
    inter = _inter_us(algorithm, protocol, ctx)
    match algorithm:
        case "ring" | "chain" | "hierarchical":
            us = base + _ring_us("ring", protocol, ctx)
        case "tree":
            us = base + 2 * ((ppn - 1) * intra + _log2i(m) * inter)
        case "nvls":
            us = intra + (inter if m > 1 else 0.0)
        case "nvls_tree":
            us = base + intra + 2 * _log2i(m) * inter
        case "collnet":
            us = base + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter
        case "pat":
            us = base + _log2i(m) * inter / 3.5 + ctx.num_ranks * 2.8
        case "direct":
            # grouped send/receive: one proxy operation per peer, one network round trip
            us = base + _hw_us(ctx.intra, "ring", protocol) + (inter if m > 1 else 0.0)
            us += (ctx.num_ranks - 1) * _NET_OVERHEAD_US * (1 if m > 1 else 0)
        case _:
            assert_never(algorithm)
    return us * 1e-6
