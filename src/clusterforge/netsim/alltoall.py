"""All-to-all as direct exchange: every ordered pair (i, j), i ≠ j, of a group moves S/n.

* Pairs inside one scale-up domain cross NVLink (one demand per pair).
* Without PXN each GPU sends through its own NIC to the peer's NIC, one connection (and one
  hashed flow) per pair.
* With PXN (NCCL 2.12 and later, NVIDIA technical blog "Doubling all2all Performance with
  NVIDIA Collective Communication Library 2.12", 2022; default on rail-optimized fabrics; forced on rail-only fabrics, which
  have no path between rails) a GPU hands the message over NVLink to the local GPU on the
  destination's rail, and that proxy sends it.  All sources of one node then share the
  proxy's connection to the destination, so the fabric flow is (source node, destination GPU)
  and carries the messages of every group member on that node: we model it as one demand
  whose NVLink legs each carry their member's share.  This is also what keeps a 2,048-GPU
  all-to-all to ~n²/8 demands.
* On a multi-plane fabric (NIC i in plane i mod P, planes share no switch) a pair whose
  NICs sit in different planes has no network path: without PXN the source still hands its
  message over NVLink to the local GPU of the NIC in the destination's plane (the sibling of
  its own NIC, ``own − own mod P + dst mod P``), which sends it, one connection per pair.
  With PXN every fabric flow already joins two NICs of one rail, hence of one plane.
* Across nodes NCCL moves each message in chunks (``p2p_net_chunk_bytes``), and every chunk
  is a post and a test of one host thread per GPU, the proxy (``sendProxyProgress`` /
  ``recvProxyProgress``, ``src/transport/net.cc``, NVIDIA/nccl v2.28.7-1), which NCCL's tuner
  prices at ``getNetOverhead`` (``net_overhead_us``).  With PXN a GPU's proxy posts the
  chunks its node's GPUs send to peers on its rail, as many as its own, so the busiest proxy
  serves 2 x network peers x chunks per peer operations per call, one at a time
  (:func:`proxy_serial_s`).
"""

from __future__ import annotations

import math

import numpy as np

from clusterforge.constants import read_constants
from clusterforge.errors import SimulationError
from clusterforge.netsim.routing import NetSegments
from clusterforge.netsim.traffic import Traffic
from clusterforge.topology import FabricGraph

__all__ = ["MAX_PAIRS", "direct_all_to_all", "p2p_net_steps", "proxy_serial_s"]

_NCCL = read_constants("clusterforge.netsim", "nccl.toml")
_P2P_NET_CHUNK_BYTES = _NCCL.integer("p2p_net_chunk_bytes")
_P2P_NET_PARTS_MAX = _NCCL.integer("p2p_net_parts_max")
_NET_OVERHEAD_S = _NCCL.number("net_overhead_us") * 1e-6

MAX_PAIRS = 6_000_000  # ~2,400 GPUs in one group; beyond that memory passes a few GiB


def _pairs(seq: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ng, n = seq.shape
    if ng * n * (n - 1) > MAX_PAIRS:
        raise SimulationError(
            f"collective all_to_all: {ng} group(s) of {n} GPUs make {ng * n * (n - 1):,} "
            f"flows (limit {MAX_PAIRS:,}); simulate fewer GPUs or expert-parallel "
            "sized groups"
        )
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    row = np.repeat(np.arange(ng), i.size)
    return row, seq[:, i].ravel(), seq[:, j].ravel()


def direct_all_to_all(graph: FabricGraph, seq: np.ndarray, pxn: bool) -> list[Traffic]:
    """Traffic of a direct all-to-all over groups ``seq`` (num_groups, n)."""
    n = seq.shape[1]
    row, src, dst = _pairs(seq)
    net = graph.domain_of(src) != graph.domain_of(dst)
    use_pxn = (pxn or graph.kind == "rail-only") and graph.scaleup_class in ("nvlink", "xgmi")
    local = int((~net).sum())
    intra_s, intra_d = [src[~net]], [dst[~net]]
    intra_o, intra_w = [np.arange(local)], [np.ones(local)]
    s, d, r = src[net], dst[net], row[net]
    gpn = graph.gpus_per_node
    dst_nic, own_nic = graph.nic_of_local(d % gpn), graph.nic_of_local(s % gpn)
    if use_pxn:
        key = (r * graph.num_nodes + s // gpn) * graph.num_gpus + d
        _, first, owner, count = np.unique(
            key, return_index=True, return_inverse=True, return_counts=True
        )
        proxy = (s // gpn) * gpn + -(-dst_nic * gpn // graph.nics_per_node)
        hop = own_nic != dst_nic
        intra_s.append(s[hop])
        intra_d.append(proxy[hop])
        intra_o.append(local + owner[hop])
        intra_w.append(1.0 / count[owner[hop]])
        f = first
        segs = NetSegments(s[f] // gpn, dst_nic[f], d[f] // gpn, dst_nic[f], key[f], proxy[f], d[f])
        net_volume = count / n
    else:
        planes = graph.num_planes
        src_nic = own_nic - own_nic % planes + dst_nic % planes
        proxy = (s // gpn) * gpn + -(-src_nic * gpn // graph.nics_per_node)
        hop = src_nic != own_nic
        intra_s.append(s[hop])
        intra_d.append(proxy[hop])
        intra_o.append(local + np.flatnonzero(hop))
        intra_w.append(np.ones(int(hop.sum())))
        key = s * graph.num_gpus + d
        segs = NetSegments(s // gpn, src_nic, d // gpn, dst_nic, key, np.where(hop, proxy, s), d)
        net_volume = np.full(s.size, 1.0 / n)
    volume = np.concatenate([np.full(local, 1.0 / n), net_volume])
    net_demand = local + np.arange(net_volume.size)
    cat = np.concatenate
    return [
        Traffic(
            "direct",
            cat(intra_s),
            cat(intra_d),
            cat(intra_o),
            segs,
            net_demand,
            volume,
            n - 1,
            cat(intra_w),
        )
    ]


def p2p_net_steps(message_bytes: float, step_bytes: int = _P2P_NET_CHUNK_BYTES) -> int:
    """Chunks of one message to a network peer (``addP2pToPlan``, ``src/enqueue.cc``): one
    channel, doubled while a part exceeds one step, each part cut into chunks of a step, a
    half step under 8 steps, a quarter under one."""
    parts = 1
    while message_bytes / parts > step_bytes and parts * 2 <= _P2P_NET_PARTS_MAX:
        parts *= 2
    chunk = step_bytes
    if message_bytes < step_bytes:
        chunk //= 4
    elif message_bytes < 8 * step_bytes:
        chunk //= 2
    return parts * max(1, math.ceil(message_bytes / parts / chunk))


def proxy_serial_s(graph: FabricGraph, seq: np.ndarray, size_bytes: float) -> float:
    """Seconds the busiest proxy spends on a direct all-to-all of ``size_bytes`` per rank over
    groups ``seq`` (num_groups, n): a send and a receive per chunk to each peer outside the
    GPU's scale-up domain, at NCCL's price of a network operation (0 inside one domain)."""
    ng, n = seq.shape
    dom = graph.domain_of(seq)
    rel = dom - dom.min(axis=1, keepdims=True)
    width = int(rel.max()) + 1
    counts = np.bincount((np.arange(ng)[:, None] * width + rel).ravel(), minlength=ng * width)
    share = counts.reshape(ng, width)
    peers = n - int(share[share > 0].min())
    if peers == 0:
        return 0.0
    return float(2 * peers * p2p_net_steps(size_bytes / n) * _NET_OVERHEAD_S)
