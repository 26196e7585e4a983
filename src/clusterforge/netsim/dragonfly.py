"""Dragonfly routing (Kim, Dally, Scott & Abts, ISCA 2008), vectorized.

* minimal (``ecmp``, ``adaptive``): local - global - local.  ECMP hashes one global link
  between the two groups; adaptive splits over all of them by link count.
* ``valiant``: Valiant's randomized routing (Valiant & Brebner 1981; on the dragonfly, Kim et
  al. 2008 §4.2): every inter-group flow detours through an intermediate group, spread
  evenly over all other groups (the flow-level limit of a random choice per packet), then
  minimally to the destination.  Two global hops: it spreads an adversarial pattern over
  every global link but halves the throughput of uniform traffic (Kim et al. 2008 §4.2).
* ``ugal``: UGAL-G (Singh, PhD thesis, Stanford 2005; Kim et al. 2008 §4.2) per group pair:
  minimal unless ``q_min·H_min > q_nm·H_nm``, with ``q`` the flows per global link of the
  path when every flow routes minimally and ``H`` the router hops (3 minimal, 5
  non-minimal).  A flow-level, one-shot decision (no oscillation is modelled).

Valiant and UGAL split ideally over the bundles, like ``adaptive``.  With fewer than three
groups there is no intermediate group and they route minimally.
"""

from __future__ import annotations

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.hashing import bundle_hop, pick
from clusterforge.netsim.vocab import Routing
from clusterforge.topology import FabricGraph

__all__ = ["DRAGONFLY_ROUTINGS", "UGAL_MINIMAL_HOPS", "UGAL_NONMINIMAL_HOPS", "route_dragonfly"]

DRAGONFLY_ROUTINGS = ("valiant", "ugal")
# Router hops of a minimal (local-global-local) and a Valiant (local-global-local-global-local)
# dragonfly path: the H of UGAL's q·H comparison (Kim et al. 2008 §4.2).
UGAL_MINIMAL_HOPS = 3
UGAL_NONMINIMAL_HOPS = 5


