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
* **nvls_tree**: NVLS inside each node, then one double binary tree per local GPU position
  (rail) between the nodes, each carrying 1/k of the data; the stages pipeline.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.edges import edge_traffic, merge, uniform_blocks
from clusterforge.netsim.traffic import Traffic, empty_ids, empty_segments
from clusterforge.topology import FabricGraph

__all__ = ["dtree_parents", "nvls_phases", "nvls_possible", "nvls_tree_phases", "tree_phases"]


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
    """Double binary tree between nodes, chain inside each node; all_reduce only."""
    m, k = _node_shape(graph, seq, "tree", 1)
    return [_dtree(graph, seq, m, k, 1.0)]


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


def nvls_tree_phases(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    """NVLS inside each node, one tree per rail between nodes (each 1/k of the data)."""
    ng = seq.shape[0]
    m, k = _node_shape(graph, seq, "nvls_tree", 2)
    local = seq.reshape(ng * m, k)
    if not graph.nvls or not nvls_possible(graph, local):
        raise SimulationError(
            f"algorithm nvls_tree: needs NVLink SHARP inside each node ({graph.scaleup} has "
            f"{'it' if graph.nvls else 'none'}); use ring or auto"
        )
    rails = seq.reshape(ng, m, k).transpose(0, 2, 1).reshape(ng * k, m)
    inter = _dtree(graph, rails, m, 1, 1.0 / k)
    return [replace(p, pipelined=True) for p in (_nvls_traffic(local), inter)]
