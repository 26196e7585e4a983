"""Tree-shaped all-reduce traffic: NCCL's double binary tree, NVLink SHARP, and both together.

* **tree**: NCCL's double binary tree between nodes (Sanders, Speck & Träff, "Two-tree
  algorithms for full bandwidth broadcast, reduction and scan", Parallel Computing 35(12),
  2009), with a chain through the GPUs of each node.  Tree 1 is NCCL's ``ncclGetBtree``: the
  parent of node r (r > 0) is ``(r ^ b) | (b << 1)`` with b the lowest set bit of r, or
  ``r ^ b`` when that is past the last node, so odd nodes are leaves.  Tree 2 mirrors tree 1
  (even node count) or shifts it by one (odd), so every node is a leaf in one tree (NCCL's
  ``ncclGetDtree``, ``src/graph/trees.cc``).  Each tree carries half the data, reduced up and
  broadcast down: a node interior in one tree (parent and two children: 3 edges of S/2) and a
  leaf in the other (1 edge of S/2) moves 2·S over its NICs in each direction, so on 3+ nodes the tree's bus bandwidth stays below the node's NIC rate
  (2(n−1)/n · S / (2·S / B) ≈ B).  On 2 nodes each node moves only S and the tree's bus
  bandwidth can reach about twice the ring's, which is why NCCL models 2-node trees with its
  intra-node bandwidth; its channels (one per NIC) must carry that rate too, and NCCL holds
  each to a per-channel ceiling (:func:`~clusterforge.netsim.tuner.channel_cap_gbyte_per_s`),
  so with one NIC per two GPUs the 2-node tree stays near the NICs' rate.
* **nvls**: NVLink SHARP inside one NVSwitch domain: each GPU sends S to the switch, which
  reduces, and receives S back (NVIDIA Hopper architecture whitepaper, NVLink SHARP).
* **nvls_tree**: NVLS inside each node, then one double binary tree per NVLS *head* between
  the nodes, each head carrying 1/H of the data through its own NIC; the stages pipeline.
  The heads are the channels of NCCL's NVLS graph: GPUs with a NIC of their own, at most
  ``NCCL_MAX_NVLS_ARITY`` (32) of them (``ncclTopoCompute`` in ``src/graph/search.cc``,
  ``connectNvls`` in ``src/graph/connect.cc``, NVIDIA/nccl v2.26.2-1).
* **multi-node NVLink** (MNNVL, GB200 NVL72): when the NVLink domain spans several nodes
  (trays), NCCL fuses the topologies of the whole clique into one (``ncclTopoGetSystem`` in
  ``src/graph/topo.cc``: "MNNVL clique support"), so its *node* is the NVLink domain and
  ``nNodes`` counts domains (racks).  Across racks NVLS-Tree then runs NVLS over the rack's
  NVLink switches and the trees between racks over the heads' NICs: min(32, the rack's
  NICs) of them, so 2 racks run close to 1 rack instead of funnelling through one tray's
  NICs.  The plain tree (NVLS off, ``NCCL_NVLS_ENABLE=0``) has the rack as its node too
  (:func:`rack_tree`): a chain through the rack's 72 GPUs over NVLink and one double binary
  tree between racks per channel of NCCL's graph (``domains.rack_channels``, 15 on an NVL72
  rack), each from its own GPU and NIC; where the racks hold different numbers of the
  group's GPUs (72 + 56), a chain of each rack's own length (:func:`uneven_rack_tree`).
  So has the ring (:func:`rack_ring`): each channel
  runs through the rack's GPUs over NVLink and on to the next rack through its own NIC, also
  where the group holds different numbers of GPUs in its racks (the channels are then those
  of the rack with the fewest of the group's NICs: NCCL keeps the minimum over its ranks).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from clusterforge.constants import read_constants
from clusterforge.errors import SimulationError
from clusterforge.netsim.domains import (
    clique_tree_channels,
    domain_blocks,
    domain_split,
    mnnvl,
    nic_count,
    nic_positions,
    rack_channels,
    ring_channels,
    uneven_split,
)
from clusterforge.netsim.edges import edge_traffic, merge, uniform_blocks
from clusterforge.netsim.traffic import Traffic, empty_ids, empty_segments
from clusterforge.netsim.vocab import Algorithm
from clusterforge.topology import FabricGraph

__all__ = [
    "NVLS_MAX_HEADS",
    "domain_blocks",
    "domain_split",
    "dtree_parents",
    "mnnvl",
    "nvls_heads",
    "nvls_phases",
    "nvls_possible",
    "nvls_tree_phases",
    "rack_channels",
    "rack_ring",
    "ring_channels",
    "tree_phases",
    "uneven_rack_tree",
]

# NCCL's NVLS graph keeps at most this many heads per node (data/nccl.toml).
NVLS_MAX_HEADS = read_constants("clusterforge.netsim", "nccl.toml").integer("nvls_max_heads")


def _btree_parents(m: int) -> np.ndarray:
    """Parent of nodes 1..m-1 in NCCL's binary tree over m nodes (node 0 is the root)."""
    r = np.arange(1, m)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    return np.where(up >= m, r ^ bit, up)


