"""One rehearsal: open the lab, run the chosen drills in order, close the lab.

The monitoring (Prometheus, the exporters, the link namespaces) starts once, before the first
drill that needs it, and stops with the lab.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import assert_never

from clusterforge.errors import ClusterforgeError
from clusterforge.generate.training.launch import hca_names
from clusterforge.rehearse.acceptance import accept_drill
from clusterforge.rehearse.alerts import nic_flap_drill, prometheus_drill
from clusterforge.rehearse.cluster import Lab, close_lab, open_lab
from clusterforge.rehearse.drills import bring_up_drill, xid_drill
from clusterforge.rehearse.lossy import lossy_link_drill
from clusterforge.rehearse.model import (
    MONITORED,
    DrillName,
    DrillResult,
    RehearseOptions,
    RehearseReport,
)
from clusterforge.rehearse.netns import Links, netns_missing, open_links
from clusterforge.rehearse.prom import Monitoring, MonitoringPorts, start_monitoring
from clusterforge.rehearse.slow import slow_node_drill

__all__ = ["rehearse"]

Progress = Callable[[str], None]
_ERRORS = (ClusterforgeError, OSError, subprocess.SubprocessError, TimeoutError)


class _Skip(Exception):
    """A drill this machine cannot run; the message says why."""


@dataclass
class _Stage:
    """The lab and, once a drill needs it, its monitoring."""

    lab: Lab
    options: RehearseOptions
    monitoring: Monitoring | None = None
    link_skip: str | None = None  # why the link namespaces could not be made
    start_error: Exception | None = None  # why the monitoring did not start

    def watched(self) -> Monitoring:
        if self.monitoring is None:
            if shutil.which("prometheus") is None:
                raise _Skip("prometheus is not installed (apt-get install prometheus)")
            if self.start_error is not None:  # tried once already: do not wait out again
                raise self.start_error
            try:
                self.monitoring = _start_monitoring(self)
            except _ERRORS as exc:
                self.start_error = exc
                raise
        return self.monitoring

    def close(self) -> None:
        if self.monitoring is not None and not self.options.keep:
            self.monitoring.stop()


def _start_monitoring(stage: _Stage) -> Monitoring:
    lab, options = stage.lab, stage.options
    (lab.work / "prometheus").mkdir(exist_ok=True)
    links: Links | None = None
    if "nic-flap" in options.drills:
        stage.link_skip = netns_missing()
        if stage.link_skip is None:
            tag, hca = str(options.prometheus_port), hca_names(lab.design)[0]
            links = open_links(lab.nodes, tag=tag, hca=hca, logs=lab.work / "prometheus")
    ports = MonitoringPorts(
        options.prometheus_port, options.first_exporter_port, options.first_clock_port
    )
    try:
        return start_monitoring(lab, ports, for_s=options.alert_for_s, links=links)
    except BaseException:
        if links is not None:
            links.close()
        raise


def _drill(name: DrillName, stage: _Stage, started_s: float) -> DrillResult:
    lab, options = stage.lab, stage.options
    match name:
        case "bring-up":
            return bring_up_drill(lab, started_s)
        case "accept":
            return accept_drill(lab, options)
        case "lossy-link":
            return lossy_link_drill(lab, options)
        case "xid":
            return xid_drill(lab)
        case "prometheus":
            return prometheus_drill(lab, stage.watched(), options.alert_for_s)
        case "nic-flap":
            monitoring = stage.watched()
            if monitoring.links is None:
                raise _Skip(stage.link_skip or "no link namespaces")
            return nic_flap_drill(lab, monitoring, options.alert_for_s)
        case "slow-node":
            return slow_node_drill(lab, options, stage.watched)
        case _:
            assert_never(name)


def _guarded(name: DrillName, stage: _Stage, started_s: float) -> DrillResult:
    """A drill that could not run is a failed drill, with the reason as its evidence."""
    start = time.monotonic()
    try:
        return _drill(name, stage, started_s)
    except _Skip as exc:
        return DrillResult(name, "skip", (str(exc),))
    except _ERRORS as exc:
        reason = f"could not run: {type(exc).__name__}: {exc}"
        return DrillResult(name, "fail", (reason,), time.monotonic() - start)


def _reach(stage: _Stage) -> dict[str, str]:
    lab = stage.lab
    reach = {
        "SLURM_CONF": str(lab.slurm.conf),
        "logs": str(lab.slurm.work / "log"),
        "readings": str(lab.work / "nvml"),
        "stop": f"kill the slurmctld/slurmd pids in {lab.slurm.work}/*.pid",
    }
    if stage.monitoring is not None:
        reach["prometheus"] = stage.monitoring.url
        reach["stop monitoring"] = "kill " + " ".join(
            str(p.pid) for group in stage.monitoring.processes.values() for p in group
        )
        if stage.monitoring.links is not None:
            namespaces = " ".join(p.netns for p in stage.monitoring.links.ports.values())
            reach["netns"] = f"{namespaces} (remove: ip netns del NAME)"
    return reach


@contextmanager
def _cleanup_on_sigterm() -> Iterator[None]:
    """SIGTERM (a CI timeout, ``kill``) unwinds like an exception, so every daemon, namespace
    and folder of the rehearsal is removed as on a normal end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def rehearse(options: RehearseOptions, progress: Progress = lambda _msg: None) -> RehearseReport:
    """Bring the design up as an emulated cluster and run the drills; bring-up gates the rest."""
    with _cleanup_on_sigterm():
        return _rehearse(options, progress)


def _rehearse(options: RehearseOptions, progress: Progress) -> RehearseReport:
    started_s = time.monotonic()
    lab = open_lab(options, progress)
    stage = _Stage(lab, options)
    results: list[DrillResult] = []
    try:
        for name in options.drills:
            if results and results[0].name == "bring-up" and results[0].verdict == "fail":
                results.append(DrillResult(name, "skip", ("the cluster did not come up",)))
                continue
            progress(
                f"drill: {name}" + (" (starting Prometheus)" if _first_watch(stage, name) else "")
            )
            results.append(_guarded(name, stage, started_s))
            progress(f"drill: {name}: {results[-1].verdict} in {results[-1].duration_s:.1f} s")
    finally:
        stage.close()
        close_lab(lab, keep=options.keep)
    return RehearseReport(
        cluster=options.cluster,
        nodes=tuple(lab.nodes),
        drills=tuple(results),
        work=lab.work,
        kept=options.keep,
        reach=_reach(stage) if options.keep else {},
    )


def _first_watch(stage: _Stage, name: DrillName) -> bool:
    return name in MONITORED and stage.monitoring is None
