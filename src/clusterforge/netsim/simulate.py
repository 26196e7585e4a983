"""``simulate_collective``: one collective, many concurrent groups, on a :class:`FabricGraph`.

The bandwidth part of a collective scales linearly with the message size, so each
(groups, collective, algorithm, routing) combination is solved once per graph at unit size
and cached; every size after that costs a few float operations (the perf model calls this
many times).  Time at size S (nccl-tests ``size``)::

    t(S) = LAUNCH_S + Σ_phases [ steps·path_latency + unit_time·S / eta(S) ]

with constants and sources in :mod:`clusterforge.netsim.model`.
"""

from __future__ import annotations

import hashlib
import weakref

import numpy as np
import scipy.sparse as sp

from clusterforge.errors import SimulationError, did_you_mean
from clusterforge.netsim.collectives import (
    ALGORITHMS,
    build_phases,
    candidate_algorithms,
    ring_order,
)
from clusterforge.netsim.congestion import backpressure
from clusterforge.netsim.maxmin import completion_time, incidence
from clusterforge.netsim.model import (
    COLLECTIVES,
    LAUNCH_S,
    NETWORK_EFFICIENCY,
    bus_factor,
    pipeline_efficiency,
    pipelined_time_s,
    scaleup_efficiency,
)
from clusterforge.netsim.result import CollectiveResult, PhaseSolution, summarize
from clusterforge.netsim.routing import check_routing, route_intra, route_net
from clusterforge.netsim.traffic import Traffic
from clusterforge.topology import FabricGraph

__all__ = ["collective_time_s", "simulate_collective", "solve_phases"]

_CACHE: weakref.WeakKeyDictionary[FabricGraph, dict[tuple, list[PhaseSolution]]] = (
    weakref.WeakKeyDictionary()
)
_CACHE_ENTRIES = 128


def _check(
    graph: FabricGraph,
    collective: str,
    routing: str,
    algorithm: str,
    num_qps: int,
    size_bytes: float,
) -> None:
    if collective not in COLLECTIVES:
        raise SimulationError(
            f"--collective: unknown collective {collective!r}"
            f"{did_you_mean(collective, COLLECTIVES)}; use one of {', '.join(COLLECTIVES)}"
        )
    check_routing(graph, routing)
    if algorithm not in ALGORITHMS:
        raise SimulationError(
            f"--algorithm: unknown algorithm {algorithm!r}"
            f"{did_you_mean(algorithm, ALGORITHMS)}; use one of {', '.join(ALGORITHMS)}"
        )
    if int(num_qps) < 1:
        raise SimulationError(f"--qps: {num_qps} queue pairs; use 1 or more")
    if not size_bytes > 0:
        raise SimulationError(f"--size: {size_bytes} bytes; use a positive size such as 1GiB")


def _groups(graph: FabricGraph, groups: np.ndarray) -> np.ndarray:
    arr = np.asarray(groups)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise SimulationError(
            "groups: expected a 2-D integer array (num_groups, group_size) of GPU ranks; "
            "build one with clusterforge.netsim.groups_for"
        )
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= graph.num_gpus:
        raise SimulationError(
            f"groups: GPU rank {int(arr.max())} outside this design's {graph.num_gpus} GPUs; "
            "use --gpus at most the cluster size"
        )
    srt = np.sort(arr, axis=1)
    if np.any(srt[:, 1:] == srt[:, :-1]):
        raise SimulationError("groups: a GPU appears twice in one group; give distinct ranks")
    return arr


def solve_phase(graph: FabricGraph, traffic: Traffic, routing: str, num_qps: int) -> PhaseSolution:
    """Route one phase, allocate max-min rates and time it at unit size."""
    seg_i, link_i, frac_i = route_intra(graph, traffic.intra_src, traffic.intra_dst)
    seg_n, link_n, frac_n, load_n = route_net(
        graph, traffic.net, routing, num_qps, traffic.net_demand
    )
    eff = scaleup_efficiency(traffic.algorithm, graph.scaleup)
    link = np.concatenate([link_i, link_n])
    demand = np.concatenate([traffic.intra_demand[seg_i], traffic.net_demand[seg_n]])
    weight_i = traffic.weights()[seg_i]
    coef = np.concatenate([frac_i * weight_i / eff, load_n / NETWORK_EFFICIENCY])
    a, at = incidence(link, demand, coef, graph.num_links, traffic.volume.size)
    cap = graph.capacity_gbyte_per_s
    done = completion_time(a, at, cap, traffic.volume)
    lat = graph.latency_s
    path = 2 * float(lat[link_i].max()) if link_i.size else 0.0
    if seg_n.size:
        path = max(path, float(np.bincount(seg_n, weights=lat[link_n] * frac_n).max()))
    view = graph.in_ecmp if routing == "ecmp" else graph.in_adaptive
    offered = _offered(graph, a, cap) / cap
    return PhaseSolution(
        unit_time_s=done.time_s / 1e9,
        latency_s=traffic.steps * path,
        utilization=(a @ np.where(np.isfinite(done.steady_rate), done.steady_rate, 0)) / cap,
        busy_fraction=(a @ traffic.volume) / cap / max(done.time_s, 1e-300),
        offered_load=offered,
        view=view,
        backpressure=backpressure(graph, seg_n, link_n, offered, view),
        pipelined=traffic.pipelined,
        num_flows=int(np.unique(seg_n).size + traffic.intra_src.size)
        if seg_n.size
        else int(traffic.intra_src.size),
        num_demands=int(traffic.volume.size),
    )


