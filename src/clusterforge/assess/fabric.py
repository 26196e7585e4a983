"""What the designed fabric delivers to collectives: nccl-tests-shaped studies from the
flow-level simulator (:mod:`clusterforge.netsim`)."""

from __future__ import annotations

from collections.abc import Callable

from clusterforge.design import Design
from clusterforge.netsim.groups import groups_for
from clusterforge.netsim.simulate import simulate_collective
from clusterforge.netsim.study import Study, StudyRequest, run_study
from clusterforge.topology import build_fabric_graph

__all__ = ["BUSBW_SIZES", "busbw_study", "simulate"]

BUSBW_SIZES = tuple(2**e for e in range(20, 35, 2))  # 1 MiB .. 16 GiB, x4 (nccl-tests -f 4)


def busbw_study(design: Design) -> Study:
    """All-reduce over every GPU of the design (packed placement, adaptive routing), one
    simulated result per size of :data:`BUSBW_SIZES`."""
    graph = build_fabric_graph(design)
    groups = groups_for(design, "all")
    results = tuple(simulate_collective(graph, "all_reduce", s, groups) for s in BUSBW_SIZES)
    return Study(design.spec.name, results)


def simulate(
    request: StudyRequest, progress: Callable[[str, int], None] | None = None
) -> list[Study]:
    """Plan each spec of ``request`` and simulate its collective at every size;
    ``progress(name, done)`` after each size."""
    return run_study(request, progress)
