"""Collectives decomposed into flows the way NCCL runs them (vectorized over all groups).

Every builder returns one or more :class:`Traffic` phases; phases run one after the other,
the groups inside a phase run concurrently and share links.  Volumes are bytes moved per
demand per byte of the nccl-tests ``size`` (so one solve serves every message size).

* **ring** (NCCL's default for bandwidth): GPUs ordered node by node; one ring per channel,
  each channel leaving a node through its own NIC (rail-aligned: NIC c to NIC c), so a node's
  NICs all carry traffic.  Ring all-reduce moves 2(n−1)/n·S per edge, all-gather and
  reduce-scatter (n−1)/n·S (nccl-tests PERFORMANCE.md derivation).
* **tree**: NCCL's double binary tree between nodes (two complementary trees, each carrying
  half the data; Sanders, Speck & Träff 2009, adopted by NCCL 2.4 [U: from memory]) with a
  chain inside each node.
* **hierarchical**: reduce-scatter inside the node, all-reduce of S/k between the GPUs with
  the same position on every node (k rail rings), all-gather inside the node.  The three
  phases are *pipelined*: like NCCL's own multi-stage algorithms, the buffer is cut into
  chunks (:data:`~clusterforge.netsim.model.PIPELINE_CHUNK_BYTES`) and a chunk moves to the
  next stage as soon as it is done, so the time is the slowest stage plus one chunk of the
  others (:func:`~clusterforge.netsim.model.pipelined_time_s`), but never less than the
  busiest link needs for all three stages together (stages overlap only on disjoint links:
  NVLink vs NICs; inside one NVL72 domain, or on a PCIe GPU's x16 link, they share).
* **ring on a full mesh** (MI300X xGMI, no switch): one ring would use one 64 GB/s peer link
  per hop, so RCCL runs several rings over different GPU orders [U: RCCL's exact ring
  search not re-checked].  We run the stride-c rings ``0, c, 2c, ...`` for every c coprime
  with the group size: each is Hamiltonian and they use pairwise disjoint directed peer
  links (8 GPUs: c = 1, 3, 5, 7, four rings), the data split evenly over them.
* **nvls**: NVLink SHARP; each GPU sends S to the NVSwitch and receives S back.
* **direct** (all-to-all): every ordered pair exchanges S/n; with PXN (NCCL ≥ 2.12 on
  rail-optimized fabrics [U: version from memory]; performance.md §1.2 SimCCL models PXN) the message first crosses NVLink to the local GPU on the
  destination's rail, so the fabric only carries rail-local traffic.
* **chain** (broadcast, reduce) and **pairs** (sendrecv: rank i sends S to rank i+1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.alltoall import direct_all_to_all
from clusterforge.netsim.routing import NetSegments
from clusterforge.netsim.traffic import Traffic, empty_ids, empty_segments
from clusterforge.topology import FabricGraph

__all__ = ["ALGORITHMS", "Traffic", "build_phases", "candidate_algorithms"]

ALGORITHMS = ("auto", "ring", "tree", "nvls", "hierarchical", "direct")

_NVLS_MIN_GPUS = 5  # NCCL picks NVLS only above 4 GPUs on H200 (operations.md §15)


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


def _edge_traffic(
    graph: FabricGraph,
    seq: np.ndarray,
    src_pos: np.ndarray,
    dst_pos: np.ndarray,
    per_edge: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, NetSegments, np.ndarray, int]:
    """Segments of edges seq[:, src_pos] -> seq[:, dst_pos] over C channels.

    Returns (intra_src, intra_dst, intra_owner, net arrays..., net_owner, C) where owner is
    (row·C + channel) or, with ``per_edge``, the edge index (one demand per edge)."""
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
    return cat["is"], cat["id"], cat["io"], segs, cat["no"], channels


def _ring_like(
    graph: FabricGraph,
    seq: np.ndarray,
    *,
    closed: bool,
    per_edge_volume: float,
    algorithm: str,
    steps: int,
    reverse: bool = False,
    per_edge: bool = False,
) -> Traffic:
    n = seq.shape[1]
    src_pos = np.arange(n if closed else n - 1)
    dst_pos = (src_pos + 1) % n
    if reverse:
        src_pos, dst_pos = dst_pos, src_pos
    i_s, i_d, i_o, net, n_o, channels = _edge_traffic(graph, seq, src_pos, dst_pos, per_edge)
    num_demands = seq.shape[0] * (src_pos.size if per_edge else channels)
    share = 1.0 if per_edge else 1.0 / channels
    volume = np.full(num_demands, per_edge_volume * share)
    return Traffic(algorithm, i_s, i_d, i_o, net, n_o, volume, steps)


def _ring(graph: FabricGraph, seq: np.ndarray, per_edge_volume: float, steps: int) -> Traffic:
    """A closed ring; over a full-mesh domain, the disjoint stride rings (module docstring)."""
    n = seq.shape[1]
    dom = graph.domain_of(seq)
    if not (graph.mesh and n >= 3 and bool(np.all(dom == dom[:, :1]))):
        return _ring_like(
            graph, seq, closed=True, per_edge_volume=per_edge_volume, algorithm="ring", steps=steps
        )
    strides = [c for c in range(1, n) if math.gcd(c, n) == 1]
    share = per_edge_volume / len(strides)
    return _merge(
        [
            _ring_like(
                graph,
                seq[:, (np.arange(n) * c) % n],
                closed=True,
                per_edge_volume=share,
                algorithm="ring",
                steps=steps,
            )
            for c in strides
        ]
    )


def _uniform_blocks(graph: FabricGraph, seq: np.ndarray) -> int:
    """GPUs per node of every group when all nodes hold the same number, else 0."""
    length = _blocks(graph, seq).length
    k = int(length[0, 0])
    ok = bool(np.all(length == k)) and seq.shape[1] % k == 0
    return k if ok else 0


def _tree(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    """Double binary tree between nodes, chain inside each node; all_reduce only."""
    ng, n = seq.shape
    k = _uniform_blocks(graph, seq)
    m = n // k if k else 0
    if m < 2:
        raise SimulationError(
            "--algorithm tree: needs groups spanning 2+ nodes with the same GPUs per node; "
            "use ring or auto"
        )
    nodes = np.arange(1, m)
    parent1 = (nodes - 1) // 2
    child2 = m - 1 - nodes  # tree 2 mirrors tree 1: its root is the last node
    parent2 = m - 1 - parent1
    traffics = []
    for child, parent in ((nodes, parent1), (child2, parent2)):
        # positions of the block heads; up and down edges, plus the chains inside each node
        heads_c, heads_p = child * k, parent * k
        chain = np.arange(n).reshape(m, k)[:, :-1].ravel() if k > 1 else empty_ids()
        src_pos = np.concatenate([heads_c, heads_p, chain, chain + 1])
        dst_pos = np.concatenate([heads_p, heads_c, chain + 1, chain])
        i_s, i_d, i_o, net, n_o, channels = _edge_traffic(graph, seq, src_pos, dst_pos, False)
        volume = np.full(ng * channels, 0.5 / channels)
        steps = 2 * (int(np.ceil(np.log2(m))) + k - 1)
        traffics.append(Traffic("tree", i_s, i_d, i_o, net, n_o, volume, steps))
    return [_merge(traffics)]


def _merge(parts: list[Traffic]) -> Traffic:
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


def _nvls(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    ng, n = seq.shape
    if not nvls_possible(graph, seq):
        raise SimulationError(
            f"--algorithm nvls: needs NVLink SHARP ({graph.scaleup} has "
            f"{'it' if graph.nvls else 'none'}) and every group inside one NVLink domain of "
            f"{graph.domain_gpus} GPUs; use ring or auto"
        )
    demand = np.repeat(np.arange(ng), n)
    return [
        Traffic(
            "nvls", seq.ravel(), seq.ravel(), demand, empty_segments(), empty_ids(), np.ones(ng), 2
        )
    ]


def nvls_possible(graph: FabricGraph, seq: np.ndarray) -> bool:
    """NVLS needs NVLink SHARP hardware and each group inside one scale-up domain."""
    dom = graph.domain_of(seq)
    return graph.nvls and bool(np.all(dom == dom[:, :1]))


def _hierarchical(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    ng, n = seq.shape
    k = _uniform_blocks(graph, seq)
    m = n // k if k else 0
    if m < 2 or k < 2:
        raise SimulationError(
            "--algorithm hierarchical: needs groups spanning 2+ nodes with 2+ GPUs on each "
            "(same count per node); use ring or auto"
        )
    local = seq.reshape(ng * m, k)
    rails = seq.reshape(ng, m, k).transpose(0, 2, 1).reshape(ng * k, m)
    half = (k - 1) / k
    rs = _ring_like(graph, local, closed=True, per_edge_volume=half, algorithm="ring", steps=k - 1)
    ar = _ring_like(
        graph,
        rails,
        closed=True,
        per_edge_volume=2 * (m - 1) / m / k,
        algorithm="ring",
        steps=2 * (m - 1),
    )
    return [replace(p, pipelined=True) for p in (rs, ar, rs)]


def candidate_algorithms(graph: FabricGraph, collective: str, seq: np.ndarray) -> list[str]:
    """Algorithms NCCL would consider; ``auto`` picks the fastest of them per size, like
    NCCL's tuner does with its own cost model."""
    if collective == "all_to_all":
        return ["direct"]
    if collective != "all_reduce":
        return ["ring"]
    if seq.shape[1] >= _NVLS_MIN_GPUS and nvls_possible(graph, seq):
        return ["nvls", "ring"]
    k = _uniform_blocks(graph, seq)
    return ["ring", "tree"] if k and seq.shape[1] // k >= 2 else ["ring"]


