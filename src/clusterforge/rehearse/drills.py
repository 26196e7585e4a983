"""The drills: each runs on the lab, measures its timing and returns a :class:`DrillResult`.

Timing is wall-clock from :func:`time.monotonic`: ``detect_s`` from injecting the fault to
the health check's failing verdict, ``drain_s`` to Slurm showing the node drained with the
owner's reason, ``recover_s`` from healing to the node idle again.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from clusterforge.accept.launch import SlurmLauncher
from clusterforge.accept.suite import AcceptOptions, AcceptReport, run_acceptance
from clusterforge.ops.actions import OWNER_PREFIX, SlurmBackend
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.fixtures import healthy_readings, write_readings, xid_readings
from clusterforge.rehearse.model import DrillResult, RehearseOptions

__all__ = ["accept_drill", "bring_up_drill", "slow_node_drill", "xid_drill"]

Progress = Callable[[str], None]
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
_CFS_PERIOD_US = 100_000  # CFS bandwidth period (Linux Documentation/scheduler/sched-bwc.rst)
_XID_GPU = 3


@contextmanager
def _slurm_env(lab: Lab) -> Iterator[None]:
    """SLURM_CONF of the lab for code that runs Slurm clients from this process."""
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(lab.slurm.conf)
    try:
        yield
    finally:
        if before is None:
            del os.environ["SLURM_CONF"]
        else:
            os.environ["SLURM_CONF"] = before


def bring_up_drill(lab: Lab, started_s: float) -> DrillResult:
    """Every node idle with the design's GRES; the topology loaded with every node in it."""
    states = lab.slurm.wait_idle(120)
    gres_out = lab.slurm.run("sinfo", "-N", "-h", "-o", "%N %G", check=False)
    gres = dict(line.split(maxsplit=1) for line in gres_out.splitlines() if line.strip())
    topology = lab.slurm.run("scontrol", "show", "topology", check=False)
    switches = re.findall(r"SwitchName=(\S+)", topology)
    idle = [n for n in lab.nodes if states.get(n) == "idle"]
    expected_gres = {g for g in gres.values() if g.startswith("gpu:")}
    ok = len(idle) == len(lab.nodes) and len(expected_gres) == 1 and bool(switches)
    evidence = (
        f"{len(idle)}/{len(lab.nodes)} nodes idle: "
        + ", ".join(f"{n}={states.get(n, '?')}" for n in lab.nodes),
        "GRES " + ", ".join(sorted({gres.get(n, "none") for n in lab.nodes})),
        f"topology: {len(switches)} switches ({', '.join(switches[:4])}"
        + (", ..." if len(switches) > 4 else "")
        + ")",
    )
    elapsed = time.monotonic() - started_s
    return DrillResult("bring-up", "pass" if ok else "fail", evidence, elapsed, detect_s=elapsed)


def _all_idle(lab: Lab) -> None:
    """Every node idle before a suite: a job sent to a drained node would wait forever."""
    states = lab.slurm.wait_idle(120)
    busy = {n: s for n, s in states.items() if n in lab.nodes and s != "idle"}
    if busy or set(lab.nodes) - set(states):
        raise TimeoutError(f"nodes not idle after 120 s: {busy or states}")


def _accept(lab: Lab, options: RehearseOptions, tests: tuple[str, ...], tag: str) -> AcceptReport:
    _all_idle(lab)
    suite = AcceptOptions(
        tests=tests,  # type: ignore[arg-type]
        burn_s=options.burn_s, max_bytes=options.max_bytes, min_bytes=min(1 << 20, options.max_bytes),
        storage_path=str(lab.work), storage_p999_ms=10_000.0, cpu=True, serial_nodes=True,
        repeats=1,
    )  # fmt: skip
    with _slurm_env(lab):
        return run_acceptance(lab.design, suite, SlurmLauncher(lab.work / tag / "raw"))


def _accept_evidence(report: AcceptReport) -> tuple[str, ...]:
    verdicts = [r.verdict for r in report.results]
    lines = [f"{verdicts.count('pass')} pass, {verdicts.count('fail')} fail of {len(verdicts)}"]
    lines += [
        f"fail: {r.test} on {r.node}: {r.measured} {r.unit} ({r.evidence})"
        for r in report.results
        if r.verdict == "fail"
    ]
    if report.localization:
        lines.append(f"localization culprit: {report.localization.culprit}")
    return tuple(lines)


def accept_drill(lab: Lab, options: RehearseOptions) -> DrillResult:
    """The acceptance suite through sbatch/srun (CPU stand-ins) passes on the healthy nodes."""
    start = time.monotonic()
    report = _accept(lab, options, ("node", "nccl", "net", "storage"), "accept")
    ok = report.exit_code == 0
    return DrillResult(
        "accept", "pass" if ok else "fail", _accept_evidence(report), time.monotonic() - start
    )


