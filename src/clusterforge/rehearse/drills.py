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

from clusterforge.ops.actions import OWNER_PREFIX, SlurmBackend
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.fixtures import healthy_readings, write_readings, xid_readings
from clusterforge.rehearse.model import DrillResult

__all__ = ["bring_up_drill", "slurm_env", "xid_drill"]

Progress = Callable[[str], None]
_XID_GPU = 3


@contextmanager
def slurm_env(lab: Lab) -> Iterator[None]:
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


def _wait_state(lab: Lab, node: str, want: Callable[[str, str], bool], timeout_s: float) -> str:
    """Poll sinfo until ``want(state, reason)``; returns the last 'state|reason'."""
    backend = SlurmBackend()
    deadline = time.monotonic() + timeout_s
    seen = ""
    with slurm_env(lab):
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
