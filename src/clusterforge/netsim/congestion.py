"""What a fabric does with an overloaded link: drop (lossy) or push back (lossless).

A lossless fabric (InfiniBand credit-based flow control; RoCE with Priority Flow Control,
IEEE 802.1Qbb) never drops: an egress queue that fills stops its upstream neighbour (PFC
PAUSE frame, or no credits returned), that neighbour's queue fills in turn, and the pause
walks back along the paths feeding the hot link toward the senders.  Every other flow queued
behind a paused port stalls too although its own path is free: head-of-line blocking (the
"congestion spreading" / PFC storm risk of RoCE deployments; Guo et al., "RDMA over Commodity
Ethernet at Scale", SIGCOMM 2016).

The flow model does not track queues, so this is a static indicator over the routed flows:

* hot links: offered load (senders' fair share of their first hop) above capacity;
* paused links: links *upstream* of a hot link on a flow that crosses it.  Upstream is judged
  by position in the up-down path, ``nic-leaf < leaf-spine < spine-core < core-spine <
  spine-leaf < leaf-nic``; dragonfly hops sit in the middle (their order inside the path is
  not kept, so pause propagation between dragonfly hops is not counted);
* victims: flows that share a paused link without crossing a hot link.
"""

from __future__ import annotations

import numpy as np

from clusterforge.netsim.result import OVERLOAD, Backpressure
from clusterforge.topology import LINK_CLASSES, FabricGraph

__all__ = ["backpressure"]

_PATH_RANK = {
    "nic-leaf": 0,
    "leaf-spine": 1,
    "spine-core": 2,
    "dragonfly-local": 3,
    "dragonfly-global": 3,
    "core-spine": 4,
    "spine-leaf": 5,
    "leaf-nic": 6,
}
_RANK_OF_CLASS = np.array([_PATH_RANK.get(c, -1) for c in LINK_CLASSES])


def backpressure(
    graph: FabricGraph, seg: np.ndarray, link: np.ndarray, offered: np.ndarray, view: np.ndarray
) -> Backpressure:
    """Pause propagation over the fabric flows ``(seg, link)`` (COO of the routed segments)
    given each link's offered load / capacity."""
    hot = (offered > OVERLOAD) & view
    if not hot.any() or seg.size == 0:
        return Backpressure(0, 0, 0.0)
    rank = _RANK_OF_CLASS[graph.link_class[link]]
    num_segs = int(seg.max()) + 1
    hot_rank = np.full(num_segs, -1)
    on_hot = hot[link]
    np.maximum.at(hot_rank, seg[on_hot], rank[on_hot])
    upstream = ~on_hot & (rank >= 0) & (rank < hot_rank[seg])
    paused = np.zeros(graph.num_links, bool)
    paused[link[upstream]] = True
    crossing = hot_rank >= 0
    victim = np.zeros(num_segs, bool)
    victim[seg[paused[link] & ~crossing[seg]]] = True
    others = max(int((~crossing).sum()), 1)
    return Backpressure(int(hot.sum()), int(paused.sum()), round(float(victim.sum()) / others, 4))
