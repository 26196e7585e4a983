"""GPU misuse: every process holding a GPU must belong to scheduled work.

A GPU that runs something nobody scheduled is either a leftover of an ended job (holding
memory the next job needs) or someone using the cluster's GPUs behind the scheduler's back,
cryptocurrency mining being the common case.  Each process NVML lists on a GPU is judged,
first match wins:

1. **miner**: its program name is a known mining program, or an argument names a mining
   pool (a Stratum URL).  Judged first, so neither a job nor the allow-list excuses it.
2. **job** / **pod**: its cgroup is a running Slurm job's, or a Kubernetes pod's
   (:mod:`clusterforge.ops.cgroups`).  A process in the cgroup of a Slurm job that has
   ended (no slurmstepd left, :mod:`clusterforge.ops.procfs`) is **outside_job**: an orphan.
3. **allowed**: its name is on the allow-list (DCGM, the persistence daemon, this agent).
4. **outside_job**: anything else.
5. **unknown**: ``/proc/<pid>`` is missing (the process ended between the readings, or the
   check cannot see the host's PIDs); never a failure.

Miners and processes outside a job fail the check (critical): the node is drained by the
check's action like any other failure.  The lists are data: ``data/gpu_process_policy.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import yaml

from clusterforge.errors import CheckError
from clusterforge.ops.cgroups import cgroup_owner
from clusterforge.ops.checks.base import CheckResult, result
from clusterforge.ops.readings import GpuReading, ProcessReading

__all__ = [
    "ProcessKind",
    "ProcessPolicy",
    "ProcessVerdict",
    "check_gpu_processes",
    "judge_gpu_processes",
    "load_process_policy",
]

ProcessKind = Literal["job", "pod", "allowed", "outside_job", "miner", "unknown"]
FOREIGN_KINDS: tuple[ProcessKind, ...] = ("outside_job", "miner")
_COMM_CHARS = 15  # TASK_COMM_LEN - 1: the kernel cuts /proc/<pid>/comm to this (proc(5))
_MAX_COMMAND_CHARS = 160  # in reports and metric labels


@dataclass(frozen=True)
class ProcessPolicy:
    """Names allowed outside a job, miners' names and pool URL schemes (lower case)."""

    allowed_names: tuple[str, ...] = ()
    miner_names: tuple[str, ...] = ()
    pool_url_schemes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProcessVerdict:
    """One process on one GPU and what it is."""

    gpu: int
    uuid: str | None
    pid: int
    kind: ProcessKind
    why: str
    user: str | None = None
    command: str = ""
    used_memory_mib: float | None = None


def _names(data: dict[str, Any], key: str) -> tuple[str, ...]:
    values = data.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise CheckError(f"GPU process policy: '{key}' must be a list of non-empty names")
    return tuple(v.lower() for v in values)


def load_process_policy(extra_allowed: tuple[str, ...] = ()) -> ProcessPolicy:
    """The default policy (package data), with a site's extra allowed names."""
    text = resources.files("clusterforge.ops").joinpath("data/gpu_process_policy.yaml")
    data = yaml.safe_load(text.read_text(encoding="utf-8"))
    for name in extra_allowed:
        if not name.strip() or "/" in name:
            raise CheckError(
                f"allowed process name {name!r} is empty or a path: give the program's file "
                "name, e.g. --allow-process nv-hostengine"
            )
    allowed = _names(data, "allowed_names") + tuple(n.strip().lower() for n in extra_allowed)
    return ProcessPolicy(
        allowed_names=allowed,
        miner_names=_names(data, "miner_names"),
        pool_url_schemes=_names(data, "pool_url_schemes"),
    )


def _program_names(proc: ProcessReading) -> set[str]:
    """The names a process goes by: argv[0]'s file name and the kernel's comm, lower case."""
    names = {proc.comm.lower()} if proc.comm else set()
    if proc.cmdline:
        names.add(proc.cmdline[0].rsplit("/", 1)[-1].lower())
    return names


def _miner_signature(proc: ProcessReading, policy: ProcessPolicy) -> str | None:
    for name in sorted(_program_names(proc)):
        for miner in policy.miner_names:
            if re.fullmatch(re.escape(miner) + r"(?:[-_.].*)?", name):
                return f"a known miner's name ({miner})"
    for arg in proc.cmdline:
        for scheme in policy.pool_url_schemes:
            if scheme in arg.lower():
                return f"a mining pool URL on its command line ({scheme})"
    return None