def route_dragonfly(
    graph: FabricGraph,
    r_s: np.ndarray,
    r_d: np.ndarray,
    key: np.ndarray,
    routing: Routing,
    owner: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """(segment, link, fraction, multiplicity) of router-to-router segments; ``owner`` is the
    demand of each segment (Valiant shares path middles inside one demand)."""
    ecmp = routing == "ecmp"
    a_ = graph.connectivity.routers_per_group
    g_s, g_d = r_s // a_, r_d // a_
    seg = np.arange(r_s.size)
    same = g_s == g_d
    one = np.ones(int(same.sum()))
    parts = [(seg[same], bundle_hop(graph, r_s[same], r_d[same], key[same], ecmp, 9), one, one)]
    detour = np.zeros(r_s.size, bool)
    if routing in DRAGONFLY_ROUTINGS and graph.connectivity.num_groups >= 3:
        detour = ~same if routing == "valiant" else _ugal_detour(graph, g_s, g_d) & ~same
    minimal = ~same & ~detour
    if minimal.any():
        s, link, f = _minimal_inter(graph, r_s[minimal], r_d[minimal], key[minimal], ecmp)
        parts.append((seg[minimal][s], link, f, np.ones(f.size)))
    if detour.any():
        s, link, f, mult = _valiant_inter(graph, r_s[detour], r_d[detour], owner[detour])
        parts.append((seg[detour][s], link, f, mult))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def _minimal_inter(
    graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray, key: np.ndarray, ecmp: bool
) -> tuple[np.ndarray, ...]:
    """Minimal routes between routers of different groups."""
    a_ = graph.connectivity.routers_per_group
    s2, x, y, f = _global_choices(graph, r_s // a_, r_d // a_, key, ecmp)
    k2 = key[s2]
    segs, links, fracs = [], [], []
    for u, v, salt in ((r_s[s2], x, 10), (x, y, 11), (y, r_d[s2], 12)):
        hop = u != v
        segs.append(s2[hop])
        links.append(bundle_hop(graph, u[hop], v[hop], k2[hop], ecmp, salt))
        fracs.append(f[hop])
    return np.concatenate(segs), np.concatenate(links), np.concatenate(fracs)


def _intermediate_groups(
    g_s: np.ndarray, g_d: np.ndarray, num_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """(segment, group) for every group other than each segment's two ends."""
    per = num_groups - 2
    seg = np.repeat(np.arange(g_s.size), per)
    c = np.tile(np.arange(per), g_s.size)
    lo, hi = np.minimum(g_s, g_d)[seg], np.maximum(g_s, g_d)[seg]
    k = c + (c >= lo)
    return seg, k + (k >= hi)


def _legs(
    graph: FabricGraph, g_s: np.ndarray, g_d: np.ndarray
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray]:
    """Both global legs of every (item, intermediate group), split over the bundles."""
    item, mid = _intermediate_groups(g_s, g_d, graph.connectivity.num_groups)
    no_key = np.zeros(mid.size, np.int64)
    leg1 = _global_choices(graph, g_s[item], mid, no_key, False)
    leg2 = _global_choices(graph, mid, g_d[item], no_key, False)
    return leg1, leg2, item


def _valiant_inter(
    graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray, owner: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Valiant routes, split evenly over every intermediate group and, inside each global
    leg, over the bundles by link count.

    The first and last local hops depend on the segment's routers; the middle (global leg 1,
    the local hop in the intermediate group from leg 1's entry router to leg 2's exit router,
    which carries the product of their fractions, and global leg 2) only on the two groups.
    Segments of one demand between the same two groups load the middle identically, so one
    of them carries it with multiplicity = their count: memory O(segments × groups × bundles
    + demand-group-pairs × groups × bundles²)."""
    a_ = graph.connectivity.routers_per_group
    weight = 1.0 / (graph.connectivity.num_groups - 2)
    g_s, g_d = r_s // a_, r_d // a_
    (s1, x1, _, f1), (s2, _, y2, f2), item = _legs(graph, g_s, g_d)
    hops = [
        (item[s1], r_s[item[s1]], x1, f1, np.ones(f1.size)),
        (item[s2], y2, r_d[item[s2]], f2, np.ones(f2.size)),
    ]
    pair_key = (owner * graph.connectivity.num_groups + g_s) * graph.connectivity.num_groups + g_d
    _, rep, count = np.unique(pair_key, return_index=True, return_counts=True)
    (s1, x1, y1, f1), (s2, x2, y2, f2), item = _legs(graph, g_s[rep], g_d[rep])
    c2 = np.bincount(s2, minlength=item.size)
    e1 = np.repeat(np.arange(s1.size), c2[s1])  # leg-1 entry of each (leg 1, leg 2) pair
    first2 = np.cumsum(c2) - c2
    e2 = first2[s1[e1]] + np.arange(e1.size) - np.repeat(np.cumsum(c2[s1]) - c2[s1], c2[s1])
    hops += [
        (rep[item[s1]], x1, y1, f1, count[item[s1]]),
        (rep[item[s1[e1]]], y1[e1], x2[e2], f1[e1] * f2[e2], count[item[s1[e1]]]),
        (rep[item[s2]], x2, y2, f2, count[item[s2]]),
    ]
    segs, links, fracs, mults = [], [], [], []
    for seg, u, v, f, mult in hops:
        hop = u != v
        segs.append(seg[hop])
        links.append(
            bundle_hop(graph, u[hop], v[hop], np.zeros(int(hop.sum()), np.int64), False, 0)
        )
        fracs.append(f[hop] * weight)
        mults.append(mult[hop].astype(float))
    cat = np.concatenate
    return cat(segs), cat(links), cat(fracs), cat(mults)


def _ugal_detour(graph: FabricGraph, g_s: np.ndarray, g_d: np.ndarray) -> np.ndarray:
    """UGAL-G choice per segment: True where the minimal path's global load times its hops
    exceeds the non-minimal one's.  Loads are flows per global link of each directed group
    pair with every flow routed minimally; the non-minimal load is the mean over the
    intermediate groups of the busier of its two global legs."""
    num = graph.connectivity.num_groups
    a_ = graph.connectivity.routers_per_group
    ga, gb = graph.bundle_a // a_, graph.bundle_b // a_
    glob = ga != gb
    links = np.zeros((num, num))
    np.add.at(links, (ga[glob], gb[glob]), graph.bundle_n[glob])
    links = links + links.T
    other = g_s != g_d
    flows = np.bincount(g_s[other] * num + g_d[other], minlength=num * num).reshape(num, num)
    q = np.divide(flows, links, out=np.zeros_like(links), where=links > 0)
    pairs, inverse = np.unique(g_s * num + g_d, return_inverse=True)
    ps, pd = np.divmod(pairs, num)
    chunk = max(1, 2**22 // num)  # bounds the (pairs × groups) temporary at 32 MiB
    q_nm = np.concatenate(
        [
            _mean_detour_load(q, ps[i : i + chunk], pd[i : i + chunk])
            for i in range(0, pairs.size, chunk)
        ]
    )
    detour = q[ps, pd] * UGAL_MINIMAL_HOPS > q_nm * UGAL_NONMINIMAL_HOPS
    return detour[inverse]


def _mean_detour_load(q: np.ndarray, ps: np.ndarray, pd: np.ndarray) -> np.ndarray:
    legs = np.maximum(q[ps, :], q[:, pd].T)
    mask = np.ones(legs.shape, bool)
    rows = np.arange(ps.size)
    mask[rows, ps] = False
    mask[rows, pd] = False
    return np.asarray((legs * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1))


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
        chosen = gb[start + pick(key, 13, count)]
        frac = np.ones(seg.size)
    else:
        seg = np.repeat(np.arange(g_s.size), count)
        offs = np.arange(seg.size) - np.repeat(np.cumsum(count) - count, count)
        chosen = gb[np.repeat(start, count) + offs]
        weight = graph.bundle_n[chosen].astype(float)
        frac = weight / np.bincount(seg, weights=weight)[seg]
    ra, rb = graph.bundle_a[chosen], graph.bundle_b[chosen]
    forward = (ra // a_) == g_s[seg]
    x = np.where(forward, ra, rb)
    y = np.where(forward, rb, ra)
    return seg, x, y, frac
