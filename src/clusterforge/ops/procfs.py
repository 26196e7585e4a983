"""Who a process is: its user, command and cgroup from ``/proc``, and whether its Slurm job
still runs, from the cgroup tree.

Everything is read below ``root`` (``/`` on a node, a fake tree in tests).  Files (proc(5)):
``/proc/<pid>/status`` (the ``Uid:`` line: real, effective, saved, filesystem uid),
``/proc/<pid>/comm`` (the kernel's name for the process, 15 characters at most),
``/proc/<pid>/cmdline`` (the arguments, NUL-separated) and ``/proc/<pid>/cgroup``.

A Slurm job runs while a slurmstepd lives in one of its steps: with cgroup/v2 each step's
slurmstepd sits in ``job_<id>/step_<s>/slurm`` and removes the job's folders when the job
ends (slurm.schedmd.com/cgroup_v2.html, "Hierarchy overview", "Termination and cleanup").
A process left in a job folder with no slurmstepd is what the job left behind.  This needs
no call to slurmctld, which a health check on every node every minute must not load.  Under
cgroup/v1 the stepd is not in the job's folder, so there the state is not told (None).

The check must see the host's PIDs: NVML reports host PIDs, which inside a private PID
namespace (a container's default; Kubernetes ``hostPID: true`` lifts it) are not in
``/proc``.  Inside a private cgroup namespace a host process's cgroup path starts with
``/..`` and the job folders are not under the container's ``/sys/fs/cgroup``; its job's state
is then not told (None), never taken for "ended".
"""

from __future__ import annotations

import pwd
from pathlib import Path

from clusterforge.ops.cgroups import CgroupOwner, cgroup_owner, cgroup_path
from clusterforge.ops.readings import ProcessReading

__all__ = ["ProcReader"]

_MAX_CMDLINE_CHARS = 4096  # the command line as reported; enough to show any miner's pool URL


class ProcReader:
    """Reads one process at a time below ``root``."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)

    def _read(self, absolute: str) -> str | None:
        try:
            return (self.root / absolute.lstrip("/")).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def process(self, pid: int) -> ProcessReading:
        """The facts of ``pid``; ``found=False`` when ``/proc/<pid>`` is not there."""
        status = self._read(f"/proc/{pid}/status")
        if status is None:
            return ProcessReading(pid=pid, found=False)
        uid = _uid(status)
        raw = (self._read(f"/proc/{pid}/cmdline") or "")[:_MAX_CMDLINE_CHARS]
        path = cgroup_path(self._read(f"/proc/{pid}/cgroup") or "")
        owner = cgroup_owner(path) if path else None
        return ProcessReading(
            pid=pid,
            found=True,
            uid=uid,
            user=None if uid is None else self.user_name(uid),
            comm=(self._read(f"/proc/{pid}/comm") or "").strip() or None,
            cmdline=tuple(arg for arg in raw.split("\0") if arg),
            cgroup=path,
            job_running=self._job_running(owner),
        )

    def user_name(self, uid: int) -> str:
        """The login name of ``uid``: the name service on a real root (LDAP, SSSD users too),
        ``etc/passwd`` of a fake tree; the number when there is none."""
        if self.root == Path("/"):
            try:
                return pwd.getpwuid(uid).pw_name
            except KeyError:
                return str(uid)
        for line in (self._read("/etc/passwd") or "").splitlines():
            fields = line.split(":")
            if len(fields) > 2 and fields[2] == str(uid):
                return fields[0]
        return str(uid)

    def _job_running(self, owner: CgroupOwner | None) -> bool | None:
        if owner is None or owner.kind != "slurm_job" or "slurmstepd.scope" not in owner.path:
            return None
        if "/../" in owner.path or owner.path.startswith("/.."):
            # Seen from inside a cgroup namespace (cgroups(7), "Cgroup namespaces"): the
            # job's folder is outside the /sys/fs/cgroup we can see.
            return None
        job = self.root / "sys/fs/cgroup" / owner.path.lstrip("/")
        if not job.is_dir():
            return False
        for procs in job.glob("step_*/slurm/cgroup.procs"):
            try:
                if procs.read_text(encoding="utf-8").strip():
                    return True
            except OSError:
                continue
        return False


def _uid(status: str) -> int | None:
    """The real uid from ``Uid:\\treal\\teffective\\tsaved\\tfs``."""
    for line in status.splitlines():
        if line.startswith("Uid:"):
            fields = line.split()
            if len(fields) > 1 and fields[1].isdigit():
                return int(fields[1])
    return None
