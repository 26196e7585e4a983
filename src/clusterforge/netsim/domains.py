"""NCCL's node under multi-node NVLink (MNNVL) and the NICs of a group's GPUs in it.

When the NVLink domain spans several nodes (trays of a GB200 or GB300 NVL72 rack), NCCL
fuses the topologies of the clique (``ncclTopoGetSystem`` in ``src/graph/topo.cc``: "MNNVL
clique support"), so its *node* is the NVLink domain.  These helpers find, for groups of GPU
ranks, the domains they span, the GPUs they hold in each and the NICs those GPUs leave
through; :mod:`clusterforge.netsim.trees` builds NCCL's trees and rings on them and
:mod:`clusterforge.netsim.context` NCCL's tuning context.
"""

from __future__ import annotations

import numpy as np

from clusterforge.netsim.tuner import generation_of, mnnvl_channels
from clusterforge.topology import FabricGraph

__all__ = [
    "clique_tree_channels",
    "domain_blocks",
    "domain_split",
    "mnnvl",
    "nic_count",
    "nic_positions",
    "rack_channels",
    "ring_channels",
    "uneven_split",
]


def mnnvl(graph: FabricGraph) -> bool:
    """The NVLink domain spans several nodes (GB200 NVL72: 18 trays), so NCCL's node is the
    domain (multi-node NVLink)."""
    return graph.domain_gpus > graph.gpus_per_node


def _by_domain(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``seq`` reordered NVLink domain by domain (stable, row by row), and True where a row's
    next domain starts."""
    dom = graph.domain_of(seq)
    order = np.argsort(dom, axis=1, kind="stable")
    srt = np.take_along_axis(dom, order, axis=1)
    new = np.ones(srt.shape, bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    return np.take_along_axis(seq, order, axis=1), new


def domain_split(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``seq`` reordered NVLink domain by domain (stable) and the number of each row's GPUs
    in each of its domains, in order; None when the rows split differently."""
    out, new = _by_domain(graph, seq)
    if not bool(np.all(new == new[:1])):
        return None
    counts = np.diff(np.append(np.flatnonzero(new[0]), seq.shape[1]))
    return out, counts


def domain_blocks(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, int]:
    """``seq`` reordered NVLink domain by domain (stable) and the GPUs each row has in each
    domain, 0 when rows hold different counts in different domains."""
    out, new = _by_domain(graph, seq)
    counts = np.diff(np.append(np.flatnonzero(new.ravel()), new.size))
    k = int(counts[0])
    ok = bool(np.all(counts == k)) and seq.shape[1] % k == 0
    return out, (k if ok else 0)


def nic_count(graph: FabricGraph, block: np.ndarray) -> int:
    """Distinct NICs of the GPUs ``block``."""
    node = block // graph.gpus_per_node
    return int(
        np.unique(node * graph.nics_per_node + graph.nic_of_local(block % graph.gpus_per_node)).size
    )


def nic_positions(graph: FabricGraph, block: np.ndarray, count: int) -> np.ndarray:
    """Positions in a node block of ``count`` GPUs (at most one per distinct NIC, so fewer
    where the block has fewer NICs), spread evenly over the block."""
    node = block // graph.gpus_per_node
    nic = graph.nic_of_local(block % graph.gpus_per_node)
    _, first = np.unique(node * graph.nics_per_node + nic, return_index=True)
    with_nic = np.sort(first)
    h = min(count, with_nic.size)
    return with_nic[(np.arange(h) * with_nic.size) // h]


def rack_channels(graph: FabricGraph, block: np.ndarray | None = None) -> int:
    """Channels of NCCL's ring and tree graphs on one NVLink domain under MNNVL, each
    through its own NIC (:func:`~clusterforge.netsim.tuner.mnnvl_channels`): the NICs of
    the whole domain, or of the GPUs ``block`` a communicator has in it (NCCL searches its
    graphs on the communicator's GPUs)."""
    if block is None:
        nics = graph.nics_per_node * (graph.domain_gpus // graph.gpus_per_node)
    else:
        node = block // graph.gpus_per_node
        nic = graph.nic_of_local(block % graph.gpus_per_node)
        nics = int(np.unique(node * graph.nics_per_node + nic).size)
    return mnnvl_channels(
        generation_of(graph.scaleup), nic_gbyte_per_s=graph.nic_gbyte_per_s, nics=nics
    )


def ring_channels(graph: FabricGraph, row: np.ndarray, counts: np.ndarray) -> int:
    """Channels of NCCL's ring over the domains of one group (``row`` ordered domain by
    domain, ``counts`` GPUs in each): every rank searches its own node's graph and the
    communicator keeps the fewest channels any rank found (``initTransportsRank``,
    ``src/init.cc``: the minimum over the ranks' ``graphInfo``), so the domain with the
    fewest NICs of the group sets them."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return min(rack_channels(graph, row[s : s + k]) for s, k in zip(starts, counts, strict=True))


def uneven_split(graph: FabricGraph, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(``seq`` ordered domain by domain, the GPUs of each row in each domain) when the
    groups span 2+ domains of a multi-node NVLink fabric holding different numbers of their
    GPUs (72 + 56 GPUs of two NVL72 racks), at least 2 in each; else None.  NCCL's node is
    then still the clique, whatever the number of GPUs in it: nodes are counted by the
    first rank of each ring (``initTransportsRank``, ``src/init.cc``, NVIDIA/nccl
    v2.29.2-1), and every rank joins the ring of its clique's fused topology."""
    if not mnnvl(graph) or domain_blocks(graph, seq)[1]:
        return None
    split = domain_split(graph, seq)
    if split is None or split[1].size < 2 or int(split[1].min()) < 2:
        return None
    return split


def clique_tree_channels(graph: FabricGraph, row: np.ndarray, counts: np.ndarray) -> int:
    """Channels of NCCL's tree across the cliques of one group (``row`` ordered domain by
    domain, ``counts`` GPUs in each): the domain's tree channels (:func:`rack_channels`),
    no more than the fewest NICs of the group in any domain, since each channel leaves its
    clique through its own NIC (the channel's ``inter`` NIC, ``ncclTopoCompute``,
    ``src/graph/search.cc``)."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    fewest = min(nic_count(graph, row[s : s + k]) for s, k in zip(starts, counts, strict=True))
    return min(rack_channels(graph), fewest)
