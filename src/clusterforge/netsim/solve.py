"""Solve the phases of a collective at unit size: route, allocate max-min rates, cache.

The bandwidth part of a collective scales linearly with the message size, so each
(groups, collective, algorithm, routing) combination is solved once per graph at unit size
and cached; every size after that costs a few float operations (the perf model calls this
many times).
"""

from __future__ import annotations

import hashlib
import weakref

import numpy as np

from clusterforge.errors import SimulationError
from clusterforge.netsim.collectives import build_phases, ring_order
from clusterforge.netsim.congestion import backpressure
from clusterforge.netsim.dragonfly import SharedRoutes
from clusterforge.netsim.incidence import Incidence, SharedPaths
from clusterforge.netsim.maxmin import completion_time
from clusterforge.netsim.model import (
    network_efficiency,
    scaleup_efficiency,
    transport_payload_share,
)
from clusterforge.netsim.result import PhaseSolution
from clusterforge.netsim.routing import Routes, route_intra, route_net
from clusterforge.netsim.traffic import Traffic
from clusterforge.netsim.vocab import Algorithm, Collective, Routing
from clusterforge.topology import FabricGraph

__all__ = ["MAX_ROUTED_PATHS", "solve_phase", "solve_phases"]

_CACHE: weakref.WeakKeyDictionary[FabricGraph, dict[tuple[object, ...], list[PhaseSolution]]] = (
    weakref.WeakKeyDictionary()
)
_CACHE_ENTRIES = 128

# Queue pairs multiply the hashed paths to route: each costs ~300 B of routing and rate
# arrays, so 2 million keep a solve under ~1 GiB (one QP per flow is never refused).
MAX_ROUTED_PATHS = 2_000_000


def solve_phase(
    graph: FabricGraph, traffic: Traffic, routing: Routing, num_qps: int
) -> PhaseSolution:
    """Route one phase, allocate max-min rates and time it at unit size."""
    paths = traffic.net.src_node.size * num_qps
    if num_qps > 1 and paths > MAX_ROUTED_PATHS:
        raise SimulationError(
            f"num_qps: {num_qps} queue pairs x {traffic.net.src_node.size:,} flows = "
            f"{paths:,} hashed paths (limit {MAX_ROUTED_PATHS:,}, about 1 GiB of memory); "
            "use fewer queue pairs or fewer GPUs"
        )
    seg_i, link_i, frac_i = route_intra(graph, traffic.intra_src, traffic.intra_dst)
    routes = route_net(graph, traffic.net, routing, num_qps)
    seg_n, link_n, frac_n = routes.seg, routes.link, routes.frac
    eff = scaleup_efficiency(traffic.algorithm, graph.scaleup)
    eff_net = network_efficiency(traffic.algorithm) * transport_payload_share(graph.transport)
    link = np.concatenate([link_i, link_n])
    demand = np.concatenate([traffic.intra_demand[seg_i], traffic.net_demand[seg_n]])
    weight_i = traffic.weights()[seg_i]
    coef = np.concatenate([frac_i * weight_i / eff, frac_n / eff_net])
    a = Incidence.from_triplets(
        link,
        demand,
        coef,
        num_links=graph.num_links,
        num_demands=traffic.volume.size,
        shared=_shared_incidence(graph, routes.shared, traffic, eff_net),
    )
    cap = graph.capacity_gbyte_per_s
    done = completion_time(a, cap, traffic.volume)
    lat = graph.latency_s
    intra_path = 2 * float(lat[link_i].max()) if link_i.size else 0.0
    net_path = float(_net_path_s(lat, routes).max()) if seg_n.size else 0.0
    path = max(intra_path, net_path)
    view = graph.in_ecmp if routing == "ecmp" else graph.in_adaptive
    offered = _offered(graph, a, cap) / cap
    return PhaseSolution(
        unit_time_s=done.time_s / 1e9,
        latency_s=traffic.steps * path,
        net_path_latency_s=net_path,
        utilization=a.matvec(np.where(np.isfinite(done.steady_rate), done.steady_rate, 0)) / cap,
        busy_fraction=a.matvec(traffic.volume) / cap / max(done.time_s, 1e-300),
        offered_load=offered,
        view=view,
        backpressure=backpressure(graph, *_with_shared_links(routes), offered, view),
        pipelined=traffic.pipelined,
        num_flows=traffic.num_flows,  # every segment is routed: its NIC link at least
        num_demands=int(traffic.volume.size),
    )


