"""Routing: map traffic segments onto the links of a :class:`FabricGraph`, vectorized.

A *segment* is one hop pattern of a flow: ``intra`` (GPU to GPU inside one scale-up domain:
the source GPU's up link and the destination's down link) or ``net`` (NIC port to NIC port
across the fabric).  Routing returns COO :class:`Routes` ``(segment, link, fraction)``: the
fraction of the segment's rate that crosses the link, plus, for Valiant detours on a
dragonfly, the path parts that many segments share, stored once each
(:class:`~clusterforge.netsim.dragonfly.SharedRoutes`).

* ``ecmp``: static hashing of each flow onto one equal-cost path (one member of every
  bundle), as switches do with the 5-tuple; with ``num_qps`` > 1 a flow is split over that
  many queue pairs, each hashed on its own (RoCE spreads load by QP: different UDP source
  ports; NCCL's ``NCCL_IB_QPS_PER_CONNECTION`` exists for this "routing entropy", NCCL
  environment-variable documentation).
* ``adaptive``: ideal adaptive routing / packet spraying, an even split over all equal-cost
  paths (the graph's aggregate links; exact for a symmetric Clos).
* ``valiant`` / ``ugal`` (dragonfly only): non-minimal routing through an intermediate
  group, for every inter-group flow or where the minimal path is overloaded; see
  :mod:`clusterforge.netsim.dragonfly`.
* multi-plane Clos fabrics: a flow is routed as its plane's own Clos (pods and cores of that
  plane, global ids from :class:`~clusterforge.topology.FabricGraph`); planes share no switch,
  so a flow between two planes is an error here: the collective builders forward it over
  NVLink to a NIC of the destination's plane first (PXN).
* link aggregation (a node's NICs bonded into one LAG, as in ``examples/seed-design-a.yaml``):
  a LAG picks its member link per flow by hash at the
  host and again at the switch egress, whatever the routing mode (LACP hashing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.dragonfly import DRAGONFLY_ROUTINGS, SharedRoutes, route_dragonfly
from clusterforge.netsim.hashing import flow_hash, hashed_member, pick
from clusterforge.netsim.vocab import ROUTINGS as _ROUTINGS
from clusterforge.netsim.vocab import Routing
from clusterforge.topology import FabricGraph

__all__ = [
    "DRAGONFLY_ROUTINGS",
    "ROUTINGS",
    "NetSegments",
    "Routes",
    "check_routing",
    "flow_hash",
    "route_intra",
    "route_net",
]

ROUTINGS = _ROUTINGS


class Routes(NamedTuple):
    """COO of routed segments (segment, link, fraction of its rate), and the shared path
    parts of Valiant detours (None when no segment detours)."""

    seg: np.ndarray
    link: np.ndarray
    frac: np.ndarray
    shared: SharedRoutes | None = None


@dataclass(frozen=True)
class NetSegments:
    """Fabric segments: NIC port to NIC port, with a hash key per flow and the GPUs at both
    ends (their PCIe link to the NIC is charged when the GPUs have no NVLink)."""

    src_node: np.ndarray
    src_nic: np.ndarray
    dst_node: np.ndarray
    dst_nic: np.ndarray
    key: np.ndarray
    src_gpu: np.ndarray
    dst_gpu: np.ndarray


def route_intra(graph: FabricGraph, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, ...]:
    """Scale-up hops: source up link and destination down link (the NVSwitch is a crossbar);
    on a full mesh (xGMI) also the direct peer link between the two GPUs."""
    seg = np.arange(src.size)
    parts = [graph.scaleup_up(src), graph.scaleup_down(dst)]
    segs = [seg, seg]
    if graph.mesh:
        peer = src != dst  # NVLS-style self segments carry no peer hop
        parts.append(graph.mesh_link(src[peer], dst[peer]))
        segs.append(seg[peer])
    links = np.concatenate(parts)
    return np.concatenate(segs), links, np.ones(links.size)


def route_net(
    graph: FabricGraph,
    segs: NetSegments,
    routing: Routing,
    num_qps: int,
) -> Routes:
    """Routes of every fabric segment."""
    check_routing(graph, routing)
    hashed = routing == "ecmp" or graph.link_aggregation
    qps = max(1, int(num_qps)) if hashed else 1
    num = segs.src_node.size
    seg = np.repeat(np.arange(num), qps)
    key = np.repeat(segs.key.astype(np.int64), qps) * 64 + np.tile(np.arange(qps), num)
    frac = np.full(seg.size, 1.0 / qps)
    sn, dn = np.repeat(segs.src_node, qps), np.repeat(segs.dst_node, qps)
    si, di = np.repeat(segs.src_nic, qps), np.repeat(segs.dst_nic, qps)
    if graph.link_aggregation:
        si = pick(key, 1, graph.nics_per_node)
        di = pick(key, 2, graph.nics_per_node)
    out_seg = [seg, seg]
    out_link = [graph.nic_up(sn, si), graph.nic_down(dn, di)]
    out_frac = [frac, frac]
    if graph.scaleup_class == "pcie":  # GPU -> NIC shares the GPU's own x16 link
        out_seg += [seg, seg]
        out_link += [
            graph.scaleup_up(np.repeat(segs.src_gpu, qps)),
            graph.scaleup_down(np.repeat(segs.dst_gpu, qps)),
        ]
        out_frac += [frac, frac]
    conn = graph.connectivity
    leaf_s, leaf_d = conn.leaf_of(sn, si), conn.leaf_of(dn, di)
    cross = leaf_s != leaf_d
    shared = None
    if cross.any():
        if conn.kind == "dragonfly":
            (s, link, f), shared = route_dragonfly(
                graph, leaf_s[cross], leaf_d[cross], key[cross], routing
            )
            if shared is not None:
                shared = replace(
                    shared,
                    seg=seg[cross][shared.seg],
                    weight=frac[cross][shared.seg] * shared.weight,
                )
        else:
            s, link, f = _route_clos(
                graph, leaf_s[cross], leaf_d[cross], key[cross], routing == "ecmp"
            )
        out_seg.append(seg[cross][s])
        out_link.append(link)
        out_frac.append(frac[cross][s] * f)
    cat = np.concatenate
    return Routes(cat(out_seg), cat(out_link), cat(out_frac), shared)


def check_routing(graph: FabricGraph, routing: str) -> None:
    """Reject unknown routings, and Valiant/UGAL on fabrics that are not dragonflies."""
    if routing not in ROUTINGS:
        raise SimulationError(
            f"routing: unknown routing {routing!r}; use one of {', '.join(ROUTINGS)}"
        )
    if routing in DRAGONFLY_ROUTINGS and graph.kind != "dragonfly":
        raise SimulationError(
            f"routing {routing}: Valiant/UGAL non-minimal routing exists only on a dragonfly "
            f"(this design's fabric is {graph.kind}); use ecmp or adaptive, or "
            "network.topology: dragonfly"
        )


def _route_clos(
    graph: FabricGraph, leaf_s: np.ndarray, leaf_d: np.ndarray, key: np.ndarray, ecmp: bool
) -> tuple[np.ndarray, ...]:
    """Leaf to leaf through a 2- or 3-tier folded Clos (rail-only: a rail is a pod; a
    multi-plane fabric: inside the plane of both leaves, which must be the same)."""
    conn = graph.connectivity
    spp, cpg = graph.spines_per_pod, graph.cores_per_group
    plane = graph.plane_of_leaf(leaf_s)
    _check_one_plane(graph, plane, leaf_s, leaf_d)
    pod_s, pod_d = graph.pod_of_leaf(leaf_s), graph.pod_of_leaf(leaf_d)
    inter = pod_s != pod_d
    if spp == 0 or (inter.any() and cpg == 0):
        raise SimulationError(
            f"no fabric path between leaves {int(leaf_s[0])} and {int(leaf_d[0])} of this "
            f"{conn.kind} design (rail-only rails are not joined); keep traffic rail-aligned "
            "(PXN) or pick a topology with spines"
        )
    seg = np.arange(leaf_s.size)
    if not ecmp:
        parts = [(seg, graph.leaf_up_link[leaf_s]), (seg, graph.leaf_down_link[leaf_d])]
        if inter.any():
            parts += [
                (seg[inter], graph.pod_up_link[pod_s[inter]]),
                (seg[inter], graph.pod_down_link[pod_d[inter]]),
            ]
        s = np.concatenate([p[0] for p in parts])
        return s, np.concatenate([p[1] for p in parts]), np.ones(s.size)
    j = pick(key, 3, spp)
    spine_s = conn.num_leaves + pod_s * spp + j
    spine_d = conn.num_leaves + pod_d * spp + j
    parts = [
        (seg, hashed_member(graph, leaf_s, spine_s, key, 4)),
        (seg, hashed_member(graph, spine_d, leaf_d, key, 5)),
    ]
    if inter.any():
        k = key[inter]
        # spine j of every pod of a plane joins that plane's core group j
        first_core = conn.num_leaves + conn.num_spines + plane[inter] * graph.cores_per_plane
        core = first_core + j[inter] * cpg + pick(k, 6, cpg)
        parts += [
            (seg[inter], hashed_member(graph, spine_s[inter], core, k, 7)),
            (seg[inter], hashed_member(graph, core, spine_d[inter], k, 8)),
        ]
    s = np.concatenate([p[0] for p in parts])
    return s, np.concatenate([p[1] for p in parts]), np.ones(s.size)


def _check_one_plane(
    graph: FabricGraph, plane: np.ndarray, leaf_s: np.ndarray, leaf_d: np.ndarray
) -> None:
    """Planes share no switch: a flow between two planes has no fabric path (the collective
    builders forward it over NVLink first, PXN-style)."""
    other = plane != graph.plane_of_leaf(leaf_d)
    if other.any():
        i = int(np.flatnonzero(other)[0])
        raise SimulationError(
            f"no fabric path between leaves {int(leaf_s[i])} and {int(leaf_d[i])}: they sit in "
            f"different planes of this {graph.num_planes}-plane fabric; forward over NVLink "
            "to a NIC of the destination's plane (PXN)"
        )
