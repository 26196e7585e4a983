"""Building blocks of collective traffic: ring order, node blocks, edges over channels.

An *edge* is one hop of an algorithm from a GPU to the next (ring neighbour, tree parent).
Edges inside a scale-up domain become intra segments; edges between domains leave through a
NIC: channel c of a node block uses the NIC of the block's c-th member (rail-aligned, NIC c
to NIC c), so that C channels spread a node's traffic over C NICs, as NCCL's channels do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.netsim.routing import NetSegments
from clusterforge.netsim.traffic import Traffic, empty_ids
from clusterforge.topology import FabricGraph

__all__ = ["EdgeTraffic", "edge_traffic", "merge", "ring_order", "uniform_blocks"]


@dataclass(frozen=True)
class _Blocks:
    """Per position of an ordered group: start (flat index) and length of its node block."""

    start: np.ndarray
    length: np.ndarray


def ring_order(graph: FabricGraph, groups: np.ndarray) -> np.ndarray:
    """Members of each group ordered node by node (nodes in order of first appearance,
    rank order inside a node): NCCL keeps a ring's intra-node hops on NVLink."""
    ng, n = groups.shape
    node = groups // graph.gpus_per_node
    key = (np.arange(ng)[:, None] * graph.num_nodes + node).ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    first_pos = first[inverse].reshape(ng, n) - np.arange(ng)[:, None] * n
    order = np.argsort(first_pos * n + np.arange(n), axis=1, kind="stable")
    return np.take_along_axis(groups, order, axis=1)


def _blocks(graph: FabricGraph, seq: np.ndarray) -> _Blocks:
    node = seq // graph.gpus_per_node
    new = np.ones(node.shape, bool)
    new[:, 1:] = node[:, 1:] != node[:, :-1]
    flat_new = new.ravel()
    starts = np.flatnonzero(flat_new)
    lengths = np.diff(np.append(starts, flat_new.size))
    run = np.cumsum(flat_new) - 1
    return _Blocks(starts[run].reshape(seq.shape), lengths[run].reshape(seq.shape))


@dataclass(frozen=True)
class EdgeTraffic:
    """Segments of a set of edges; a segment's owner is its demand: (row·C + channel), or
    the edge index when every edge is its own demand."""

    intra_src: np.ndarray
    intra_dst: np.ndarray
    intra_owner: np.ndarray
    net: NetSegments
    net_owner: np.ndarray
    num_channels: int


def edge_traffic(
    graph: FabricGraph,
    seq: np.ndarray,
    src_pos: np.ndarray,
    dst_pos: np.ndarray,
    *,
    per_edge: bool,
) -> EdgeTraffic:
    """Segments of edges seq[:, src_pos] -> seq[:, dst_pos] over C channels, C = the NICs a
    node block can use (at most its GPUs and the node's NICs)."""
    ng = seq.shape[0]
    blocks = _blocks(graph, seq)
    src, dst = seq[:, src_pos], seq[:, dst_pos]
    net = graph.domain_of(src) != graph.domain_of(dst)
    channels = int(min(blocks.length.max(), graph.nics_per_node)) if net.any() else 1
    edge = np.arange(src.size).reshape(src.shape)
    row = np.repeat(np.arange(ng), src_pos.size).reshape(src.shape)
    start, length = blocks.start[:, src_pos], blocks.length[:, src_pos]
    parts: dict[str, list[np.ndarray]] = {
        k: [] for k in ("is", "id", "io", "sn", "si", "dn", "di", "key", "no", "sg", "dg")
    }
    flat_seq = seq.ravel()
    for c in range(channels):
        owner = edge if per_edge else row * channels + c
        intra = ~net
        parts["is"].append(src[intra])
        parts["id"].append(dst[intra])
        parts["io"].append(owner[intra])
        member = flat_seq[start[net] + (c * length[net]) // channels]
        nic = graph.nic_of_local(member % graph.gpus_per_node)
        s, d = src[net], dst[net]
        parts["sn"].append(s // graph.gpus_per_node)
        parts["si"].append(nic)
        parts["dn"].append(d // graph.gpus_per_node)
        parts["di"].append(nic)
        parts["key"].append((s * graph.num_gpus + d) * channels + c)
        parts["no"].append(owner[net])
        parts["sg"].append(s)
        parts["dg"].append(d)
    cat = {k: np.concatenate(v) if v else empty_ids() for k, v in parts.items()}
    segs = NetSegments(cat["sn"], cat["si"], cat["dn"], cat["di"], cat["key"], cat["sg"], cat["dg"])
    return EdgeTraffic(cat["is"], cat["id"], cat["io"], segs, cat["no"], channels)


def uniform_blocks(graph: FabricGraph, seq: np.ndarray) -> int:
    """GPUs per node of every group when all nodes hold the same number, else 0."""
    length = _blocks(graph, seq).length
    k = int(length[0, 0])
    ok = bool(np.all(length == k)) and seq.shape[1] % k == 0
    return k if ok else 0


def merge(parts: list[Traffic]) -> Traffic:
    """Concatenate phases that run at the same time (demand ids renumbered)."""
    offs = np.cumsum([0] + [p.volume.size for p in parts])
    cat = np.concatenate
    net = NetSegments(
        *(
            cat([getattr(p.net, f) for p in parts])
            for f in ("src_node", "src_nic", "dst_node", "dst_nic", "key", "src_gpu", "dst_gpu")
        )
    )
    return Traffic(
        parts[0].algorithm,
        cat([p.intra_src for p in parts]),
        cat([p.intra_dst for p in parts]),
        cat([p.intra_demand + o for p, o in zip(parts, offs, strict=False)]),
        net,
        cat([p.net_demand + o for p, o in zip(parts, offs, strict=False)]),
        cat([p.volume for p in parts]),
        max(p.steps for p in parts),
        cat([p.weights() for p in parts]),
    )
