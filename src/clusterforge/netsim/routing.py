"""Routing: map traffic segments onto the links of a :class:`FabricGraph`, vectorized.

A *segment* is one hop pattern of a flow: ``intra`` (GPU to GPU inside one scale-up domain:
the source GPU's up link and the destination's down link) or ``net`` (NIC port to NIC port
across the fabric).  Routing returns COO triples ``(segment, link, fraction)``: the fraction
of the segment's rate that crosses the link.

* ``ecmp``: static hashing of each flow onto one equal-cost path (one member of every
  bundle), as switches do with the 5-tuple; with ``num_qps`` > 1 a flow is split over that
  many queue pairs, each hashed on its own (RoCE spreads load by QP: different UDP source
  ports; performance.md §5 item 3: "ECMP hashing *per QP*").
* ``adaptive``: ideal adaptive routing / packet spraying, an even split over all equal-cost
  paths (the graph's aggregate links; exact for a symmetric Clos).
* link aggregation (the seed's design A): a LAG picks its member link per flow by hash at the
  host and again at the switch egress, whatever the routing mode (LACP hashing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.topology import FabricGraph

__all__ = ["ROUTINGS", "NetSegments", "flow_hash", "route_intra", "route_net"]

ROUTINGS = ("ecmp", "adaptive")

_U = np.uint64
_MASK64 = (1 << 64) - 1


def flow_hash(key: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit mix (splitmix64 finaliser, Steele et al. 2014) of ``key`` and ``salt``;
    stands in for a switch's CRC hash over the packet header."""
    x = np.asarray(key).astype(_U) * _U(0x9E3779B97F4A7C15) + _U(
        (salt * 0x632BE59BD9B4E019 + 1) & _MASK64
    )
    x = (x ^ (x >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U(27))) * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


def _pick(key: np.ndarray, salt: int, n: np.ndarray | int) -> np.ndarray:
    """Hash ``key`` into ``[0, n)``."""
    return (flow_hash(key, salt) % np.asarray(n).astype(_U)).astype(np.int64)


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
    """Scale-up hops: source up link and destination down link (the NVSwitch is a crossbar)."""
    seg = np.arange(src.size)
    links = np.concatenate([graph.scaleup_up(src), graph.scaleup_down(dst)])
    return np.concatenate([seg, seg]), links, np.ones(links.size)


def route_net(
    graph: FabricGraph, segs: NetSegments, routing: str, num_qps: int
) -> tuple[np.ndarray, ...]:
    """COO (segment, link, fraction) of every fabric segment."""
    if routing not in ROUTINGS:
        raise SimulationError(f"--routing: unknown routing {routing!r}; use one of {ROUTINGS}")
    hashed = routing == "ecmp" or graph.link_aggregation
    qps = max(1, int(num_qps)) if hashed else 1
    num = segs.src_node.size
    seg = np.repeat(np.arange(num), qps)
    key = np.repeat(segs.key.astype(np.int64), qps) * 64 + np.tile(np.arange(qps), num)
    frac = np.full(seg.size, 1.0 / qps)
    sn, dn = np.repeat(segs.src_node, qps), np.repeat(segs.dst_node, qps)
    si, di = np.repeat(segs.src_nic, qps), np.repeat(segs.dst_nic, qps)
    if graph.link_aggregation:
        si = _pick(key, 1, graph.nics_per_node)
        di = _pick(key, 2, graph.nics_per_node)
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
    if cross.any():
        args = (graph, leaf_s[cross], leaf_d[cross], key[cross], routing == "ecmp")
        s, link, f = _route_dragonfly(*args) if conn.kind == "dragonfly" else _route_clos(*args)
        out_seg.append(seg[cross][s])
        out_link.append(link)
        out_frac.append(frac[cross][s] * f)
    return np.concatenate(out_seg), np.concatenate(out_link), np.concatenate(out_frac)


def _member(graph: FabricGraph, u: np.ndarray, v: np.ndarray, key: np.ndarray, salt: int):
    """Link id of the hashed member of the bundle u-v, in the direction u -> v."""
    b = graph.bundle_index(u, v)
    base = np.where(u < v, graph.member_up_base[b], graph.member_down_base[b])
    return base + _pick(key, salt, graph.bundle_n[b])