def _offered(graph: FabricGraph, a: sp.csr_matrix, cap: np.ndarray) -> np.ndarray:
    """Load each link would get if every demand sent at its fair share of its first hop
    (GPU port or NIC port), i.e. before the fabric pushes back: the congestion indicator."""
    coo = a.tocoo()
    first_hop = (coo.row < graph.num_gpus) | (
        (coo.row >= 2 * graph.num_gpus) & (coo.row < 2 * graph.num_gpus + graph.num_ports)
    )
    row_load = np.asarray(a.sum(axis=1)).ravel()
    rate = np.full(a.shape[1], np.inf)
    r, c = coo.row[first_hop], coo.col[first_hop]
    np.minimum.at(rate, c, cap[r] / row_load[r])
    rate[~np.isfinite(rate)] = 0.0
    return np.asarray(a @ rate).ravel()


def _cache_key(
    collective: str, algorithm: str, routing: str, num_qps: int, pxn: bool, groups: np.ndarray
) -> tuple:
    digest = hashlib.blake2b(groups.tobytes(), digest_size=16).hexdigest()
    return (collective, algorithm, routing, num_qps, pxn, groups.shape, digest)


def solve_phases(
    graph: FabricGraph,
    collective: str,
    algorithm: str,
    groups: np.ndarray,
    routing: str,
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


def _time_s(phases: list[PhaseSolution], size_bytes: float) -> float:
    """Launch + every phase's latency + bandwidth time; phases that pipeline chunks
    (``pipelined``) overlap, see :func:`pipelined_time_s`."""
    eta = pipeline_efficiency(size_bytes)
    bandwidth = [p.unit_time_s * size_bytes / eta for p in phases]
    serial = sum(t for t, p in zip(bandwidth, phases, strict=True) if not p.pipelined)
    overlapped = [t for t, p in zip(bandwidth, phases, strict=True) if p.pipelined]
    shared = _shared_link_s([p for p in phases if p.pipelined]) * size_bytes / eta
    latency = sum(p.latency_s for p in phases)
    return LAUNCH_S + latency + serial + max(pipelined_time_s(overlapped, size_bytes), shared)


def _shared_link_s(phases: list[PhaseSolution]) -> float:
    """Seconds per byte the busiest link needs for all overlapping phases together: stages
    that share a link (one NVL72 domain, a PCIe GPU's x16 link) cannot overlap on it."""
    if len(phases) < 2:
        return 0.0
    busy = sum(p.busy_fraction * p.unit_time_s for p in phases)
    return float(np.max(busy))


def simulate_collective(
    graph: FabricGraph,
    collective: str,
    size_bytes: float,
    groups: np.ndarray,
    routing: str = "adaptive",
    num_qps: int = 1,
    algorithm: str = "auto",
    pxn: bool | None = None,
) -> CollectiveResult:
    """Simulate ``collective`` of ``size_bytes`` (the nccl-tests ``size``) run by every row of
    ``groups`` at once.  Groups of one GPU communicate nothing: time 0, bandwidths 0.  ``pxn`` (default: on for rail-optimized fabrics) forwards over NVLink
    to the GPU on the destination's rail before entering the fabric."""
    _check(graph, collective, routing, algorithm, num_qps, size_bytes)
    arr = _groups(graph, groups)
    n = arr.shape[1]
    pxn = graph.rail_optimized if pxn is None else pxn
    if n < 2:
        return summarize(graph, collective, "none", routing, num_qps, size_bytes, arr, [], 0.0, 0.0)
    names = [algorithm]
    if algorithm == "auto":
        names = candidate_algorithms(graph, collective, ring_order(graph, arr))
    best: tuple[float, str, list[PhaseSolution]] | None = None
    for name in names:
        phases = solve_phases(graph, collective, name, arr, routing, int(num_qps), pxn)
        t = _time_s(phases, size_bytes)
        if best is None or t < best[0]:
            best = (t, name, phases)
    assert best is not None  # names is never empty
    return summarize(
        graph,
        collective,
        best[1],
        routing,
        int(num_qps),
        size_bytes,
        arr,
        best[2],
        best[0],
        bus_factor(collective, n),
    )


def collective_time_s(
    graph: FabricGraph,
    collective: str,
    size_bytes: float,
    groups: np.ndarray,
    routing: str = "adaptive",
    num_qps: int = 1,
) -> float:
    """Seconds of :func:`simulate_collective` (best algorithm) without building its report:
    the fast path for callers that need only the time (the performance model's search)."""
    _check(graph, collective, routing, "auto", num_qps, size_bytes)
    arr = _groups(graph, groups)
    if arr.shape[1] < 2:
        return 0.0
    pxn = graph.rail_optimized
    names = candidate_algorithms(graph, collective, ring_order(graph, arr))
    return min(
        _time_s(solve_phases(graph, collective, name, arr, routing, int(num_qps), pxn), size_bytes)
        for name in names
    )
