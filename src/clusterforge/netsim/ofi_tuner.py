"""AWS's OFI tuner plugin: the (algorithm, protocol) its region table pins for a call.

aws-ofi-nccl ships a tuner plugin (``NCCL_TUNER_PLUGIN=ofi``, on by default on AWS platforms
since v1.16.0) that replaces NCCL's choice on the instance types it knows.  Its region tuner
(``src/tuner/nccl_ofi_regions.cpp``) places a call at the point (bytes, ranks) and walks
polygons, each naming an algorithm and a protocol; the first polygon that holds the point
and whose pair NCCL has enabled wins, and the plugin sets that pair's cost to 0.  On two
nodes or fewer, for a rank layout or collective without a table, or outside every enabled
region, NCCL's own tuner decides.  The tables are ``data/ofi_tuner.toml`` (with their
source); only the P6-B200 all-reduce table for 8 ranks a node is modelled.

``nccl_tuner`` on a fabric (spec ``network.nccl_tuner``) names the tuner: ``"nccl"`` (NCCL's
own) or ``"aws-ofi-p6-b200"`` (the plugin on p6-b200.48xlarge).

The same plugin, as NCCL's net plugin on EFA, reports a network latency by instance type
(:func:`net_latency_s`, spec ``network.efa_instance``), which NCCL's latency model adds to
every network step (:mod:`clusterforge.netsim.latency`).
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal, get_args

from clusterforge.errors import SimulationError, did_you_mean
from clusterforge.netsim.vocab import ALGORITHMS, PROTOCOLS, Algorithm, Collective, Protocol
from clusterforge.spec.sections import EfaInstance

__all__ = [
    "EFA_INSTANCES",
    "NCCL_TUNERS",
    "EfaInstance",
    "NcclTuner",
    "Region",
    "extend_region",
    "inside_region",
    "net_latency_s",
    "region_pairs",
    "regions_for",
]

NcclTuner = Literal["nccl", "aws-ofi-p6-b200"]
NCCL_TUNERS: tuple[NcclTuner, ...] = get_args(NcclTuner)
# EC2 instance types whose network latency the plugin states (data/ofi_tuner.toml)
EFA_INSTANCES: tuple[EfaInstance, ...] = get_args(EfaInstance)
Point = tuple[float, float]
# the plugin's tolerance for "on an edge" and "parallel" (is_inside_region, intersect)
_EPS = 1e-10
# the plugin's tables by tuner: (table name, GPUs a node the table is for)
_TABLES: dict[NcclTuner, tuple[str, int]] = {"aws-ofi-p6-b200": ("p6_b200", 8)}


@dataclass(frozen=True)
class Region:
    """One polygon of the plugin's table: vertices (bytes, ranks) and the pair it pins."""

    algorithm: Algorithm
    protocol: Protocol
    vertices: tuple[Point, ...]


def extend_region(a: Point, b: Point, z: Point) -> Point:
    """The plugin's ``extend_region``: where the line through ``a`` and ``b`` leaves the box
    up to ``z`` (the same x or the same y as ``z``, whichever the line reaches first)."""
    if a[0] == b[0]:
        return (a[0], z[1])
    if a[1] == b[1]:
        return (z[0], a[1])
    slope = (a[1] - b[1]) / (a[0] - b[0])
    offset = b[1] - slope * b[0]
    projected = slope * z[0] + offset
    if projected < z[1]:
        return (z[0], projected)
    return ((z[1] - offset) / slope, z[1])


def _cross(a: Point, b: Point) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _intersect(x0: Point, x1: Point, y0: Point, y1: Point) -> tuple[int, Point]:
    """The plugin's ``intersect``: 1 if segment x0-x1 crosses y0-y1 inside both, 0 if the
    crossing lies at an end of y0-y1 or they are parallel, -1 if they do not meet; and the
    crossing point on the line y0-y1."""
    dx = (x1[0] - x0[0], x1[1] - x0[1])
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return 0, (math.nan, math.nan)
    a = (_cross(x0, dx) - _cross(y0, dx)) / d
    sect = (y0[0] + a * dy[0], y0[1] + a * dy[1])
    if a < -_EPS or a > 1 + _EPS:
        return -1, sect
    if a < _EPS or a > 1 - _EPS:
        return 0, sect
    b = (_cross(x0, dy) - _cross(y0, dy)) / d
    return (-1 if b < 0 or b > 1 else 1), sect


