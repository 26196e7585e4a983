"""``simulate_collective``: one collective, many concurrent groups, on a :class:`FabricGraph`.

For every (algorithm, protocol) pair NCCL would consider, the time at size S (nccl-tests
``size``) is NCCL's cost model with our bandwidth::

    t(S) = latency(algorithm, protocol)                            (tuner: NCCL's constants)
         + steady(S) / eta(steady(S))                             (Simple's pipeline ramp)
    steady(S) = Σ_phases unit_time · S / share(protocol) / channels(S)
                                        (flow model, max-min rates; NCCL's channels in use)

and the fastest pair is reported, as NCCL's tuner picks it (``ncclTopoGetAlgoTime``), ranked
with NCCL's own latency estimate where it differs from the call's (broadcast and reduce:
:func:`~clusterforge.netsim.latency.tuner_latency_s`).  Where
the hottest link is offered more than it carries, the bandwidth time is divided by the share of
it that stays useful: rate control's saw-tooth, or go-back-N resends on a lossy fabric without
it (:func:`~clusterforge.netsim.congestion.congested_link_share`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from clusterforge.busbw import bus_factor
from clusterforge.constants import read_constants
from clusterforge.errors import SimulationError, did_you_mean
from clusterforge.netsim.alltoall import proxy_serial_s
from clusterforge.netsim.collectives import candidate_algorithms, ring_order
from clusterforge.netsim.congestion import congested_link_share, window_packets
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.latency import chain_fill_s, latency_s, tree_fill_s, tuner_offset_s
from clusterforge.netsim.model import (
    nvls_pipeline_efficiency,
    pipeline_efficiency,
    pipelined_time_s,
)
from clusterforge.netsim.ofi_tuner import NCCL_TUNERS, NcclTuner, region_pairs
from clusterforge.netsim.result import (
    OVERLOAD,
    Choice,
    CollectiveResult,
    PhaseSolution,
    summarize,
)
from clusterforge.netsim.routing import check_routing
from clusterforge.netsim.solve import solve_phases
from clusterforge.netsim.tuner import (
    TuningContext,
    active_channels,
    busbw_cap_gbyte_per_s,
    channel_cap_gbyte_per_s,
    nvls_channels,
    nvls_chunk_bytes,
    payload_share,
    protocols_for,
)
from clusterforge.netsim.vocab import (
    ALGORITHMS,
    COLLECTIVES,
    PROTOCOLS,
    Algorithm,
    AlgorithmChoice,
    Collective,
    Protocol,
    ProtocolChoice,
    Routing,
)
from clusterforge.topology import FabricGraph

__all__ = ["MAX_QPS", "collective_time_s", "simulate_collective"]

_NCCL = read_constants("clusterforge.netsim", "nccl.toml")
# NCCL's queue pairs per connection at most (NCCL_IB_MAX_QPS); more would also cost memory.
MAX_QPS = _NCCL.integer("max_qps_per_connection")
# NCCL's correction of tree bandwidth for medium sizes, by protocol and log2(size / 64 B).
_TREE_CORRECTION = _NCCL.rows("tree_correction")


@dataclass(frozen=True)
class _Request:
    collective: Collective
    routing: Routing
    num_qps: int
    algorithm: AlgorithmChoice
    protocol: ProtocolChoice
    pxn: bool
    nvls: bool = True  # NCCL_NVLS_ENABLE (collectives.candidate_algorithms)
    ll128_c2c: bool = True  # NCCL_LL128_C2C (tuner.ll128_enabled)


def _check(graph: FabricGraph, req: _Request, size_bytes: float) -> None:
    for field, value, allowed in (
        ("collective", req.collective, COLLECTIVES),
        ("algorithm", req.algorithm, ALGORITHMS),
        ("protocol", req.protocol, PROTOCOLS),
    ):
        if value not in allowed:
            raise SimulationError(
                f"{field}: unknown {field} {value!r}{did_you_mean(str(value), allowed)}; "
                f"use one of {', '.join(allowed)}"
            )
    check_routing(graph, req.routing)
    if graph.nccl_tuner not in NCCL_TUNERS:
        raise SimulationError(
            f"nccl_tuner: unknown tuner {graph.nccl_tuner!r}"
            f"{did_you_mean(graph.nccl_tuner, NCCL_TUNERS)}; use one of {', '.join(NCCL_TUNERS)}"
        )
    bad = [p for p in graph.nccl_protocols or () if p not in PROTOCOLS or p == "auto"]
    if bad or graph.nccl_protocols == ():
        raise SimulationError(
            f"nccl_protocols: {list(graph.nccl_protocols or ())} is not a list of NCCL protocols; "
            "name one or more of ll, ll128, simple (NCCL_PROTO), or none for NCCL's default"
        )
    if not req.nvls and req.algorithm in ("nvls", "nvls_tree"):
        raise SimulationError(
            f"algorithm {req.algorithm}: NVLS is off (NCCL_NVLS_ENABLE=0 leaves NCCL no NVLS "
            "or NVLS-Tree); use ring, tree or auto, or switch NVLS on"
        )
    if not 1 <= int(req.num_qps) <= MAX_QPS:
        raise SimulationError(
            f"num_qps: {req.num_qps} queue pairs per connection; use 1 to {MAX_QPS} "
            "(NCCL's limit, NCCL_IB_MAX_QPS)"
        )
    if not (size_bytes > 0 and math.isfinite(size_bytes)):
        raise SimulationError(f"size: {size_bytes} bytes; use a positive size such as 1GiB")


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
            "ask for at most the cluster size"
        )
    srt = np.sort(arr, axis=1)
    if np.any(srt[:, 1:] == srt[:, :-1]):
        raise SimulationError("groups: a GPU appears twice in one group; give distinct ranks")
    _check_cabled(graph, arr)
    return arr


def _check_cabled(graph: FabricGraph, arr: np.ndarray) -> None:
    """A group that leaves its scale-up domain needs the fabric: every node of it must be
    cabled (the fabric joins nodes ``[0, connectivity.num_nodes)``; the spares after them
    are cold or on a separate pool)."""
    domain = arr // graph.domain_gpus
    spans = domain.min(axis=1) != domain.max(axis=1)
    node = arr // graph.gpus_per_node
    off = spans[:, None] & (node >= graph.connectivity.num_nodes)
    if off.any():
        name = graph.node_names[int(node[off][0])]
        raise SimulationError(
            f"groups: node {name} is a spare not cabled to the compute fabric, and a group "
            "spanning nodes uses it; place ranks with clusterforge.netsim.groups_for"
        )


def _bandwidth_s(phases: list[PhaseSolution], size_bytes: float, share: float) -> float:
    """Bandwidth time: serial phases add, pipelined phases overlap (never faster than the
    busiest link needs for all of them together)."""
    bandwidth = [p.unit_time_s * size_bytes / share for p in phases]
    serial = sum(t for t, p in zip(bandwidth, phases, strict=True) if not p.pipelined)
    overlapped = [t for t, p in zip(bandwidth, phases, strict=True) if p.pipelined]
    piped = [p for p in phases if p.pipelined]
    shared = 0.0
    if len(piped) > 1:
        shared = float(np.max(sum(p.busy_fraction * p.unit_time_s for p in piped)))
    return serial + max(pipelined_time_s(overlapped, size_bytes), shared * size_bytes / share)


def _goodput_share(graph: FabricGraph, phases: list[PhaseSolution]) -> float:
    """Useful share of the hottest link's capacity (1 when no link is overloaded): what the
    fabric's congestion control, PFC or go-back-N leaves of it
    (:func:`~clusterforge.netsim.congestion.congested_link_share`)."""
    if not phases:
        return 1.0
    dom = max(phases, key=lambda p: p.unit_time_s)
    worst = float(dom.offered_load[dom.view].max()) if dom.view.any() else 0.0
    if worst <= OVERLOAD:
        return 1.0
    window = window_packets(graph.nic_gbyte_per_s, max(dom.net_path_latency_s, 1e-6))
    return congested_link_share(
        rate_control=graph.rate_control, lossless=graph.lossless, overload=worst, window=window
    )


def _time(
    phases: list[PhaseSolution],
    algorithm: Algorithm,
    protocol: Protocol,
    ctx: TuningContext,
    size_bytes: float,
) -> float:
    size_share = 1.0
    if algorithm == "tree" and ctx.collective == "all_reduce":
        log_size = int(size_bytes // 64).bit_length() - 1
        if 0 <= log_size < len(_TREE_CORRECTION[protocol]):
            size_share *= _TREE_CORRECTION[protocol][log_size]
    share = payload_share(algorithm, protocol, ctx) * size_share
    bus_bytes = size_bytes * bus_factor(ctx.collective, ctx.num_ranks)
    cap = busbw_cap_gbyte_per_s(algorithm, protocol, ctx)
    # the channels' ceiling is a steady rate: the medium-size tree correction applies to
    # it as to the links' bandwidth
    channel_cap = channel_cap_gbyte_per_s(algorithm, protocol, ctx) * size_share
    # a small message runs on fewer of NCCL's channels: fewer NICs and copy engines, and a
    # lower per-channel ceiling, in proportion
    channels = 1.0
    if ctx.num_channels:
        channels = active_channels(algorithm, protocol, ctx, size_bytes) / ctx.num_channels
    steady_s = (
        max(
            _bandwidth_s(phases, size_bytes, share),
            bus_bytes / (cap * 1e9),
            bus_bytes / (channel_cap * 1e9),
        )
        / channels
    )
    # the Simple protocol's pipeline ramp is a time (model.pipeline_efficiency); NVLS's is
    # at least that and at least the fill of its loops of nvlsChannels x nHeads chunks
    # (model.nvls_pipeline_efficiency)
    if algorithm in ("nvls", "nvls_tree") and ctx.nvls_heads:
        ops = nvls_channels(ctx.generation) * ctx.nvls_heads
        chunk = nvls_chunk_bytes(algorithm, size_bytes, ops, ctx.num_nodes)
        ratio = chunk / nvls_chunk_bytes("nvls", size_bytes, ops, 1)
        ramp = nvls_pipeline_efficiency(steady_s, size_bytes, ops, ratio)
    else:
        ramp = pipeline_efficiency(steady_s) if protocol == "simple" else 1.0
    # a tree's first chunk crosses every hop of it before the pipeline runs full
    # (latency.tree_fill_s); the calibrated ramp covers it on nodes of 8 GPUs
    fill = tree_fill_s(ctx, protocol, size_bytes) if algorithm == "tree" else 0.0
    if algorithm == "chain":
        # so does a chain's first chunk at each network hop (latency.chain_fill_s)
        fill = chain_fill_s(ctx, protocol, size_bytes)
    return latency_s(algorithm, protocol, ctx) + max(steady_s / ramp, steady_s + fill)


@dataclass(frozen=True)
class _Option:
    """One algorithm NCCL weighs: its phases, its tuning context, the protocols it may run."""

    name: Algorithm
    protocols: tuple[Protocol, ...]
    phases: list[PhaseSolution]
    ctx: TuningContext
    goodput: float


def _protocols(
    graph: FabricGraph, req: _Request, name: Algorithm, ctx: TuningContext
) -> tuple[Protocol, ...]:
    """Protocols NCCL weighs for ``name``: its defaults (:func:`protocols_for`) within the
    fabric's ``NCCL_PROTO`` (``graph.nccl_protocols``), or the one the call forces."""
    protocols = protocols_for(name, ctx)
    if graph.nccl_protocols is not None:
        protocols = tuple(p for p in protocols if p in graph.nccl_protocols)
    if req.protocol == "auto":
        return protocols
    if req.protocol not in protocols:
        raise SimulationError(
            f"protocol: NCCL does not run {name} with {req.protocol} here (NCCL_PROTO "
            f"{_proto_list(graph)}); use one of {', '.join(protocols) or 'none'} or auto"
        )
    return (req.protocol,)