def _wait_state(lab: Lab, node: str, want: Callable[[str, str], bool], timeout_s: float) -> str:
    """Poll sinfo until ``want(state, reason)``; returns the last 'state|reason'."""
    backend = SlurmBackend()
    deadline = time.monotonic() + timeout_s
    seen = ""
    with _slurm_env(lab):
        while time.monotonic() < deadline:
            out = backend.run(
                ["sinfo", "--noheader", "--Node", f"--nodes={node}", "--format=%T|%E"]
            )
            seen = out.splitlines()[0] if out.strip() else ""
            state, _, reason = seen.partition("|")
            if want(state.strip(), reason.strip()):
                return seen
            time.sleep(0.5)
    raise TimeoutError(f"{node} stayed {seen!r} for {timeout_s:.0f} s")


def _drained_by_us(state: str, reason: str) -> bool:
    return "drain" in state and reason.startswith(OWNER_PREFIX)


def _back_in_service(state: str, reason: str) -> bool:
    # Slurm shows a resumed node "idle*" (not responding) until its next ping.
    return state.rstrip("*") in ("idle", "mixed", "allocated")


def _idle(state: str, reason: str) -> bool:
    return state == "idle"


def xid_drill(lab: Lab) -> DrillResult:
    """XID 79 on one node is drained by the generated health check; healed, it is resumed."""
    node = lab.nodes[min(1, len(lab.nodes) - 1)]
    # No job or epilog in flight: an epilog's own check would see the fault first and Slurm
    # would drain the node with its own reason ("Epilog error"), which no check may resume.
    _wait_state(lab, node, _idle, 120)
    try:
        return _inject_xid(lab, node)
    finally:
        write_readings(lab.readings(node), healthy_readings(lab.design))


def _inject_xid(lab: Lab, node: str) -> DrillResult:
    evidence: list[str] = [f"XID 79 on GPU {_XID_GPU} of {node} (replayed NVML)"]
    start = time.monotonic()
    write_readings(lab.readings(node), xid_readings(lab.design, gpu_index=_XID_GPU))
    hook = lab.run_hook(node)
    detect_s = time.monotonic() - start
    evidence.append(f"HealthCheckProgram exit {hook.returncode} after {detect_s:.1f} s")
    try:
        seen = _wait_state(lab, node, _drained_by_us, 30)
    except TimeoutError as exc:
        return DrillResult("xid", "fail", (*evidence, str(exc)), time.monotonic() - start, detect_s)
    drain_s = time.monotonic() - start
    evidence.append(f"sinfo: {seen}")
    healed = time.monotonic()
    write_readings(lab.readings(node), healthy_readings(lab.design))
    lab.run_hook(node)
    try:
        seen = _wait_state(lab, node, _back_in_service, 30)
    except TimeoutError as exc:
        evidence.append(f"not resumed: {exc}")
        elapsed = time.monotonic() - start
        return DrillResult("xid", "fail", tuple(evidence), elapsed, detect_s, drain_s)
    recover_s = time.monotonic() - healed
    evidence.append(f"healed, resumed: sinfo: {seen}")
    elapsed = time.monotonic() - start
    return DrillResult("xid", "pass", tuple(evidence), elapsed, detect_s, drain_s, recover_s)


def cgroup_v1_cpu_missing() -> str | None:
    """Why a node cannot be slowed here (None when it can)."""
    if not (CPU_CGROUP / "cgroup.procs").exists() or not os.access(CPU_CGROUP, os.W_OK):
        return f"no writable cgroup v1 cpu controller at {CPU_CGROUP}"
    return None


@contextmanager
def _slowed(lab: Lab, node: str, cpu_fraction: float) -> Iterator[None]:
    """Cap ``node``'s slurmd (and the job steps it forks) at ``cpu_fraction`` of one core
    with the CFS bandwidth controller: quota/period = the share of one CPU."""
    pid = lab.slurm.processes[1 + lab.nodes.index(node)].pid  # slurmctld first, then slurmd
    group = CPU_CGROUP / f"clusterforge-rehearse-{os.getpid()}"
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text(str(_CFS_PERIOD_US))
    (group / "cpu.cfs_quota_us").write_text(str(int(_CFS_PERIOD_US * cpu_fraction)))
    (group / "cgroup.procs").write_text(str(pid))
    try:
        yield
    finally:
        for task in (group / "cgroup.procs").read_text().split():
            try:
                (CPU_CGROUP / "cgroup.procs").write_text(task)
            except OSError:
                continue  # the task ended meanwhile
        group.rmdir()


def slow_node_drill(lab: Lab, options: RehearseOptions) -> DrillResult:
    """A node capped to a fraction of a core is the one node accept names."""
    if reason := cgroup_v1_cpu_missing():
        return DrillResult("slow-node", "skip", (reason,))
    if len(lab.nodes) < 2:
        return DrillResult("slow-node", "skip", ("needs at least 2 nodes to compare",))
    node = lab.nodes[-1]
    start = time.monotonic()
    with _slowed(lab, node, options.slow_cpu_fraction):
        report = _accept(lab, options, ("node", "nccl"), "slow-node")
    evidence = (
        f"{node} capped at {options.slow_cpu_fraction:.0%} of one core (cgroup v1 cpu quota)",
        f"accept named: {', '.join(report.failed_nodes) or 'nobody'}",
        *_accept_evidence(report),
    )
    ok = report.failed_nodes == [node]
    elapsed = time.monotonic() - start
    return DrillResult("slow-node", "pass" if ok else "fail", evidence, elapsed, detect_s=elapsed)