def _on_edge(p: Point, y0: Point, y1: Point) -> bool:
    """The plugin's ``distance`` below its tolerance: ``p`` lies on segment y0-y1."""
    far = (p[0] + (y1[1] - y0[1]), p[1] - (y1[0] - y0[0]))  # along the segment's normal
    result, sect = _intersect(p, far, y0, y1)
    return result != -1 and math.hypot(sect[0] - p[0], sect[1] - p[1]) < _EPS


def inside_region(point: Point, region: Region, max_point: Point) -> bool:
    """The plugin's ``is_inside_region`` (on an edge counts as inside): ray casting towards
    twice ``max_point`` (TUNER_MAX_SIZE, TUNER_MAX_RANKS)."""
    vs = region.vertices
    edges = list(zip(vs, vs[1:] + vs[:1], strict=True))
    if any(_on_edge(point, a, b) for a, b in edges):
        return True
    xs, ys = [v[0] for v in vs], [v[1] for v in vs]
    if not (min(xs) <= point[0] <= max(xs) and min(ys) <= point[1] <= max(ys)):
        return False
    far = (2.0 * max_point[0], 2.0 * max_point[1])
    crossings = sum(_intersect(point, far, a, b)[0] == 1 for a, b in edges)
    return crossings % 2 == 1


def _vertex(raw: Any, limits: dict[str, float], extended: dict[str, Point]) -> Point:
    if isinstance(raw, str):
        return extended[raw.removeprefix("extend:")]
    x, y = (limits[v] if isinstance(v, str) else float(v) for v in raw)
    return (x, y)


@functools.cache
def _data() -> dict[str, Any]:
    text = resources.files("clusterforge.netsim").joinpath("data/ofi_tuner.toml").read_text()
    return tomllib.loads(text)


def _limits() -> dict[str, float]:
    return {k: float(v) for k, v in _data()["limits"].items()}


@functools.cache
def regions_for(tuner: NcclTuner, collective: Collective) -> tuple[Region, ...]:
    """The plugin's regions for ``collective`` in its order (none: NCCL's own tuner)."""
    if tuner not in _TABLES:
        return ()
    table = _data()[_TABLES[tuner][0]].get(collective)
    if table is None:
        return ()
    limits = _limits()
    box = (limits["max_bytes"], limits["max_ranks"])
    extended = {
        name: extend_region((float(a[0]), float(a[1])), (float(b[0]), float(b[1])), box)
        for name, (a, b) in table["extend"].items()
    }
    out = []
    for raw in table["region"]:
        if raw["algorithm"] not in ALGORITHMS or raw["protocol"] not in PROTOCOLS:
            raise ValueError(f"ofi_tuner.toml: unknown pair {raw['algorithm']}/{raw['protocol']}")
        vertices = tuple(_vertex(v, limits, extended) for v in raw["vertices"])
        out.append(Region(raw["algorithm"], raw["protocol"], vertices))
    return tuple(out)


def region_pairs(
    tuner: NcclTuner, collective: Collective, size_bytes: float, num_ranks: int, num_nodes: int
) -> list[tuple[Algorithm, Protocol]]:
    """(algorithm, protocol) of every region holding the call, in the plugin's order: it runs
    the first pair NCCL has enabled.  Empty where the plugin leaves NCCL's choice: NCCL's own
    tuner, 2 nodes or fewer, a rank layout the table is not for, or no region."""
    if tuner == "nccl" or num_nodes <= 2:
        return []
    if num_ranks != _TABLES[tuner][1] * num_nodes:
        return []
    limits = _limits()
    box = (limits["max_bytes"], limits["max_ranks"])
    point = (float(size_bytes), float(num_ranks))
    return [
        (r.algorithm, r.protocol)
        for r in regions_for(tuner, collective)
        if inside_region(point, r, box)
    ]


def net_latency_s(instance: str | None) -> float:
    """The network latency aws-ofi-nccl reports to NCCL on EC2 ``instance`` (seconds; its
    ``props->latency``, NCCL's ``latencyInter``), or 0 with no net plugin (None: NCCL's own
    InfiniBand / RoCE transport, which leaves it unset)."""
    if instance is None:
        return 0.0
    table: dict[str, float] = _data()["net_latency_us"]
    if instance not in EFA_INSTANCES or instance not in table:
        raise SimulationError(
            f"efa_instance: no aws-ofi-nccl network latency for {instance!r}"
            f"{did_you_mean(instance, EFA_INSTANCES)}; use one of {', '.join(EFA_INSTANCES)}"
        )
    return float(table[instance]) * 1e-6
