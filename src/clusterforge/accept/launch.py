"""Launchers: run a worker step on a set of nodes through Slurm, Kubernetes or locally.

A :class:`Step` is what to run (worker arguments) and where (nodes, ranks per node); a
launcher returns the ``CFACCEPT`` records the workers printed and the raw log.  Launchers
are thin adapters around ``sbatch``/``srun``, ``kubectl`` or subprocesses; the suite never
knows which one it talks to.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from clusterforge.errors import AcceptError
from clusterforge.userfiles import read_capped

__all__ = ["Launcher", "LocalLauncher", "SlurmLauncher", "Step", "StepRun", "records_of"]

# One step's job output: a record line per test per rank (a few KiB a node); more is a
# runaway job, read no further.
MAX_LOG_BYTES = 64 * 2**20

MARKER = "CFACCEPT "


@dataclass(frozen=True)
class Step:
    """One worker run: ``python -m clusterforge.accept.worker *args`` on ``nodes``."""

    name: str
    args: tuple[str, ...]
    nodes: tuple[str, ...]
    ranks_per_node: int = 1
    timeout_s: float = 900.0


@dataclass(frozen=True)
class StepRun:
    step: Step
    records: list[dict[str, Any]]
    log: str
    returncode: int


def records_of(text: str) -> list[dict[str, Any]]:
    """The worker's result lines in a job's output (anything else is the tools' own text)."""
    out = []
    for line in text.splitlines():
        _, marker, payload = line.partition(MARKER)
        if marker:
            try:
                out.append(json.loads(payload))
            except json.JSONDecodeError:
                continue  # a line cut by interleaved output; the log keeps it
    return out


class Launcher(Protocol):
    def run(self, step: Step) -> StepRun: ...


def _worker_argv(python: str, step: Step) -> list[str]:
    return [python, "-m", "clusterforge.accept.worker", *step.args]


@dataclass
class LocalLauncher:
    """Every 'node' is a label on this machine: one process per rank, rendezvous on
    127.0.0.1.  For a single node, or a laptop rehearsal of the suite."""

    python: str = sys.executable
    port: int = 29531

    def run(self, step: Step) -> StepRun:
        world = len(step.nodes) * step.ranks_per_node
        procs = []
        for rank in range(world):
            env = os.environ | {
                "CF_NODE": step.nodes[rank // step.ranks_per_node],
                "RANK": str(rank),
                "WORLD_SIZE": str(world),
                "LOCAL_RANK": str(rank % step.ranks_per_node),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(self.port),
                "CF_PEER_ADDRS": ",".join(["127.0.0.1"] * len(step.nodes)),
            }
            procs.append(
                subprocess.Popen(
                    _worker_argv(self.python, step),
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        self.port += 1  # a fresh rendezvous port per step
        logs, code = [], 0
        for proc in procs:
            out, _ = proc.communicate(timeout=step.timeout_s)
            logs.append(out)
            code = code or proc.returncode
        log = "".join(logs)
        return StepRun(step, records_of(log), log, code)


def _sbatch_script(step: Step, python: str, out_file: Path, port: int) -> str:
    nodes = ",".join(step.nodes)
    worker = shlex.join(_worker_argv(python, step))
    return "\n".join(
        [
            "#!/bin/bash",
            f"#SBATCH --job-name=cf-accept-{step.name}",
            f"#SBATCH --nodes={len(step.nodes)}",
            f"#SBATCH --nodelist={nodes}",
            f"#SBATCH --ntasks-per-node={step.ranks_per_node}",
            "#SBATCH --exclusive",  # acceptance owns the whole node: nothing else may run
            f"#SBATCH --output={out_file}",
            f"#SBATCH --time={max(1, int(step.timeout_s // 60) + 1)}",
            "# The rendezvous address is the first node's NodeAddr (it resolves everywhere).",
            'first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)',
            'export MASTER_ADDR=$(scontrol show node "$first" | '
            "sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')",
            f"export MASTER_PORT={port}",
            "CF_PEER_ADDRS=",
            f"for n in {' '.join(step.nodes)}; do",
            "  addr=$(scontrol show node \"$n\" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')",
            '  CF_PEER_ADDRS="${CF_PEER_ADDRS:+$CF_PEER_ADDRS,}$addr"',
            "done",
            "export CF_PEER_ADDRS",
            f"srun --kill-on-bad-exit=0 {worker}",
            "",
        ]
    )


@dataclass
class SlurmLauncher:
    """``sbatch --wait`` a script whose ``srun`` starts the worker on every rank.

    ``work`` must be readable here after the job (the batch output file is written by the
    first node: on a real cluster, a shared file system)."""

    work: Path
    python: str = sys.executable
    port: int = 29631
    extra_sbatch: tuple[str, ...] = field(default_factory=tuple)

    def run(self, step: Step) -> StepRun:
        if shutil.which("sbatch") is None:
            raise AcceptError("could not run through Slurm: 'sbatch' is not on PATH")
        self.work.mkdir(parents=True, exist_ok=True)
        out_file = self.work / f"{step.name}.out"
        script = self.work / f"{step.name}.sbatch"
        script.write_text(_sbatch_script(step, self.python, out_file, self.port))
        self.port += 1
        returncode, said = _sbatch_wait(
            [*self.extra_sbatch, str(script)], step.timeout_s + QUEUE_MARGIN_S
        )
        if not out_file.exists():
            raise AcceptError(
                f"could not run through Slurm: sbatch exited {returncode}: {said.strip()[:300]}"
            )
        log = read_capped(out_file, MAX_LOG_BYTES, "job output", AcceptError).decode(
            errors="replace"
        )
        return StepRun(step, records_of(log), log, returncode)


POLL_S = 2.0  # how often a waiting job's state is looked at
QUEUE_MARGIN_S = 120.0  # what a job may wait in the queue beyond its step's own time


def _sbatch_wait(args: list[str], timeout_s: float) -> tuple[int, str]:
    """``sbatch --wait --parsable *args``: its exit code and what it printed. A job Slurm holds
    (a failed prolog requeues it held, ``launch failed requeued held``; an administrator's
    hold) would keep ``--wait`` waiting to the end; it is cancelled and refused at once, as is a
    job past ``timeout_s``."""
    proc = subprocess.Popen(
        ["sbatch", "--wait", "--parsable", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = proc.stdout
    if out is None:  # pragma: no cover - Popen with stdout=PIPE always has it
        raise AcceptError("could not run through Slurm: sbatch's output is not readable")
    first, job = "", ""
    while not job:  # the job id (``id[;cluster]``) comes before the wait; warnings may precede it
        line = out.readline()
        first += line
        if not line:
            break
        job = word if (word := line.strip().split(";")[0]).isdigit() else ""
    deadline = time.monotonic() + timeout_s
    with proc:  # closes the pipe however this ends
        while True:
            try:
                proc.wait(timeout=POLL_S)
                return proc.returncode, first + out.read()
            except subprocess.TimeoutExpired:
                held = _held_reason(job) if job else None
                if held is None and time.monotonic() < deadline:
                    continue
            if job:
                subprocess.run(["scancel", job], capture_output=True, check=False, timeout=30)
            proc.kill()
            break
        if held is not None:
            raise AcceptError(
                f"could not run through Slurm: job {job} is held ({held}), cancelled; a failed "
                f"prolog or node drains its nodes: see `sinfo -R` and `scontrol show job {job}`"
            )
        raise AcceptError(
            f"could not run through Slurm: job {job} did not finish within {timeout_s:.0f} s, "
            "cancelled; see `sacct -j " + job + "` for where it waited"
        )


def _held_reason(job: str) -> str | None:
    """The reason Slurm holds pending ``job`` (``squeue`` ``%r``), None when it is not held."""
    out = subprocess.run(
        ["squeue", "-h", "-j", job, "-o", "%T %r"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    state, _, reason = out.stdout.strip().partition(" ")
    if state == "PENDING" and "held" in reason.lower():
        return reason
    return None
