"""The first Valiant expansion (every intermediate group and every pair of bundles written out
per demand and group pair), kept as the reference the shared-pattern routing must match."""

from __future__ import annotations

import numpy as np

from clusterforge.netsim.dragonfly import _global_choices, _intermediate_groups
from clusterforge.netsim.hashing import bundle_hop
from clusterforge.topology import FabricGraph

__all__ = ["valiant_expanded"]


def _legs(
    graph: FabricGraph, g_s: np.ndarray, g_d: np.ndarray
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray]:
    item, mid = _intermediate_groups(g_s, g_d, graph.connectivity.num_groups)
    no_key = np.zeros(mid.size, np.int64)
    leg1 = _global_choices(graph, g_s[item], mid, no_key, False)
    leg2 = _global_choices(graph, mid, g_d[item], no_key, False)
    return leg1, leg2, item


def valiant_expanded(
    graph: FabricGraph, r_s: np.ndarray, r_d: np.ndarray, owner: np.ndarray
) -> tuple[np.ndarray, ...]:
    """(segment, link, fraction, multiplicity): a segment's load on a link is fraction x
    multiplicity; one segment per (owner, group pair) carries the path middle for all."""
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
    e1 = np.repeat(np.arange(s1.size), c2[s1])
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
