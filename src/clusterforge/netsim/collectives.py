"""Collectives decomposed into flows the way NCCL runs them (vectorized over all groups).

Every builder returns one or more :class:`Traffic` phases; phases run one after the other,
the groups inside a phase run concurrently and share links.  Volumes are bytes moved per
demand per byte of the nccl-tests ``size`` (so one solve serves every message size).

* **ring** (NCCL's default for bandwidth): GPUs ordered node by node; one ring per channel,
  each channel leaving a node through its own NIC (rail-aligned: NIC c to NIC c), so a node's
  NICs all carry traffic (across the racks of a multi-node NVLink fabric, NCCL's node is
  the rack: :func:`~clusterforge.netsim.trees.rack_ring`).  Ring all-reduce moves 2(n−1)/n·S per edge, all-gather and
  reduce-scatter (n−1)/n·S (nccl-tests ``doc/PERFORMANCE.md``).
* **tree**, **nvls**, **nvls_tree**: :mod:`clusterforge.netsim.trees`.
* **collnet** (NCCL CollNet with in-network reduction, InfiniBand SHARP): each node's GPUs
  reduce over the scale-up links and each NIC sends its 1/C share of S once to the switch
  tree and receives the result once: the NICs carry S per node per direction, half of a
  ring's 2(n−1)/n·S (Graham et al., "Scalable Hierarchical Aggregation and Reduction
  Protocol (SHArP)", COMHPC 2016).
* **pat** (NCCL's Parallel Aggregated Trees for all-gather and reduce-scatter with one GPU
  per node): the same bytes per NIC as a ring, in log2(n) aggregated steps.
* **hierarchical** (only when asked for): reduce-scatter inside the node, all-reduce of
  S/k between the GPUs with the same position on every node (k rail rings), all-gather
  inside the node; the three phases pipeline chunks
  (:func:`~clusterforge.netsim.model.pipelined_time_s`).
* **ring on a full mesh** (MI300X xGMI, no switch): one ring would use one peer link per hop,
  so we run the stride-c rings ``0, c, 2c, ...`` for every c coprime with the group size:
  each is Hamiltonian and they use pairwise disjoint directed peer links (8 GPUs: c = 1, 3,
  5, 7, four rings), the data split evenly over them.
* **direct** (all-to-all): :mod:`clusterforge.netsim.alltoall`.
* **chain** (broadcast, reduce) and **pairs** (sendrecv: rank i sends S to rank i+1).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from clusterforge.constants import read_constants
from clusterforge.errors import SimulationError
from clusterforge.netsim.alltoall import direct_all_to_all
from clusterforge.netsim.edges import edge_traffic, merge, ring_order, uniform_blocks
from clusterforge.netsim.traffic import Traffic
from clusterforge.netsim.trees import (
    domain_blocks,
    mnnvl,
    nvls_phases,
    nvls_possible,
    nvls_tree_phases,
    rack_ring,
    tree_phases,
)
from clusterforge.netsim.vocab import ALGORITHMS, Algorithm, Collective
from clusterforge.topology import FabricGraph

__all__ = ["ALGORITHMS", "Traffic", "build_phases", "candidate_algorithms", "ring_order"]

# NCCL enables NVLS for a communicator of more than 4 GPUs on one NVSwitch domain; below
# that ring is faster (data/nccl.toml).
_NVLS_MIN_GPUS = read_constants("clusterforge.netsim", "nccl.toml").integer("nvls_min_gpus")


def _ring_like(
    graph: FabricGraph,
    seq: np.ndarray,
    *,
    closed: bool,
    per_edge_volume: float,
    algorithm: Algorithm,
    steps: int,
    reverse: bool = False,
    per_edge: bool = False,
) -> Traffic:
    n = seq.shape[1]
    src_pos = np.arange(n if closed else n - 1)
    dst_pos = (src_pos + 1) % n
    if reverse:
        src_pos, dst_pos = dst_pos, src_pos
    e = edge_traffic(graph, seq, src_pos, dst_pos, per_edge=per_edge)
    num_demands = seq.shape[0] * (src_pos.size if per_edge else e.num_channels)
    share = 1.0 if per_edge else 1.0 / e.num_channels
    volume = np.full(num_demands, per_edge_volume * share)
    return Traffic(
        algorithm, e.intra_src, e.intra_dst, e.intra_owner, e.net, e.net_owner, volume, steps
    )


def _ring(
    graph: FabricGraph, seq: np.ndarray, per_edge_volume: float, steps: int, algorithm: Algorithm
) -> Traffic:
    """A closed ring; over a full-mesh domain, the disjoint stride rings (module docstring);
    across the domains of a multi-node NVLink fabric, NCCL's ring of the fused domain
    (:func:`~clusterforge.netsim.trees.rack_ring`)."""
    n = seq.shape[1]
    if mnnvl(graph):
        rack = rack_ring(graph, seq, per_edge_volume, steps, algorithm)
        if rack is not None:
            return rack
    dom = graph.domain_of(seq)
    if not (graph.mesh and n >= 3 and bool(np.all(dom == dom[:, :1]))):
        return _ring_like(
            graph,
            seq,
            closed=True,
            per_edge_volume=per_edge_volume,
            algorithm=algorithm,
            steps=steps,
        )
    strides = [c for c in range(1, n) if math.gcd(c, n) == 1]
    rings = [
        _ring_like(
            graph,
            seq[:, (np.arange(n) * c) % n],
            closed=True,
            per_edge_volume=per_edge_volume / len(strides),
            algorithm=algorithm,
            steps=steps,
        )
        for c in strides
    ]
    return merge(rings)


def _hierarchical(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    ng, n = seq.shape
    k = uniform_blocks(graph, seq)
    m = n // k if k else 0
    if m < 2 or k < 2:
        raise SimulationError(
            "algorithm hierarchical: needs groups spanning 2+ nodes with 2+ GPUs on each "
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


def collnet_possible(graph: FabricGraph, seq: np.ndarray) -> bool:
    """CollNet needs switches that reduce in the network and groups spanning 2+ nodes
    with the same GPUs on each."""
    k = uniform_blocks(graph, seq)
    return graph.in_network_reduction and k > 0 and seq.shape[1] // k >= 2


def _collnet(graph: FabricGraph, seq: np.ndarray) -> list[Traffic]:
    """Reduce inside the node (NVLS where the switch can, else a ring reduce-scatter), each
    rail sends its S/k once up the switch tree and gets the result once (a pair of
    messages to the rail's peer node stands in for the switch: same NIC bytes), then an
    all-gather inside the node; the stages pipeline."""
    if not collnet_possible(graph, seq):
        raise SimulationError(
            "algorithm collnet: needs switches with in-network reduction (InfiniBand SHARP) "
            "and groups spanning 2+ nodes with the same GPUs on each; use ring or auto"
        )
    ng, n = seq.shape
    k = uniform_blocks(graph, seq)
    m = n // k
    local = seq.reshape(ng * m, k)
    rails = seq.reshape(ng, m, k).transpose(0, 2, 1).reshape(ng * k, m)
    pair = np.stack([rails[:, 0], rails[:, 1]], axis=1)
    up = _ring_like(graph, pair, closed=True, per_edge_volume=1.0 / k, algorithm="collnet", steps=2)
    stages = [up]
    if k > 1:
        rs = _ring_like(
            graph, local, closed=True, per_edge_volume=(k - 1) / k, algorithm="ring", steps=k - 1
        )
        stages = [rs, up, rs]
    return [replace(p, pipelined=True) for p in stages]


def pat_possible(seq: np.ndarray, graph: FabricGraph) -> bool:
    """NCCL runs PAT only with one GPU per node (``ncclPatEnable``)."""
    nodes = seq // graph.gpus_per_node
    srt = np.sort(nodes, axis=1)
    return seq.shape[1] >= 2 and not bool(np.any(srt[:, 1:] == srt[:, :-1]))


def candidate_algorithms(
    graph: FabricGraph, collective: Collective, seq: np.ndarray, nvls: bool = True
) -> list[Algorithm]:
    """Algorithms NCCL's tuner weighs for ``collective`` on groups ``seq`` with its default
    settings (CollNet off: ``NCCL_COLLNET_ENABLE`` is 0 unless set).  ``nvls`` False is
    ``NCCL_NVLS_ENABLE=0``: ``ncclNvlsInit`` (``src/transport/nvls.cc``) then leaves
    ``nvlsSupport`` at 0 and ``updateCollCostTable`` (``src/enqueue.cc``) skips NVLS and
    NVLS-Tree (NVIDIA/nccl v2.26.2-1)."""
    match collective:
        case "all_to_all":
            return ["direct"]
        case "all_gather" | "reduce_scatter":
            return ["ring", "pat"] if pat_possible(seq, graph) else ["ring"]
        case "broadcast" | "reduce" | "sendrecv":
            return ["chain"] if collective != "sendrecv" else ["ring"]
        case "all_reduce":
            return _all_reduce_candidates(graph, seq, nvls)


def _all_reduce_candidates(graph: FabricGraph, seq: np.ndarray, nvls: bool) -> list[Algorithm]:
    if not nvls:
        k = uniform_blocks(graph, seq)
        return ["ring", "tree"] if k and seq.shape[1] // k >= 2 else ["ring"]
    if seq.shape[1] >= _NVLS_MIN_GPUS and nvls_possible(graph, seq):
        return ["nvls", "ring"]
    k = uniform_blocks(graph, seq)
    out: list[Algorithm] = ["ring", "tree"] if k and seq.shape[1] // k >= 2 else ["ring"]
    if mnnvl(graph):
        # NCCL's node is the NVLink domain (trees.py): NVLS-Tree between domains
        kd = domain_blocks(graph, seq)[1]
        if graph.nvls and kd >= 2 and seq.shape[1] // kd >= 2:
            out.append("nvls_tree")
        return out
    if len(out) > 1 and k >= 2 and graph.nvls and nvls_possible(graph, seq.reshape(-1, k)):
        out.append("nvls_tree")
    return out


def build_phases(
    graph: FabricGraph, collective: Collective, algorithm: Algorithm, seq: np.ndarray, pxn: bool
) -> list[Traffic]:
    """Phases of ``collective`` run with ``algorithm`` on groups ``seq`` (ring-ordered)."""
    n = seq.shape[1]
    match (collective, algorithm):
        case ("all_reduce", "nvls"):
            return nvls_phases(graph, seq)
        case ("all_reduce", "tree"):
            return tree_phases(graph, seq)
        case ("all_reduce", "nvls_tree"):
            return nvls_tree_phases(graph, seq)
        case ("all_reduce", "hierarchical"):
            return _hierarchical(graph, seq)
        case ("all_reduce", "collnet"):
            return _collnet(graph, seq)
        case ("all_reduce", "ring"):
            return [_ring(graph, seq, 2 * (n - 1) / n, 2 * (n - 1), "ring")]
        case ("all_gather" | "reduce_scatter", "ring" | "pat"):
            if algorithm == "pat" and not pat_possible(seq, graph):
                raise SimulationError("algorithm pat: needs one GPU per node; use ring or auto")
            return [_ring(graph, seq, (n - 1) / n, n - 1, algorithm)]
        case ("all_to_all", "direct"):
            return direct_all_to_all(graph, seq, pxn)
        case ("sendrecv", "ring"):
            pairs = _ring_like(
                graph,
                seq,
                closed=True,
                per_edge_volume=1.0,
                algorithm="ring",
                steps=1,
                per_edge=True,
            )
            return [pairs]
        case ("broadcast" | "reduce", "chain" | "ring"):
            # NCCL's ring graph: across the domains of a multi-node NVLink fabric, the
            # domain's channels each cross on their own NIC (trees.rack_ring)
            rack = None
            if mnnvl(graph):
                reverse = collective == "reduce"
                rack = rack_ring(graph, seq, 1.0, n - 1, "chain", closed=False, reverse=reverse)
            if rack is not None:
                return [rack]
            chain = _ring_like(
                graph,
                seq,
                closed=False,
                per_edge_volume=1.0,
                algorithm="chain",
                steps=n - 1,
                reverse=collective == "reduce",
            )
            return [chain]
    raise SimulationError(f"algorithm {algorithm}: not available for {collective}; use auto")