def _shared_incidence(
    graph: FabricGraph, shared: SharedRoutes | None, traffic: Traffic, eff_net: float
) -> SharedPaths | None:
    """``P @ V`` of the shared path parts: patterns' links, and each demand's wire bytes
    through each pattern per byte/s."""
    if shared is None:
        return None
    paths = Incidence.from_triplets(
        shared.link,
        shared.pattern,
        shared.frac,
        num_links=graph.num_links,
        num_demands=shared.num_patterns,
    )
    via = Incidence.from_triplets(
        shared.seg_pattern,
        traffic.net_demand[shared.seg],
        shared.weight / eff_net,
        num_links=shared.num_patterns,
        num_demands=traffic.volume.size,
    )
    return SharedPaths(paths, via)


def _net_path_s(lat: np.ndarray, routes: Routes) -> np.ndarray:
    """Latency (s) of each fabric segment's path: its links' latencies weighted by the share
    of its rate that crosses them, shared patterns included."""
    num = int(routes.seg.max()) + 1
    path = np.bincount(routes.seg, weights=lat[routes.link] * routes.frac, minlength=num)
    shared = routes.shared
    if shared is not None:
        per_pattern = np.bincount(
            shared.pattern, weights=lat[shared.link] * shared.frac, minlength=shared.num_patterns
        )
        path += np.bincount(
            shared.seg, weights=per_pattern[shared.seg_pattern] * shared.weight, minlength=num
        )
    return path


def _with_shared_links(routes: Routes) -> tuple[np.ndarray, np.ndarray]:
    """(segment, link) of every segment's own links, plus each shared pattern's links under
    the first segment that runs through it: what the pause propagation walks (one segment
    per pattern keeps it linear in the flows)."""
    shared = routes.shared
    if shared is None:
        return routes.seg, routes.link
    patterns, first = np.unique(shared.seg_pattern, return_index=True)
    first_seg = np.full(shared.num_patterns, -1)
    first_seg[patterns] = shared.seg[first]
    return (
        np.concatenate([routes.seg, first_seg[shared.pattern]]),
        np.concatenate([routes.link, shared.link]),
    )


def _offered(graph: FabricGraph, a: Incidence, cap: np.ndarray) -> np.ndarray:
    """Load each link would get if every demand sent at its fair share of its first hop
    (GPU port or NIC port), i.e. before the fabric pushes back: the congestion indicator."""
    first_hop = (a.link < graph.num_gpus) | (
        (a.link >= 2 * graph.num_gpus) & (a.link < 2 * graph.num_gpus + graph.num_cabled_ports)
    )
    row_load = a.row_sums()
    rate = np.full(a.num_demands, np.inf)
    r, c = a.link[first_hop], a.demand[first_hop]
    np.minimum.at(rate, c, cap[r] / row_load[r])
    rate[~np.isfinite(rate)] = 0.0
    return a.matvec(rate)


def _cache_key(
    collective: str, algorithm: str, routing: str, num_qps: int, pxn: bool, groups: np.ndarray
) -> tuple[object, ...]:
    digest = hashlib.blake2b(groups.tobytes(), digest_size=16).hexdigest()
    return (collective, algorithm, routing, num_qps, pxn, groups.shape, digest)


def solve_phases(
    graph: FabricGraph,
    collective: Collective,
    algorithm: Algorithm,
    groups: np.ndarray,
    routing: Routing,
    num_qps: int,
    pxn: bool,
) -> list[PhaseSolution]:
    """Unit-size solutions of every phase (cached per graph)."""
    memo = _CACHE.setdefault(graph, {})
    key = _cache_key(collective, algorithm, routing, num_qps, pxn, groups)
    if key not in memo:
        seq = ring_order(graph, groups)
        phases = build_phases(graph, collective, algorithm, seq, pxn)
        memo[key] = [solve_phase(graph, p, routing, num_qps) for p in phases]
        while len(memo) > _CACHE_ENTRIES:
            memo.pop(next(iter(memo)))
    return memo[key]
