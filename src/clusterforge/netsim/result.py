"""Frozen results of a collective simulation and their JSON form.

Congestion is reported by what the fabric does with an overloaded link (offered load above
capacity, :data:`OVERLOAD`):

* rate control (RoCE NICs running DCQCN, the default on RoCE): ECN marks make the senders cut
  their rate to their fair share before the buffer fills; nothing is dropped, the link stays
  busy at :data:`~clusterforge.netsim.congestion.RATE_CONTROLLED_LINK_SHARE`.

* lossy (RoCE without PFC and without rate control): the switch buffer overflows and drops; in steady state the hot
  link forwards its capacity and drops the rest, ``drop_fraction = 1 − capacity/offered``
  (fluid model: drops = offered − capacity), until the senders' congestion control backs off.
* lossless (InfiniBand credit flow control, RoCE with PFC): nothing is dropped; the link
  pushes back (PFC PAUSE / no credits) on every upstream link feeding it, and flows that share
  those links without crossing the hot one are head-of-line blocked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from clusterforge.topology import LINK_CLASSES, NETWORK_CLASSES, FabricGraph

__all__ = [
    "CONGESTION_RESPONSES",
    "OVERLOAD",
    "Backpressure",
    "Choice",
    "ClassUtilization",
    "CollectiveResult",
    "LinkLoad",
    "PhaseSolution",
    "summarize",
]

_TOP_LINKS = 10
OVERLOAD = 1.001  # offered load above capacity by more than 0.1 % (float rounding tolerance)
# What an overloaded link does: nothing to report, senders cut their rate (ECN congestion
# control), drop (lossy), pause upstream (lossless).
CONGESTION_RESPONSES = ("none", "rate", "drop", "pause")


@dataclass(frozen=True)
class Backpressure:
    """Pause propagation on a lossless fabric: overloaded links, upstream links that would
    be paused (PFC) or starved of credits (IB), and the share of the other demands that
    share a paused link (head-of-line-blocking victims)."""

    num_overloaded_links: int
    num_paused_links: int
    hol_victim_share: float


@dataclass(frozen=True, eq=False)
class PhaseSolution:
    """One phase solved at unit size: seconds per byte, latency, per-link loads."""

    unit_time_s: float
    latency_s: float  # steps x the longest path: a floor under NCCL's latency model
    utilization: np.ndarray = field(repr=False)  # steady-state wire occupancy per link
    busy_fraction: np.ndarray = field(repr=False)  # wire bytes / (capacity x phase time)
    offered_load: np.ndarray = field(repr=False)  # offered / capacity per link
    view: np.ndarray = field(repr=False)  # links of the routing's view
    num_flows: int
    num_demands: int
    net_path_latency_s: float = 0.0  # longest network path, GPU port to GPU port
    backpressure: Backpressure = Backpressure(0, 0, 0.0)
    pipelined: bool = False  # overlaps the other pipelined phases (hierarchical)


@dataclass(frozen=True, eq=False)
class Choice:
    """The (algorithm, protocol) pair picked for one size, its time and its phases."""

    algorithm: str
    protocol: str
    time_s: float
    latency_s: float
    phases: list[PhaseSolution]
    goodput_share: float  # useful share of a lossy hot link's bytes (1 when nothing drops)


@dataclass(frozen=True)
class ClassUtilization:
    """Steady-state wire utilization of one link class (0..1) and its worst offered load."""

    max_utilization: float
    mean_utilization: float
    max_busy_fraction: float
    max_offered_load: float
    num_links: int


@dataclass(frozen=True)
class LinkLoad:
    """One loaded link: endpoints, class, steady utilization, share of the collective's
    time it was busy (1.0 = it set the pace), offered load / capacity."""

    source: str
    target: str
    link_class: str
    utilization: float
    busy_fraction: float
    offered_load: float
    capacity_gbyte_per_s: float


@dataclass(frozen=True)
class CollectiveResult:
    """A simulated collective, with nccl-tests bandwidths (GB/s = 1e9 B/s)."""

    collective: str
    algorithm: str
    protocol: str
    routing: str
    num_qps: int
    size_bytes: float
    num_ranks: int
    num_groups: int
    time_s: float
    algbw_gbyte_per_s: float
    busbw_gbyte_per_s: float
    latency_s: float
    link_class_utilization: dict[str, ClassUtilization]
    top_links: tuple[LinkLoad, ...]
    hotspot: LinkLoad | None  # network link with the highest offered load
    max_offered_load: float
    congested: bool
    would_drop: bool
    fabric: str
    lossless: bool
    rate_control: bool  # the NICs cut their rate on ECN marks (DCQCN)
    congestion_response: str  # one of CONGESTION_RESPONSES
    drop_fraction: float  # lossy: expected share of the hot link's offered bytes dropped
    goodput_share: float  # useful share of the hot link: rate control's saw-tooth, go-back-N
    num_paused_links: int  # lossless: upstream links PFC/credit back-pressure reaches
    hol_victim_share: float  # lossless: share of other demands head-of-line blocked
    num_flows: int
    num_links: int

    @property
    def limiting_link(self) -> LinkLoad | None:
        """The most loaded link (None when nothing crossed a link)."""
        return self.top_links[0] if self.top_links else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        out = asdict(self)
        out["limiting_link"] = asdict(self.limiting_link) if self.limiting_link else None
        return out


def _dominant(phases: list[PhaseSolution]) -> PhaseSolution | None:
    return max(phases, key=lambda p: p.unit_time_s) if phases else None


def _class_stats(graph: FabricGraph, phase: PhaseSolution) -> dict[str, ClassUtilization]:
    stats = {}
    for idx in np.unique(graph.link_class[phase.view]):
        mask = phase.view & (graph.link_class == idx)
        util, off = phase.utilization[mask], phase.offered_load[mask]
        stats[LINK_CLASSES[idx]] = ClassUtilization(
            max_utilization=round(float(util.max()), 4),
            mean_utilization=round(float(util.mean()), 4),
            max_busy_fraction=round(float(phase.busy_fraction[mask].max()), 4),
            max_offered_load=round(float(off.max()), 4),
            num_links=int(mask.sum()),
        )
    return stats


def _link_name(graph: FabricGraph, link: int) -> tuple[str, str]:
    src, dst = int(graph.link_from[link]), int(graph.link_to[link])
    a, b = graph.vertex_name(src), graph.vertex_name(dst)
    if src == dst:  # an adaptive-routing aggregate: all uplinks of a leaf or pod
        cls = LINK_CLASSES[graph.link_class[link]]
        return f"{a} (all {cls} links)", cls.split("-")[1] + "s"
    return a, b


def _top_links(graph: FabricGraph, phase: PhaseSolution) -> tuple[LinkLoad, ...]:
    # Rank by the share of the phase the link was busy: the link that sets the pace has ~1.0.
    # Ties (within 0.1 %) go to the link with the higher offered load: where packets pile up.
    busy = np.round(phase.busy_fraction, 3)
    score = np.where(phase.view & (phase.busy_fraction > 0), busy + 1e-4 * phase.offered_load, 0)
    k = min(_TOP_LINKS, int((score > 0).sum()))
    if k == 0:
        return ()
    top = np.argpartition(-score, k - 1)[:k]
    top = top[np.argsort(-score[top], kind="stable")]
    return tuple(_link_load(graph, phase, int(i)) for i in top)


def _link_load(graph: FabricGraph, phase: PhaseSolution, i: int) -> LinkLoad:
    return LinkLoad(
        *_link_name(graph, i),
        LINK_CLASSES[graph.link_class[i]],
        round(float(phase.utilization[i]), 4),
        round(float(phase.busy_fraction[i]), 4),
        round(float(phase.offered_load[i]), 4),
        float(graph.capacity_gbyte_per_s[i]),
    )


def _hotspot(graph: FabricGraph, phase: PhaseSolution, network: np.ndarray) -> LinkLoad | None:
    """The network link with the highest offered load (where a lossy fabric drops first)."""
    mask = phase.view & network
    if not mask.any():
        return None
    i = int(np.flatnonzero(mask)[np.argmax(phase.offered_load[mask])])
    return _link_load(graph, phase, i) if phase.offered_load[i] > 0 else None


def summarize(
    graph: FabricGraph,
    *,
    collective: str,
    routing: str,
    num_qps: int,
    size_bytes: float,
    groups: np.ndarray,
    choice: Choice | None,
    factor: float,
) -> CollectiveResult:
    """Assemble the result from the chosen algorithm (None: nothing to communicate)."""
    phases = choice.phases if choice else []
    time_s = choice.time_s if choice else 0.0
    dom = _dominant(phases)
    network = np.isin(graph.link_class, [LINK_CLASSES.index(c) for c in NETWORK_CLASSES])
    worst = 0.0
    if dom is not None and (dom.view & network).any():
        worst = float(dom.offered_load[dom.view & network].max())
    algbw = size_bytes / time_s / 1e9 if time_s > 0 else 0.0
    congested = worst > OVERLOAD
    response = "none"
    if congested:
        response = "rate" if graph.rate_control else ("pause" if graph.lossless else "drop")
    pushed = dom.backpressure if dom is not None and response == "pause" else Backpressure(0, 0, 0)
    return CollectiveResult(
        collective=collective,
        algorithm=choice.algorithm if choice else "none",
        protocol=choice.protocol if choice else "none",
        routing=routing,
        num_qps=num_qps,
        size_bytes=float(size_bytes),
        num_ranks=int(groups.shape[1]),
        num_groups=int(groups.shape[0]),
        time_s=time_s,
        algbw_gbyte_per_s=algbw,
        busbw_gbyte_per_s=algbw * factor,
        latency_s=choice.latency_s if choice else 0.0,
        link_class_utilization=_class_stats(graph, dom) if dom else {},
        top_links=_top_links(graph, dom) if dom else (),
        hotspot=_hotspot(graph, dom, network) if dom else None,
        max_offered_load=round(worst, 4),
        congested=congested,
        would_drop=response == "drop",
        fabric=graph.fabric,
        lossless=graph.lossless,
        rate_control=graph.rate_control,
        congestion_response=response,
        drop_fraction=round(1.0 - 1.0 / worst, 4) if response == "drop" else 0.0,
        goodput_share=round(choice.goodput_share, 4) if choice else 1.0,
        num_paused_links=pushed.num_paused_links,
        hol_victim_share=pushed.hol_victim_share,
        num_flows=sum(p.num_flows for p in phases),
        num_links=graph.num_links,
    )
