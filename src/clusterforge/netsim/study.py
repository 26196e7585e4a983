"""A simulation study: one or two designs, one collective, a list of message sizes.

:func:`run_study` is what ``clusterforge simulate`` calls: it plans each spec, builds its
graph and communicator groups once and simulates every size.  Sizes follow nccl-tests:
``-b``/``-e`` suffixes K, M, G are powers of two, the sweep doubles (``-f 2``), and the
element count assumes ``float`` (4 bytes), nccl-tests' default type.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterforge.design import plan
from clusterforge.errors import SimulationError
from clusterforge.netsim.groups import design_job, groups_for
from clusterforge.netsim.result import CollectiveResult
from clusterforge.netsim.simulate import simulate_collective
from clusterforge.netsim.vocab import (
    AlgorithmChoice,
    Collective,
    Communicators,
    Placement,
    ProtocolChoice,
    Routing,
)
from clusterforge.spec import load_spec
from clusterforge.topology import build_fabric_graph

__all__ = [
    "DEFAULT_SWEEP",
    "DTYPE_BYTES",
    "MAX_SWEEP_POINTS",
    "Study",
    "StudyRequest",
    "parse_size",
    "parse_sweep",
    "run_study",
]

DTYPE_BYTES = 4  # nccl-tests' default data type is float
MAX_SWEEP_POINTS = 64  # 8 B .. 16 GiB is 32 doublings
_UNITS = {
    "": 1, "b": 1,
    "k": 2**10, "kib": 2**10, "kb": 10**3,
    "m": 2**20, "mib": 2**20, "mb": 10**6,
    "g": 2**30, "gib": 2**30, "gb": 10**9,
    "t": 2**40, "tib": 2**40, "tb": 10**12,
}  # fmt: skip
_MAX_BYTES = 2**44  # 16 TiB: far beyond any GPU's memory
DEFAULT_SWEEP = tuple(2**e for e in range(20, 35))  # 1 MiB .. 16 GiB


def parse_size(text: str, field: str = "size") -> int:
    """'1GiB' -> 1073741824; '1G' -> 2**30 (nccl-tests); '1GB' -> 10**9."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise SimulationError(
            f"{field}: cannot read {text[:40]!r}; write e.g. 1GiB, 256MiB, 1G or 1048576"
        )
    value = int(float(m.group(1)) * _UNITS[unit])
    if not 0 < value <= _MAX_BYTES:
        raise SimulationError(f"{field}: {text!r} is outside 1 B .. 16 TiB; give a size in it")
    return value


def parse_sweep(text: str) -> tuple[int, ...]:
    """'8B:16GiB' -> 8, 16, 32, ... 16 GiB (doubling, as nccl-tests ``-f 2``)."""
    lo_text, sep, hi_text = text.partition(":")
    if not sep:
        raise SimulationError(f"sweep: {text[:40]!r} is not MIN:MAX; write e.g. 8B:16GiB")
    lo, hi = parse_size(lo_text, "sweep"), parse_size(hi_text, "sweep")
    if hi < lo:
        raise SimulationError(f"sweep: {text!r} ends below its start; write MIN:MAX")
    sizes: list[int] = []
    size = lo
    while size <= hi and len(sizes) < MAX_SWEEP_POINTS:
        sizes.append(size)
        size *= 2
    return tuple(sizes)


@dataclass(frozen=True)
class StudyRequest:
    """Everything ``simulate`` was asked: specs, traffic and NCCL settings."""

    specs: tuple[str | None, ...]
    collective: Collective
    sizes: tuple[int, ...]
    group_kind: Communicators = "all"
    placement: Placement = "packed"
    num_gpus: int | None = None
    seed: int = 0
    routing: Routing = "adaptive"
    num_qps: int = 1
    algorithm: AlgorithmChoice = "auto"
    protocol: ProtocolChoice = "auto"


@dataclass(frozen=True)
class Study:
    """One design's results, one per size."""

    name: str
    results: tuple[CollectiveResult, ...]
    # Calibrated from a cluster's measured collectives: (size in bytes, simulated busbw,
    # calibrated busbw in GB/s) per size; the results then hold the calibrated figures.
    calibrated_busbw: tuple[tuple[float, float, float], ...] = ()


def run_study(
    request: StudyRequest, progress: Callable[[str, int], None] | None = None
) -> list[Study]:
    """Plan each spec, simulate every size; ``progress(name, done)`` after each size."""
    out = []
    for path in request.specs:
        design = plan(load_spec(Path(path) if path else None))
        graph = build_fabric_graph(design)
        groups: np.ndarray = groups_for(
            design,
            request.group_kind,
            layout=design_job(design, request.num_gpus, request.group_kind),
            placement=request.placement,
            seed=request.seed,
        )
        results = []
        for i, size in enumerate(request.sizes):
            results.append(
                simulate_collective(
                    graph,
                    request.collective,
                    size,
                    groups,
                    routing=request.routing,
                    num_qps=request.num_qps,
                    algorithm=request.algorithm,
                    protocol=request.protocol,
                )
            )
            if progress is not None:
                progress(design.spec.name, i + 1)
        out.append(Study(design.spec.name, tuple(results)))
    return out