def _allowed(proc: ProcessReading, policy: ProcessPolicy) -> bool:
    names = _program_names(proc)
    return any(
        n in names or n[:_COMM_CHARS] == (proc.comm or "").lower() for n in policy.allowed_names
    )


def _kind(proc: ProcessReading | None, policy: ProcessPolicy) -> tuple[ProcessKind, str]:
    if proc is None or not proc.found:
        return "unknown", "not in /proc (it ended, or the check does not see the host's PIDs)"
    if (miner := _miner_signature(proc, policy)) is not None:
        return "miner", miner
    owner = cgroup_owner(proc.cgroup) if proc.cgroup else None
    if owner is not None and owner.kind == "slurm_job":
        if proc.job_running is False:
            return "outside_job", f"left in the cgroup of Slurm job {owner.id}, which has ended"
        return "job", f"Slurm job {owner.id}" if owner.id else "a Slurm job (in slurmd's cgroup)"
    if owner is not None:
        return "pod", f"Kubernetes pod {owner.id}"
    if _allowed(proc, policy):
        return "allowed", "allowed by name"
    return "outside_job", f"outside any Slurm job or pod (cgroup {proc.cgroup or 'unknown'})"


def _command(proc: ProcessReading | None) -> str:
    if proc is None:
        return ""
    text = " ".join(proc.cmdline) or proc.comm or ""
    return text if len(text) <= _MAX_COMMAND_CHARS else text[: _MAX_COMMAND_CHARS - 3] + "..."


def judge_gpu_processes(
    gpus: tuple[GpuReading, ...], processes: tuple[ProcessReading, ...], policy: ProcessPolicy
) -> list[ProcessVerdict]:
    """A verdict for every process on every GPU that reported a process list."""
    by_pid = {p.pid: p for p in processes}
    verdicts = []
    for gpu in gpus:
        for process in gpu.processes or ():
            proc = by_pid.get(process.pid)
            kind, why = _kind(proc, policy)
            verdicts.append(
                ProcessVerdict(
                    gpu=gpu.index,
                    uuid=gpu.uuid,
                    pid=process.pid,
                    kind=kind,
                    why=why,
                    user=proc.user if proc else None,
                    command=_command(proc),
                    used_memory_mib=process.used_memory_mib,
                )
            )
    return verdicts


_EXPECTED = "every GPU process in a running Slurm job or a pod, or allowed by name; no miner"
_REMEDY = {
    "miner": "a cryptocurrency miner: keep the node drained, kill the process, and find how it "
    "got there (the user's account, the job's container image, the node's software)",
    "outside_job": "find who started it; kill it (a process left by an ended job is beyond "
    "scancel), or allow a legitimate service with --allow-process",
    "unknown": "run the check in the host's PID and cgroup namespaces (Kubernetes: hostPID) "
    "so NVML's PIDs can be found in /proc",
}


def _result(verdict: ProcessVerdict) -> CheckResult:
    memory = "" if verdict.used_memory_mib is None else f", {verdict.used_memory_mib:.0f} MiB"
    observed = (
        f"{verdict.kind.replace('_', ' ')}: pid {verdict.pid} user {verdict.user or '?'} "
        f"command '{verdict.command}' on {verdict.uuid or 'GPU ' + str(verdict.gpu)}{memory}: "
        f"{verdict.why}"
    )
    return result(
        "gpu.processes",
        "unknown" if verdict.kind == "unknown" else "fail",
        severity="critical",
        subject=f"gpu{verdict.gpu} pid {verdict.pid}",
        observed=observed,
        expected=_EXPECTED,
        remedy=_REMEDY[verdict.kind],
        gpu=verdict.gpu,
    )


def check_gpu_processes(
    gpus: tuple[GpuReading, ...], verdicts: list[ProcessVerdict]
) -> list[CheckResult]:
    """One result per foreign or unknown process; one pass per GPU with none."""
    results: list[CheckResult] = []
    for gpu in gpus:
        if gpu.processes is None:
            continue  # NVML gave no process list: nothing to judge
        mine = [v for v in verdicts if v.gpu == gpu.index]
        flagged = [v for v in mine if v.kind in (*FOREIGN_KINDS, "unknown")]
        results += [_result(v) for v in flagged]
        if not flagged:
            owners = sorted({v.why for v in mine})
            results.append(
                result(
                    "gpu.processes",
                    "pass",
                    severity="critical",
                    subject=f"gpu{gpu.index}",
                    observed=f"{len(mine)} process(es)"
                    + (f": {'; '.join(owners)}" if owners else ""),
                    expected=_EXPECTED,
                    gpu=gpu.index,
                )
            )
    return results