def build_phases(
    graph: FabricGraph, collective: str, algorithm: str, seq: np.ndarray, pxn: bool
) -> list[Traffic]:
    """Phases of ``collective`` run with ``algorithm`` on groups ``seq`` (ring-ordered)."""
    n = seq.shape[1]
    if algorithm == "nvls" and collective == "all_reduce":
        return _nvls(graph, seq)
    if algorithm == "tree" and collective == "all_reduce":
        return _tree(graph, seq)
    if algorithm == "hierarchical" and collective == "all_reduce":
        return _hierarchical(graph, seq)
    if algorithm == "direct" and collective == "all_to_all":
        return direct_all_to_all(graph, seq, pxn)
    if collective == "all_to_all" or algorithm != "ring":
        raise SimulationError(f"--algorithm {algorithm}: not available for {collective}; use auto")
    if collective == "all_reduce":
        return [_ring(graph, seq, 2 * (n - 1) / n, 2 * (n - 1))]
    if collective in ("all_gather", "reduce_scatter"):
        return [_ring(graph, seq, (n - 1) / n, n - 1)]
    if collective == "sendrecv":
        return [
            _ring_like(
                graph,
                seq,
                closed=True,
                per_edge_volume=1.0,
                algorithm="ring",
                steps=1,
                per_edge=True,
            )
        ]
    return [
        _ring_like(
            graph,
            seq,
            closed=False,
            per_edge_volume=1.0,
            algorithm="chain",
            steps=n - 1,
            reverse=collective == "reduce",
        )
    ]