def _route_clos(
    graph: FabricGraph, leaf_s: np.ndarray, leaf_d: np.ndarray, key: np.ndarray, ecmp: bool
) -> tuple[np.ndarray, ...]:
    """Leaf to leaf through a 2- or 3-tier folded Clos (rail-only: a rail is a pod)."""
    conn = graph.connectivity
    lpp, spp, cpg = graph.leaves_per_pod, graph.spines_per_pod, graph.cores_per_group
    pod_s, pod_d = leaf_s // lpp, leaf_d // lpp
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
    j = _pick(key, 3, spp)
    spine_s = conn.num_leaves + pod_s * spp + j
    spine_d = conn.num_leaves + pod_d * spp + j
    parts = [
        (seg, _member(graph, leaf_s, spine_s, key, 4)),
        (seg, _member(graph, spine_d, leaf_d, key, 5)),
    ]
    if inter.any():
        k = key[inter]
        core = conn.num_leaves + conn.num_spines + j[inter] * cpg + _pick(k, 6, cpg)
        parts += [
            (seg[inter], _member(graph, spine_s[inter], core, k, 7)),
            (seg[inter], _member(graph, core, spine_d[inter], k, 8)),
        ]
    s = np.concatenate([p[0] for p in parts])
    return s, np.concatenate([p[1] for p in parts]), np.ones(s.size)


def _route_dragonfly(
    graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray, key: np.ndarray, ecmp: bool
) -> tuple[np.ndarray, ...]:
    """Minimal dragonfly routes, local - global - local (Kim et al. 2008): ECMP hashes one
    global link between the two groups, adaptive splits over all of them by link count."""
    a_ = graph.connectivity.routers_per_group
    g_s, g_d = r_s // a_, r_d // a_
    seg = np.arange(r_s.size)
    same = g_s == g_d
    segs, links, fracs = (
        [seg[same]],
        [_hop(graph, r_s[same], r_d[same], key[same], ecmp, 9)],
        [np.ones(int(same.sum()))],
    )
    other = ~same
    if other.any():
        s2, x, y, f = _global_choices(graph, g_s[other], g_d[other], key[other], ecmp)
        seg2 = seg[other][s2]
        k2 = key[other][s2]
        for u, v, salt in ((r_s[other][s2], x, 10), (x, y, 11), (y, r_d[other][s2], 12)):
            hop = u != v
            segs.append(seg2[hop])
            links.append(_hop(graph, u[hop], v[hop], k2[hop], ecmp, salt))
            fracs.append(f[hop])
    return np.concatenate(segs), np.concatenate(links), np.concatenate(fracs)


def _hop(
    graph: FabricGraph, u: np.ndarray, v: np.ndarray, key: np.ndarray, ecmp: bool, salt: int
) -> np.ndarray:
    if ecmp:
        return _member(graph, u, v, key, salt)
    b = graph.bundle_index(u, v)
    return np.where(u < v, graph.bundle_up_link[b], graph.bundle_down_link[b])


def _global_choices(
    graph: FabricGraph, g_s: np.ndarray, g_d: np.ndarray, key: np.ndarray, ecmp: bool
) -> tuple[np.ndarray, ...]:
    """(segment index, exit router, entry router, fraction) over the global bundles joining
    each segment's two groups."""
    a_ = graph.connectivity.routers_per_group
    is_global = (graph.bundle_a // a_) != (graph.bundle_b // a_)
    gb = np.flatnonzero(is_global)
    ga_, gb_ = graph.bundle_a[gb] // a_, graph.bundle_b[gb] // a_
    order = np.argsort(ga_ * graph.connectivity.num_groups + gb_, kind="stable")
    gb, pair_keys = gb[order], (ga_ * graph.connectivity.num_groups + gb_)[order]
    lo, hi = np.minimum(g_s, g_d), np.maximum(g_s, g_d)
    want = lo * graph.connectivity.num_groups + hi
    start = np.searchsorted(pair_keys, want, side="left")
    count = np.searchsorted(pair_keys, want, side="right") - start
    if np.any(count == 0):
        raise SimulationError("dragonfly: two groups have no global link between them")
    if ecmp:
        seg = np.arange(g_s.size)
        pick = gb[start + _pick(key, 13, count)]
        frac = np.ones(seg.size)
    else:
        seg = np.repeat(np.arange(g_s.size), count)
        offs = np.arange(seg.size) - np.repeat(np.cumsum(count) - count, count)
        pick = gb[np.repeat(start, count) + offs]
        weight = graph.bundle_n[pick].astype(float)
        frac = weight / np.bincount(seg, weights=weight)[seg]
    ra, rb = graph.bundle_a[pick], graph.bundle_b[pick]
    forward = (ra // a_) == g_s[seg]
    x = np.where(forward, ra, rb)
    y = np.where(forward, rb, ra)
    return seg, x, y, frac
