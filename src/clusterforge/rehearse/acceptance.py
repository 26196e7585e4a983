"""Acceptance through the emulated cluster's Slurm, judged as a rehearsal must judge CPU
stand-ins that share one machine.

``accept`` itself is unchanged: it runs through sbatch/srun with its CPU stand-ins (numpy
GEMM, gloo) and its own verdicts.  The rehearsal then reads those verdicts with two rules of
its own, both printed with the drill's evidence:

* **Tolerance**: the per-node figures accept compares with the peers' median (GEMM, memory
  bandwidth, in-band network) fail only below :data:`STAND_IN_PEER_FRACTION` of the median,
  not accept's 90 %: emulated nodes time-share this machine's cores with each other and
  with whatever else runs on it, so a healthy one measures down to half its peers' median
  (memory bandwidth halves while another process holds the other core of a 2-core machine).
  Every other failure (burn-in mismatches, wrong all-reduce values, storage latency, a test
  that errors) counts as accept gave it.
* **Rerun**: a failure counts only when a second run of the same tests repeats it.

A node slowed to a fifth of a core measures about a fifth of its peers' median, so neither
rule hides the faults the drills inject.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from statistics import median
from typing import Literal

from clusterforge.accept.launch import SlurmLauncher
from clusterforge.accept.suite import AcceptOptions, AcceptReport, TestName, run_acceptance
from clusterforge.accept.verdicts import MIN_PEERS
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.drills import slurm_env
from clusterforge.rehearse.model import DrillResult, RehearseOptions

__all__ = [
    "STAND_IN_PEER_FRACTION",
    "TwoRuns",
    "accept_drill",
    "accept_once",
    "accept_twice",
    "stand_in_failures",
]

STAND_IN_PEER_FRACTION = 0.3  # of the peers' median, for CPU stand-ins on one machine
PEER_TESTS = frozenset({"gemm", "memory", "in-band net"})  # accept's peer-judged figures
RULES_NOTE = (
    f"rehearsal rules: peer-judged figures fail under {STAND_IN_PEER_FRACTION:.0%} of the "
    "median (CPU stand-ins share this machine); a failure counts when a rerun repeats it"
)


def _all_idle(lab: Lab) -> None:
    """Every node idle before a suite: a job sent to a drained node would wait forever."""
    states = lab.slurm.wait_idle(120)
    busy = {n: s for n, s in states.items() if n in lab.nodes and s != "idle"}
    if busy or set(lab.nodes) - set(states):
        raise TimeoutError(f"nodes not idle after 120 s: {busy or states}")


def accept_once(
    lab: Lab,
    options: RehearseOptions,
    tests: tuple[TestName, ...],
    tag: str,
    *,
    localize: Literal["auto", "always", "never"],
) -> AcceptReport:
    """One run of accept's suite through the lab's Slurm, with the CPU stand-ins."""
    _all_idle(lab)
    suite = AcceptOptions(
        tests=tests, burn_s=options.burn_s, max_bytes=options.max_bytes,
        min_bytes=min(1 << 20, options.max_bytes), storage_path=str(lab.work),
        storage_p999_ms=10_000.0, cpu=True, serial_nodes=True, repeats=1, localize=localize,
    )  # fmt: skip
    with slurm_env(lab):
        return run_acceptance(lab.design, suite, SlurmLauncher(lab.work / tag / "raw"))


def stand_in_failures(report: AcceptReport) -> set[str]:
    """'test on node' for each failure under the rehearsal's tolerance, and the culprit
    accept's localization named."""
    found = {
        f"{r.test} on {r.node}"
        for r in report.results
        if r.verdict == "fail" and r.test not in PEER_TESTS
    }
    for test in PEER_TESTS:
        values = {
            r.node: r.measured for r in report.results if r.test == test and r.measured is not None
        }
        if len(values) < MIN_PEERS:
            continue
        floor = STAND_IN_PEER_FRACTION * median(values.values())
        found |= {f"{test} on {node}" for node, value in values.items() if value < floor}
    if report.localization and report.localization.culprit:
        found.add(f"localization culprit {report.localization.culprit}")
    return found


@dataclass(frozen=True)
class TwoRuns:
    """An acceptance run and, when it failed anything, a second run of the same tests."""

    first: AcceptReport
    second: AcceptReport | None

    @property
    def confirmed(self) -> set[str]:
        if self.second is None:
            return set()
        return stand_in_failures(self.first) & stand_in_failures(self.second)

    def evidence(self) -> tuple[str, ...]:
        lines = [f"run 1: {summary(self.first)}"]
        if self.second is not None:
            lines.append(f"run 2: {summary(self.second)}")
        lines += [RULES_NOTE, f"confirmed failures: {', '.join(sorted(self.confirmed)) or 'none'}"]
        return tuple(lines)


def summary(report: AcceptReport) -> str:
    """Counts of accept's own verdicts, each failure with its figure, and the rehearsal's."""
    verdicts = [r.verdict for r in report.results]
    text = f"accept: {verdicts.count('pass')} pass, {verdicts.count('fail')} fail"
    fails = [
        f"{r.test} on {r.node} {r.measured:.3g} {r.unit}"
        for r in report.results
        if r.verdict == "fail" and r.measured is not None
    ]
    rehearsal = ", ".join(sorted(stand_in_failures(report))) or "none"
    return "; ".join([text, *fails]) + f"; under the rehearsal rules: {rehearsal}"


def accept_twice(
    lab: Lab, options: RehearseOptions, tests: tuple[TestName, ...], tag: str
) -> TwoRuns:
    """Run the suite (no localization: healthy nodes are expected); rerun on a failure."""
    first = accept_once(lab, options, tests, tag, localize="never")
    if not stand_in_failures(first):
        return TwoRuns(first, None)
    return TwoRuns(first, accept_once(lab, options, tests, f"{tag}-rerun", localize="never"))


def accept_drill(lab: Lab, options: RehearseOptions) -> DrillResult:
    """The acceptance suite through sbatch/srun (CPU stand-ins) passes on the healthy nodes."""
    start = time.monotonic()
    runs = accept_twice(lab, options, ("node", "nccl", "net", "storage"), "accept")
    ok = not runs.confirmed and bool(runs.first.results)
    return DrillResult(
        "accept", "pass" if ok else "fail", runs.evidence(), time.monotonic() - start
    )
