"""What the designed fabric delivers to collectives: nccl-tests-shaped studies from the
flow-level simulator (:mod:`clusterforge.netsim`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from clusterforge.design import Design, plan
from clusterforge.netsim.groups import design_job, groups_for
from clusterforge.netsim.simulate import simulate_collective
from clusterforge.netsim.study import Study, StudyRequest, run_study
from clusterforge.perf import Calibration, NetsimComm
from clusterforge.perf.calibration import CalibratedComm
from clusterforge.spec import load_spec
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
    request: StudyRequest,
    progress: Callable[[str, int], None] | None = None,
    calibration: Calibration | None = None,
) -> list[Study]:
    """Plan each spec of ``request`` and simulate its collective at every size;
    ``progress(name, done)`` after each size. With ``calibration`` (a cluster's measured
    collectives) every inter-node result runs at the measured / simulated efficiency of
    :class:`~clusterforge.perf.calibration.CalibratedComm`."""
    studies = run_study(request, progress)
    if calibration is None or not calibration.collectives:
        return studies
    return [
        _calibrated(study, path, request, calibration)
        for study, path in zip(studies, request.specs, strict=True)
    ]


def _calibrated(
    study: Study, path: str | None, request: StudyRequest, calibration: Calibration
) -> Study:
    design = plan(load_spec(Path(path) if path else None))
    comm = CalibratedComm(
        NetsimComm(design),
        calibration,
        design.compute.gpus_per_node,
        design.compute.num_training_gpus,
    )
    groups = groups_for(
        design,
        request.group_kind,
        layout=design_job(design, request.num_gpus, request.group_kind),
        placement=request.placement,
        seed=request.seed,
    )
    if not comm.spans_nodes(groups):
        return study
    results, rows = [], []
    for r in study.results:
        ratio = comm.ratio(request.collective, r.size_bytes)
        results.append(
            replace(
                r,
                time_s=r.time_s / ratio,
                algbw_gbyte_per_s=r.algbw_gbyte_per_s * ratio,
                busbw_gbyte_per_s=r.busbw_gbyte_per_s * ratio,
            )
        )
        rows.append((r.size_bytes, r.busbw_gbyte_per_s, r.busbw_gbyte_per_s * ratio))
    return Study(study.name, tuple(results), tuple(rows))