def _proto_list(graph: FabricGraph) -> str:
    return ",".join(graph.nccl_protocols) if graph.nccl_protocols is not None else "default"


def _tuner_pick(
    graph: FabricGraph, req: _Request, options: list[_Option], arr: np.ndarray, size_bytes: float
) -> list[_Option]:
    """The one pair an OFI tuner plugin pins (:func:`~clusterforge.netsim.ofi_tuner.region_pairs`:
    the first region holding the call whose pair NCCL has enabled), or every option where it
    leaves NCCL's choice."""
    nodes = int(np.unique(arr[0] // graph.gpus_per_node).size)
    tuner: NcclTuner = graph.nccl_tuner  # type: ignore[assignment]
    for algorithm, protocol in region_pairs(tuner, req.collective, size_bytes, arr.shape[1], nodes):
        for opt in options:
            if opt.name == algorithm and protocol in opt.protocols:
                return [replace(opt, protocols=(protocol,))]
    return options


def _options(graph: FabricGraph, req: _Request, arr: np.ndarray, seq: np.ndarray) -> list[_Option]:
    names: list[Algorithm]
    if req.algorithm == "auto":
        names = candidate_algorithms(graph, req.collective, seq, req.nvls)
    else:
        names = [req.algorithm]
    options = []
    for name in names:
        phases = solve_phases(graph, req.collective, name, arr, req.routing, req.num_qps, req.pxn)
        path = max((p.net_path_latency_s for p in phases), default=0.0)
        base = tuning_context(graph, req.collective, seq, name)
        ctx = replace(base, net_path_latency_s=path, ll128_c2c=req.ll128_c2c)
        protocols = _protocols(graph, req, name, ctx)
        if protocols:
            options.append(_Option(name, protocols, phases, ctx, _goodput_share(graph, phases)))
    if not options:
        raise SimulationError(
            f"nccl_protocols: NCCL_PROTO {_proto_list(graph)} leaves NCCL no protocol for "
            f"{', '.join(names)}; allow simple (NVLS, CollNet and PAT run Simple only)"
        )
    return options


def _choose(graph: FabricGraph, req: _Request, arr: np.ndarray, size_bytes: float) -> Choice:
    weighed = _options(graph, req, arr, ring_order(graph, arr))
    options = _tuner_pick(graph, req, weighed, arr, size_bytes)
    best: Choice | None = None
    best_rank = math.inf
    for opt in options:
        for proto in opt.protocols:
            t = _time(opt.phases, opt.name, proto, opt.ctx, size_bytes * 1.0)
            lat = latency_s(opt.name, proto, opt.ctx)
            t = lat + (t - lat) / opt.goodput
            if opt.name == "direct":  # no faster than its busiest proxy (alltoall.py)
                t = max(t, proxy_serial_s(graph, arr, size_bytes))
            # NCCL ranks the pairs by its own latency estimate (latency.tuner_latency_s)
            rank = t + tuner_offset_s(opt.name, proto, opt.ctx)
            if rank < best_rank:
                best = Choice(opt.name, proto, t, lat, opt.phases, opt.goodput)
                best_rank = rank
    assert best is not None  # options and their protocols are never empty
    return best


def simulate_collective(
    graph: FabricGraph,
    collective: Collective,
    size_bytes: float,
    groups: np.ndarray,
    routing: Routing = "adaptive",
    num_qps: int = 1,
    algorithm: AlgorithmChoice = "auto",
    pxn: bool | None = None,
    protocol: ProtocolChoice = "auto",
    nvls: bool = True,
    ll128_c2c: bool = True,
) -> CollectiveResult:
    """Simulate ``collective`` of ``size_bytes`` (the nccl-tests ``size``) run by every row of
    ``groups`` at once, with NCCL's algorithm and protocol choice unless ``algorithm`` /
    ``protocol`` force one.  Groups of one GPU communicate nothing: time 0, bandwidths 0.
    ``pxn`` (default: on for rail-optimized fabrics) forwards over NVLink to the GPU on the
    destination's rail before entering the fabric.  ``nvls`` False is ``NCCL_NVLS_ENABLE=0``:
    no NVLS and no NVLS-Tree.  ``ll128_c2c`` False is ``NCCL_LL128_C2C=0`` or an NCCL before
    2.27.3: no LL128 between nodes whose GPUs reach their NICs through the CPU
    (:func:`~clusterforge.netsim.tuner.ll128_enabled`).  The fabric's NCCL settings narrow
    the pairs weighed: ``graph.nccl_protocols`` (``NCCL_PROTO``) the protocols, and
    ``graph.nccl_tuner`` a tuner plugin's table, which pins one pair where it covers the call
    (:mod:`~clusterforge.netsim.ofi_tuner`)."""
    req = _Request(
        collective, routing, int(num_qps), algorithm, protocol,
        graph.rail_optimized if pxn is None else pxn, bool(nvls), bool(ll128_c2c),
    )  # fmt: skip
    _check(graph, req, size_bytes)
    arr = _groups(graph, groups)
    n = arr.shape[1]
    choice = _choose(graph, req, arr, size_bytes) if n >= 2 else None
    return summarize(
        graph,
        collective=collective,
        routing=routing,
        num_qps=req.num_qps,
        size_bytes=size_bytes,
        groups=arr,
        choice=choice,
        factor=bus_factor(collective, n) if n >= 2 else 0.0,
    )


def collective_time_s(
    graph: FabricGraph,
    collective: Collective,
    size_bytes: float,
    groups: np.ndarray,
    routing: Routing = "adaptive",
    num_qps: int = 1,
) -> float:
    """Seconds of :func:`simulate_collective` (NCCL's choice of algorithm and protocol)
    without building its report: the fast path of the performance model's plan search."""
    req = _Request(collective, routing, int(num_qps), "auto", "auto", graph.rail_optimized)
    _check(graph, req, size_bytes)
    arr = _groups(graph, groups)
    return _choose(graph, req, arr, size_bytes).time_s if arr.shape[1] >= 2 else 0.0