def dtree_parents(m: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(children, parents) of NCCL's two complementary trees over m nodes."""
    child1 = np.arange(1, m)
    parent1 = _btree_parents(m)
    if m % 2 == 0:  # mirror: node r plays node m-1-r of tree 1
        return (child1, parent1), (m - 1 - child1, m - 1 - parent1)
    return (child1, parent1), ((child1 + 1) % m, (parent1 + 1) % m)  # shift by one


def _dtree(graph: FabricGraph, seq: np.ndarray, m: int, k: int, share: float) -> Traffic:
    """Both trees over the m node blocks of k GPUs of every row, each carrying ``share``/2,
    up and down, plus the chain through each block."""
    ng, n = seq.shape
    chain = np.arange(n).reshape(m, k)[:, :-1].ravel() if k > 1 else empty_ids()
    parts = []
    for child, parent in dtree_parents(m):
        src_pos = np.concatenate([child * k, parent * k, chain, chain + 1])
        dst_pos = np.concatenate([parent * k, child * k, chain + 1, chain])
        e = edge_traffic(graph, seq, src_pos, dst_pos, per_edge=False)
        volume = np.full(ng * e.num_channels, share / 2 / e.num_channels)
        steps = 2 * (int(np.ceil(np.log2(m))) + k - 1)
        parts.append(
            Traffic(
                "tree",
                e.intra_src,
                e.intra_dst,
                e.intra_owner,
                e.net,
                e.net_owner,
                volume,
                steps,
            )
        )
    return merge(parts)


def _node_shape(graph: FabricGraph, seq: np.ndarray, name: str, min_k: int) -> tuple[int, int]:
    k = uniform_blocks(graph, seq)
    m = seq.shape[1] // k if k else 0
    if m < 2 or k < min_k:
        raise SimulationError(
            f"algorithm {name}: needs groups spanning 2+ nodes with the same number "
            f"(at least {min_k}) of GPUs on each; use ring or auto"
        )
    return m, k


def tree_phases(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    """Double binary tree between nodes, chain inside each node; all_reduce only.  Under
    MNNVL the node is the NVLink domain (:func:`rack_tree`), also where the group holds
    different numbers of GPUs in its domains (:func:`uneven_rack_tree`)."""
    if mnnvl(graph):
        ordered, k = domain_blocks(graph, seq)
        if k and seq.shape[1] // k >= 2:
            return [rack_tree(graph, ordered, seq.shape[1] // k, k)]
        split = uneven_split(graph, seq)
        if split is not None:
            return [uneven_rack_tree(graph, *split)]
    m, k = _node_shape(graph, seq, "tree", 1)
    return [_dtree(graph, seq, m, k, 1.0)]


def rack_tree(graph: FabricGraph, seq: np.ndarray, m: int, k: int) -> Traffic:
    """NCCL's tree with the NVLink domain as its node (MNNVL): inside each of the m
    domains the k GPUs form a chain over NVLink (``ncclTopoPreset``, ``src/graph/connect.cc``:
    a GPU's tree parent and child are its neighbours in the channel's intra order), which
    carries S up and S down; between domains each of NCCL's C channels runs the double
    binary tree from its own GPU and NIC (the channel's ``inter`` NIC), with 1/C of the
    data.  ``seq`` is ordered domain by domain."""
    ng = seq.shape[0]
    local = seq.reshape(ng * m, k)
    chain = np.arange(k - 1)
    src, dst = np.concatenate([chain, chain + 1]), np.concatenate([chain + 1, chain])
    e = edge_traffic(graph, local, src, dst, per_edge=False)
    volume = np.full(local.shape[0] * e.num_channels, 1.0 / e.num_channels)
    intra = Traffic("tree", e.intra_src, e.intra_dst, e.intra_owner, e.net, e.net_owner, volume, 0)
    heads = nic_positions(graph, local[0], rack_channels(graph))
    rails = seq.reshape(ng, m, k)[:, :, heads].transpose(0, 2, 1).reshape(ng * heads.size, m)
    inter = _dtree(graph, rails, m, 1, 1.0 / heads.size)
    return replace(merge([intra, inter]), steps=2 * (int(np.ceil(np.log2(m))) + k - 1))


def uneven_rack_tree(graph: FabricGraph, ordered: np.ndarray, counts: np.ndarray) -> Traffic:
    """NCCL's tree of cliques (:func:`rack_tree`) over domains holding different numbers
    ``counts`` of the group's GPUs (``ordered`` domain by domain): a chain through each
    domain's own GPUs, and between the domains one double binary tree per channel
    (:func:`~clusterforge.netsim.domains.clique_tree_channels`), each from its own GPU and
    NIC in every domain with 1/C of the data.  NCCL's node is the clique whatever its size
    (:func:`~clusterforge.netsim.domains.uneven_split`); the first chunk climbs the longest
    chain."""
    ng = ordered.shape[0]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    parts = []
    for s, k in zip(starts, counts, strict=True):
        local = ordered[:, s : s + k]
        chain = np.arange(int(k) - 1)
        src, dst = np.concatenate([chain, chain + 1]), np.concatenate([chain + 1, chain])
        e = edge_traffic(graph, local, src, dst, per_edge=False)
        volume = np.full(ng * e.num_channels, 1.0 / e.num_channels)
        parts.append(
            Traffic("tree", e.intra_src, e.intra_dst, e.intra_owner, e.net, e.net_owner, volume, 0)
        )
    h = clique_tree_channels(graph, ordered[0], counts)
    blocks = [ordered[0, s : s + k] for s, k in zip(starts, counts, strict=True)]
    heads = np.stack([s + nic_positions(graph, b, h) for s, b in zip(starts, blocks, strict=True)])
    rails = ordered[:, heads.T].reshape(ng * heads.shape[1], counts.size)
    inter = _dtree(graph, rails, counts.size, 1, 1.0 / heads.shape[1])
    steps = 2 * (int(np.ceil(np.log2(counts.size))) + int(counts.max()) - 1)
    return replace(merge([*parts, inter]), steps=steps)


def rack_ring(
    graph: FabricGraph,
    seq: np.ndarray,
    per_edge_volume: float,
    steps: int,
    algorithm: Algorithm,
    *,
    closed: bool = True,
    reverse: bool = False,
) -> Traffic | None:
    """NCCL's ring with the NVLink domain as its node (MNNVL), or None when ``seq`` does not
    span 2+ domains with the same split over them in every group.  The ring graph is searched
    on the fused domain (``ncclTopoCompute``, ``src/graph/search.cc``): each of its C
    channels (:func:`ring_channels`, 15 on an NVL72 rack) runs through the group's GPUs of a
    domain over NVLink and crosses to the next domain through its own NIC.  Inside each
    domain its GPUs form a chain that carries every channel (``per_edge_volume`` per GPU, as
    on any ring); between domains channel c goes from the c-th NIC GPU of one domain to that
    of the next with 1/C of the data.  The domains may hold different numbers of the group's
    GPUs (72 + 56 GPUs of two racks): NCCL builds rings across nodes of any size, so only
    the chains' lengths differ.  ``closed`` False is the open chain of a broadcast or reduce
    on the same ring graph (no hop from the last domain back to the first; ``reverse``
    toward the root for reduce)."""
    split = domain_split(graph, seq)
    if split is None or split[1].size < 2:
        return None
    ordered, counts = split
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    parts = []
    for k in np.unique(counts[counts >= 2]):
        cols = np.concatenate([s + np.arange(k) for s in starts[counts == k]])
        local = ordered[:, cols].reshape(-1, int(k))
        chain = np.arange(int(k) - 1)
        e = edge_traffic(graph, local, chain, chain + 1, per_edge=False)
        volume = np.full(local.shape[0] * e.num_channels, per_edge_volume / e.num_channels)
        parts.append(
            Traffic(
                algorithm, e.intra_src, e.intra_dst, e.intra_owner, e.net, e.net_owner, volume, 0
            )
        )
    parts.append(_rack_hops(graph, ordered, counts, per_edge_volume, algorithm, closed, reverse))
    return replace(merge(parts), steps=steps)


def _rack_hops(
    graph: FabricGraph,
    ordered: np.ndarray,
    counts: np.ndarray,
    per_edge_volume: float,
    algorithm: Algorithm,
    closed: bool,
    reverse: bool,
) -> Traffic:
    """The domain-to-domain hops of :func:`rack_ring`: channel c from the c-th NIC GPU of
    one domain to that of the next (of the previous with ``reverse``; no hop back to the
    first domain unless ``closed``), 1/C of the data each."""
    ng = ordered.shape[0]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    blocks = [ordered[0, s : s + k] for s, k in zip(starts, counts, strict=True)]
    # one head per channel, each on its own NIC: no more than the fewest NICs of a domain
    h = min([ring_channels(graph, ordered[0], counts)] + [nic_count(graph, b) for b in blocks])
    m = counts.size
    heads = np.stack(
        [s + nic_positions(graph, b, h) for s, b in zip(starts, blocks, strict=True)]
    )  # (m, C): the columns of each domain's channel GPUs
    rails = ordered[:, heads.T].reshape(ng * heads.shape[1], m)
    src = np.arange(m if closed else m - 1)
    dst = (src + 1) % m
    if reverse:
        src, dst = dst, src
    r = edge_traffic(graph, rails, src, dst, per_edge=False)
    share = per_edge_volume / heads.shape[1] / r.num_channels
    # each domain's search picks its channel's NIC: the next domain receives on its own
    # channel GPU's NIC, not on the sender's NIC index (the two differ when the domains
    # hold different GPUs of the group)
    net = replace(r.net, dst_nic=graph.nic_of_local(r.net.dst_gpu % graph.gpus_per_node))
    volume = np.full(rails.shape[0] * r.num_channels, share)
    return Traffic(algorithm, r.intra_src, r.intra_dst, r.intra_owner, net, r.net_owner, volume, 0)


def nvls_possible(graph: FabricGraph, seq: np.ndarray) -> bool:
    """NVLS needs NVLink SHARP hardware and each group inside one scale-up domain."""
    dom = graph.domain_of(seq)
    return graph.nvls and bool(np.all(dom == dom[:, :1]))


def _nvls_traffic(seq: np.ndarray) -> Traffic:
    ng, n = seq.shape
    demand = np.repeat(np.arange(ng), n)
    flat = seq.ravel()
    return Traffic("nvls", flat, flat, demand, empty_segments(), empty_ids(), np.ones(ng), 2)


def nvls_phases(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    if not nvls_possible(graph, seq):
        raise SimulationError(
            f"algorithm nvls: needs NVLink SHARP ({graph.scaleup} has "
            f"{'it' if graph.nvls else 'none'}) and every group inside one NVLink domain of "
            f"{graph.domain_gpus} GPUs; use ring or auto"
        )
    return [_nvls_traffic(seq)]


def nvls_heads(graph: FabricGraph, block: np.ndarray) -> np.ndarray:
    """Positions in a node block (one NCCL node's GPUs, in order) of its NVLS heads: one GPU
    per distinct NIC, at most ``NVLS_MAX_HEADS``, spread evenly over the block."""
    return nic_positions(graph, block, NVLS_MAX_HEADS)


def _nccl_nodes(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(seq ordered by NCCL node, nodes m, GPUs per node k) for NVLS-Tree: the NVLink
    domain under MNNVL, else the node."""
    if mnnvl(graph):
        ordered, k = domain_blocks(graph, seq)
        m = seq.shape[1] // k if k else 0
        if m < 2 or k < 2:
            raise SimulationError(
                "algorithm nvls_tree: needs groups spanning 2+ NVLink domains with the same "
                "number (at least 2) of GPUs in each; use ring or auto"
            )
        return ordered, m, k
    m, k = _node_shape(graph, seq, "nvls_tree", 2)
    return seq, m, k


def nvls_tree_phases(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    """NVLS inside each NCCL node, one tree per NVLS head between the nodes (each 1/H of
    the data, through the head's own NIC)."""
    ng = seq.shape[0]
    seq, m, k = _nccl_nodes(graph, seq)
    local = seq.reshape(ng * m, k)
    if not graph.nvls or not nvls_possible(graph, local):
        raise SimulationError(
            f"algorithm nvls_tree: needs NVLink SHARP inside each node ({graph.scaleup} has "
            f"{'it' if graph.nvls else 'none'}); use ring or auto"
        )
    heads = nvls_heads(graph, local[0])
    rails = seq.reshape(ng, m, k)[:, :, heads].transpose(0, 2, 1).reshape(ng * heads.size, m)
    inter = _dtree(graph, rails, m, 1, 1.0 / heads.size)
    return [replace(p, pipelined=True) for p in (_nvls_traffic(local), inter)]
