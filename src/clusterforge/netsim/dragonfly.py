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
groups there is no intermediate group and they route minimally.  A Valiant path is written
once per shared part (:class:`SharedRoutes`): the first local hop per (source router,
destination group), the middle per group pair, the last local hop per (source group,
destination router); a segment refers to its three parts, so routing costs time and memory
linear in the segments plus the parts (``benchmarks/dragonfly_valiant.py``), and the
simulator keeps them factored (:class:`~clusterforge.netsim.incidence.SharedPaths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.hashing import bundle_hop, pick
from clusterforge.netsim.vocab import Routing
from clusterforge.topology import FabricGraph

__all__ = [
    "DRAGONFLY_ROUTINGS",
    "UGAL_MINIMAL_HOPS",
    "UGAL_NONMINIMAL_HOPS",
    "SharedRoutes",
    "route_dragonfly",
]

DRAGONFLY_ROUTINGS = ("valiant", "ugal")
# Router hops of a minimal (local-global-local) and a Valiant (local-global-local-global-local)
# dragonfly path: the H of UGAL's q·H comparison (Kim et al. 2008 §4.2).
UGAL_MINIMAL_HOPS = 3
UGAL_NONMINIMAL_HOPS = 5


@dataclass(frozen=True)
class SharedRoutes:
    """Path parts that many segments share, each stored once as a *pattern*: pattern
    ``pattern[i]`` sends ``frac[i]`` of the rate of every segment that runs through it over
    ``link[i]``; segment ``seg[j]`` runs ``weight[j]`` of its rate through pattern
    ``seg_pattern[j]``."""

    pattern: np.ndarray
    link: np.ndarray
    frac: np.ndarray
    seg: np.ndarray
    seg_pattern: np.ndarray
    weight: np.ndarray
    num_patterns: int


def route_dragonfly(
    graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray, key: np.ndarray, routing: Routing
) -> tuple[tuple[np.ndarray, ...], SharedRoutes | None]:
    """(segment, link, fraction) of router-to-router segments, and the Valiant detours'
    shared patterns (None when no segment detours)."""
    ecmp = routing == "ecmp"
    a_ = graph.connectivity.routers_per_group
    g_s, g_d = r_s // a_, r_d // a_
    seg = np.arange(r_s.size)
    same = g_s == g_d
    parts = [(seg[same], bundle_hop(graph, r_s[same], r_d[same], key[same], ecmp, 9))]
    fracs = [np.ones(int(same.sum()))]
    detour = np.zeros(r_s.size, bool)
    if routing in DRAGONFLY_ROUTINGS and graph.connectivity.num_groups >= 3:
        detour = ~same if routing == "valiant" else _ugal_detour(graph, g_s, g_d) & ~same
    minimal = ~same & ~detour
    if minimal.any():
        s, link, f = _minimal_inter(graph, r_s[minimal], r_d[minimal], key[minimal], ecmp)
        parts.append((seg[minimal][s], link))
        fracs.append(f)
    shared = None
    if detour.any():
        shared = _valiant_inter(graph, r_s[detour], r_d[detour])
        shared = replace(shared, seg=seg[detour][shared.seg])
    own = (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate(fracs),
    )
    return own, shared


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


def _valiant_inter(graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray) -> SharedRoutes:
    """Valiant routes, split evenly over every intermediate group and, inside each global
    leg, over the bundles by link count, as three shared patterns per segment.

    A segment from router ``r_s`` (group ``g_s``) to ``r_d`` (group ``g_d``) runs through:
    the first local hop, from ``r_s`` to the exit routers of every leg 1, which depends only
    on (``r_s``, ``g_d``); the middle (global leg 1, the local hop in the intermediate group
    from leg 1's entry router to leg 2's exit router, which carries the product of their
    fractions, and global leg 2), which depends only on (``g_s``, ``g_d``); and the last local
    hop, from the entry routers of every leg 2 to ``r_d``, which depends only on (``g_s``,
    ``r_d``).  Each is one pattern, summed over intermediate groups and bundles by router
    (the hop u -> v carries the sum of every path's share through it), so the work is linear
    in the segments plus the patterns: group pairs × groups × (bundles + routers per group²)
    at most, whatever the number of flows (traffic that joins every pair of G groups reaches
    G³ middle entries: 7.5 million × that bracket for 196 groups)."""
    a_ = graph.connectivity.routers_per_group
    num = graph.connectivity.num_groups
    g_s, g_d = r_s // a_, r_d // a_
    pairs, pair_of = np.unique(g_s * num + g_d, return_inverse=True)
    middle, out_of, into = _middle(graph, *np.divmod(pairs, num))
    first_keys, first_of = np.unique(r_s * num + g_d, return_inverse=True)
    last_keys, last_of = np.unique(g_s * (num * a_) + r_d, return_inverse=True)
    first = _local_fan(graph, *np.divmod(first_keys, num), out_of, pairs, True)
    last = _local_fan(graph, *np.divmod(last_keys, num * a_), into, pairs, False)
    patterns = [first, middle, last]
    offsets = np.array([0, first_keys.size, first_keys.size + pairs.size])
    seg = np.arange(r_s.size)
    return SharedRoutes(
        pattern=np.concatenate([p[0] + o for p, o in zip(patterns, offsets, strict=True)]),
        link=np.concatenate([p[1] for p in patterns]),
        frac=np.concatenate([p[2] for p in patterns]),
        seg=np.concatenate([seg, seg, seg]),
        seg_pattern=np.concatenate([first_of, pair_of + offsets[1], last_of + offsets[2]]),
        weight=np.ones(3 * seg.size),
        num_patterns=int(offsets[2] + last_keys.size),
    )


def _middle(
    graph: FabricGraph, ps: np.ndarray, pd: np.ndarray
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The middle pattern of each group pair (``ps`` -> ``pd``): (pair, link, fraction); and,
    per pair, the share of the rate leaving by each exit router of ``ps`` and entering by
    each entry router of ``pd``: (pair, router, share), summed over the intermediate groups
    and bundles, with every intermediate group weighing 1 / (groups - 2)."""
    weight = 1.0 / (graph.connectivity.num_groups - 2)
    item, mid = _intermediate_groups(ps, pd, graph.connectivity.num_groups)
    no_key = np.zeros(mid.size, np.int64)
    s1, x1, y1, f1 = _global_choices(graph, ps[item], mid, no_key, False)
    s2, x2, y2, f2 = _global_choices(graph, mid, pd[item], no_key, False)
    # leg 1's entry routers and leg 2's exit routers per (pair, intermediate group)
    num_routers = graph.connectivity.num_switches
    e_1, y_1, p_1 = _sum_by(s1, y1, f1, num_routers)
    e_2, x_2, p_2 = _sum_by(s2, x2, f2, num_routers)
    c2 = np.bincount(e_2, minlength=mid.size)
    first2 = np.cumsum(c2) - c2
    # every (entry router, exit router) of one (pair, intermediate group)
    i1 = np.repeat(np.arange(e_1.size), c2[e_1])
    rank = np.arange(i1.size) - np.repeat(np.cumsum(c2[e_1]) - c2[e_1], c2[e_1])
    i2 = first2[e_1[i1]] + rank
    hops = [
        (item[s1], x1, y1, f1),
        (item[e_1[i1]], y_1[i1], x_2[i2], p_1[i1] * p_2[i2]),
        (item[s2], x2, y2, f2),
    ]
    middle = _links(graph, hops, weight)
    out_of = _sum_by(item[s1], x1, f1 * weight, num_routers)
    into = _sum_by(item[s2], y2, f2 * weight, num_routers)
    return middle, out_of, into


def _local_fan(
    graph: FabricGraph,
    hi: np.ndarray,
    lo: np.ndarray,
    shares: tuple[np.ndarray, ...],
    pairs: np.ndarray,
    leaving: bool,
) -> tuple[np.ndarray, ...]:
    """First-hop patterns (``leaving``: key (router r_s, group g_d); local hops r_s -> every
    exit router) or last-hop patterns (key (group g_s, router r_d); every entry router ->
    r_d), each from its group pair's shares: (pattern, link, fraction)."""
    a_ = graph.connectivity.routers_per_group
    num = graph.connectivity.num_groups
    router = hi if leaving else lo
    pair_key = hi // a_ * num + lo if leaving else hi * num + lo // a_
    pair = np.searchsorted(pairs, pair_key)
    s_pair, s_router, s_share = shares
    count = np.bincount(s_pair, minlength=pairs.size)
    start = np.cumsum(count) - count
    pattern = np.repeat(np.arange(hi.size), count[pair])
    at = np.repeat(start[pair], count[pair]) + (
        np.arange(pattern.size) - np.repeat(np.cumsum(count[pair]) - count[pair], count[pair])
    )
    ends = (router[pattern], s_router[at]) if leaving else (s_router[at], router[pattern])
    return _links(graph, [(pattern, *ends, s_share[at])], 1.0)


def _sum_by(
    owner: np.ndarray, router: np.ndarray, share: np.ndarray, num_routers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``share`` summed per (owner, router): (owner, router, sum), sorted by owner then
    router; ``num_routers`` bounds the router ids."""
    keys, inverse = np.unique(owner * num_routers + router, return_inverse=True)
    total = np.bincount(inverse, weights=share, minlength=keys.size)
    g, r = np.divmod(keys, num_routers)
    return g, r, total


def _links(
    graph: FabricGraph, hops: Sequence[tuple[np.ndarray, ...]], weight: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owner, link, fraction) of hops (owner, u, v, fraction) over each bundle's aggregate
    link; hops that stay on one router are dropped."""
    owners, links, fracs = [], [], []
    for owner, u, v, f in hops:
        hop = u != v
        owners.append(owner[hop])
        links.append(
            bundle_hop(graph, u[hop], v[hop], np.zeros(int(hop.sum()), np.int64), False, 0)
        )
        fracs.append(f[hop] * weight)
    return np.concatenate(owners), np.concatenate(links), np.concatenate(fracs)


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
