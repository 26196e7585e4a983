"""One rehearsal: open the lab, run the chosen drills in order, close the lab."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import assert_never

from clusterforge.errors import ClusterforgeError
from clusterforge.rehearse.cluster import Lab, close_lab, open_lab
from clusterforge.rehearse.drills import accept_drill, bring_up_drill, slow_node_drill, xid_drill
from clusterforge.rehearse.model import DrillName, DrillResult, RehearseOptions, RehearseReport
from clusterforge.rehearse.prom import prometheus_drill

__all__ = ["rehearse"]

Progress = Callable[[str], None]


def _drill(name: DrillName, lab: Lab, options: RehearseOptions, started_s: float) -> DrillResult:
    match name:
        case "bring-up":
            return bring_up_drill(lab, started_s)
        case "accept":
            return accept_drill(lab, options)
        case "xid":
            return xid_drill(lab)
        case "prometheus":
            return prometheus_drill(lab, options)
        case "slow-node":
            return slow_node_drill(lab, options)
        case _:
            assert_never(name)


def _guarded(name: DrillName, lab: Lab, options: RehearseOptions, started_s: float) -> DrillResult:
    """A drill that could not run is a failed drill, with the reason as its evidence."""
    start = time.monotonic()
    try:
        return _drill(name, lab, options, started_s)
    except (ClusterforgeError, OSError, subprocess.SubprocessError, TimeoutError) as exc:
        reason = f"could not run: {type(exc).__name__}: {exc}"
        return DrillResult(name, "fail", (reason,), time.monotonic() - start)


def _reach(lab: Lab) -> dict[str, str]:
    return {
        "SLURM_CONF": str(lab.slurm.conf),
        "logs": str(lab.slurm.work / "log"),
        "readings": str(lab.work / "nvml"),
        "stop": f"kill the slurmctld/slurmd pids in {lab.slurm.work}/*.pid",
    }


def rehearse(options: RehearseOptions, progress: Progress = lambda _msg: None) -> RehearseReport:
    """Bring the design up as an emulated cluster and run the drills; bring-up gates the rest."""
    started_s = time.monotonic()
    lab = open_lab(options, progress)
    results: list[DrillResult] = []
    try:
        for name in options.drills:
            if results and results[0].name == "bring-up" and results[0].verdict == "fail":
                results.append(DrillResult(name, "skip", ("the cluster did not come up",)))
                continue
            progress(f"drill: {name}")
            results.append(_guarded(name, lab, options, started_s))
            progress(f"drill: {name}: {results[-1].verdict} in {results[-1].duration_s:.1f} s")
    finally:
        close_lab(lab, keep=options.keep)
    return RehearseReport(
        cluster=options.cluster,
        nodes=tuple(lab.nodes),
        drills=tuple(results),
        work=lab.work,
        kept=options.keep,
        reach=_reach(lab) if options.keep else {},
    )
