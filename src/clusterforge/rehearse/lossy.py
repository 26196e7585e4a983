"""The lossy-link drill: accept's fabric rounds at full load on the emulated cluster, once
healthy and once with a share of one node's packets dropped on its link; the second run must
fail that node's port, and only it.

Each emulated node gets a network namespace whose netdev, named after its first compute HCA,
plugs into one bridge (:func:`~clusterforge.rehearse.netns.open_fabric`); the workers run
iperf3 there as the stand-in for perftest (an emulated node has no RDMA device) and read the
netdev's own counters before and after each round.  The loss is injected on the victim's
transmit side (:func:`~clusterforge.rehearse.netns.lossy`).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

from clusterforge.accept.launch import Launcher, SlurmLauncher
from clusterforge.accept.suite import AcceptOptions, AcceptReport, FabricOptions, run_acceptance
from clusterforge.design import Design
from clusterforge.generate.training.launch import hca_names
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.drills import slurm_env
from clusterforge.rehearse.model import DrillResult, RehearseOptions
from clusterforge.rehearse.netns import Links, lossy, netns_missing, open_fabric

__all__ = ["LOSS_PERCENT", "LossyRun", "fabric_run", "lossy_link_drill", "lossy_missing"]

LOSS_PERCENT = 0.5  # five times accept's 0.1 % limit
ROUND_S = 2.0  # iperf3 seconds per round: thousands of packets per port, a few seconds per run


def lossy_missing() -> str | None:
    """Why the drill cannot run here (None when it can)."""
    if shutil.which("iperf3") is None:
        return "iperf3 is not installed (apt-get install iperf3)"
    if shutil.which("tc") is None:
        return "tc is not installed (apt-get install iproute2)"
    return netns_missing()


@dataclass(frozen=True)
class LossyRun:
    """One acceptance of the fabric: what was injected, the report, and how long it took."""

    injected: str
    report: AcceptReport
    duration_s: float

    @property
    def failures(self) -> list[str]:
        return sorted(
            f"{r.test} on {r.node} {r.port}".strip()
            for r in self.report.results
            if r.verdict == "fail"
        )


def fabric_run(
    design: Design, links: Links, launcher: Launcher, *, victim: str | None, seconds: float
) -> LossyRun:
    """accept's fabric rounds over ``links`` (stand-in traffic), with :data:`LOSS_PERCENT`
    of ``victim``'s outgoing packets dropped (none when ``victim`` is None)."""
    hca = hca_names(design)[0]
    options = AcceptOptions(
        nodes=tuple(links.ports), tests=("fabric",), cpu=True,
        fabric=FabricOptions(
            seconds=seconds, tool="iperf3", hcas=(hca,), netns=f"cf-{links.tag}-{{node}}",
            rail_addrs=tuple(links.addresses.items()),
        ),
    )  # fmt: skip
    start = time.monotonic()
    if victim is None:
        report = run_acceptance(design, options, launcher)
        return LossyRun("no loss", report, time.monotonic() - start)
    with lossy(links.ports[victim], LOSS_PERCENT) as how:
        report = run_acceptance(design, options, launcher)
    return LossyRun(how, report, time.monotonic() - start)


def _summary(run: LossyRun) -> str:
    losses = ", ".join(
        f"{r.node} {r.measured:.3f} %"
        for r in run.report.results
        if r.test == "fabric loss" and r.measured is not None
    )
    failed = "; ".join(run.failures) or "none"
    return f"{run.injected}: {run.duration_s:.1f} s; loss per port: {losses}; failed: {failed}"


def lossy_link_drill(lab: Lab, options: RehearseOptions) -> DrillResult:
    """Healthy fabric passes; 0.5 % loss on one node's link fails that link and nothing else."""
    if reason := lossy_missing():
        return DrillResult("lossy-link", "skip", (reason,))
    victim = lab.nodes[min(1, len(lab.nodes) - 1)]
    hca = hca_names(lab.design)[0]
    start = time.monotonic()
    links = open_fabric(lab.nodes, tag=str(options.ports.ctld_port), hca=hca)
    try:
        with slurm_env(lab):
            launcher = SlurmLauncher(lab.work / "lossy-link" / "raw")
            clean = fabric_run(lab.design, links, launcher, victim=None, seconds=ROUND_S)
            hit = fabric_run(lab.design, links, launcher, victim=victim, seconds=ROUND_S)
    finally:
        links.close()
    expected = [f for f in hit.failures if f.startswith(f"fabric loss on {victim} {hca}")]
    ok = not clean.failures and len(expected) == 1 and expected == hit.failures
    evidence = (
        f"{len(lab.nodes)} nodes, {hca} of each in its own netns on one bridge; iperf3 "
        f"{ROUND_S:g} s per round, both directions at once",
        f"run 1, {_summary(clean)}",
        f"run 2, {_summary(hit)}",
        f"expected: only {victim} {hca} fails" + ("" if ok else f"; got {hit.failures}"),
    )
    return DrillResult(
        "lossy-link", "pass" if ok else "fail", evidence, time.monotonic() - start,
        detect_s=hit.duration_s,
    )  # fmt: skip
