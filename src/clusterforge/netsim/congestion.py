"""What a fabric does with an overloaded link: cut the senders' rate (ECN congestion control),
push back (lossless) or drop (lossy, neither).

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

from clusterforge.constants import read_constants
from clusterforge.netsim.result import OVERLOAD, Backpressure
from clusterforge.topology import LINK_CLASSES, FabricGraph

__all__ = [
    "RATE_CONTROLLED_LINK_SHARE",
    "backpressure",
    "congested_link_share",
    "go_back_n_goodput_share",
    "window_packets",
]

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


# Rate control (DCQCN; Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
# SIGCOMM 2015).  A RoCE switch marks packets ECN-CE once an egress queue passes K_min
# (with probability rising to P_max at K_max); the receiving NIC returns a congestion
# notification packet, and the sending NIC cuts that flow's rate, R <- R (1 - alpha / 2),
# alpha being a moving average of how often it is notified, then climbs back by fast
# recovery and additive increase.  The paper's fluid model and testbed show the flows of a
# bottleneck converge to their fair share of it with the queue held between K_min and K_max,
# far below the buffer, so nothing overflows: the max-min rates of the flow model are that
# fair share.  What remains is the saw-tooth of the rates around it: while the queue drains
# after a cut the link idles for part of each cycle.  Spectrum-X's own congestion control
# acts the same way (per-flow rate set from switch telemetry).  PFC, where configured too,
# is the backstop that rate control keeps from firing (K_max sits below PFC's XOFF).
RATE_CONTROLLED_LINK_SHARE = read_constants("clusterforge.netsim", "efficiency.toml").number(
    "rate_controlled_link_share"
)


def congested_link_share(
    *, rate_control: bool, lossless: bool, overload: float, window: float
) -> float:
    """Useful share of an overloaded link's capacity (``overload`` = offered / capacity > 1)
    by what the fabric does about it: rate control (DCQCN) keeps it busy at
    :data:`RATE_CONTROLLED_LINK_SHARE`; PFC without rate control pauses the senders and
    loses nothing on the link itself (its cost is head-of-line blocking upstream,
    :func:`backpressure`); with neither the buffer overflows, ``1 − 1/overload`` of the
    packets are dropped and go-back-N resends ``window`` packets per drop."""
    if rate_control:
        return RATE_CONTROLLED_LINK_SHARE
    if lossless:
        return 1.0
    return go_back_n_goodput_share(1.0 - 1.0 / overload, window)


# RoCE's reliable-connection transport recovers a lost packet by go-back-N: the responder
# NAKs the first out-of-sequence packet and the requester resends everything from there
# (InfiniBand Architecture Specification Vol. 1, §9.7.5, which RoCEv2 inherits).  Without PFC
# every drop therefore also throws away the packets already in flight behind it; Mittal et
# al., "Revisiting Network Support for RDMA" (SIGCOMM 2018) measure the resulting collapse.
ROCE_MTU_BYTES = 4096


def go_back_n_goodput_share(drop_fraction: float, window_packets: float) -> float:
    """Share of a lossy link's forwarded bytes that are useful under go-back-N.

    With a drop probability p per packet and W packets in flight, each loss costs W
    transmissions, so useful / sent = (1 − p) / (1 − p + p·W) (the classic go-back-N
    throughput, Bertsekas & Gallager, *Data Networks*, 2nd ed., §2.4)."""
    p = min(max(drop_fraction, 0.0), 1.0)
    if p == 0.0:
        return 1.0
    w = max(window_packets, 1.0)
    return (1.0 - p) / (1.0 - p + p * w)


def window_packets(capacity_gbyte_per_s: float, path_latency_s: float) -> float:
    """Packets in flight on one path: the bandwidth-delay product over one round trip."""
    return capacity_gbyte_per_s * 1e9 * 2 * path_latency_s / ROCE_MTU_BYTES
