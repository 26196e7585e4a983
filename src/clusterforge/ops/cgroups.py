"""Which scheduled work a cgroup path belongs to: a Slurm job, a Kubernetes pod, or nothing.

Pure functions over the text of ``/proc/<pid>/cgroup`` (proc(5): one ``id:controllers:path``
line per hierarchy; cgroup v2 has the single line ``0::path``).  The layouts:

- **Slurm, cgroup/v2** (slurm.schedmd.com/cgroup_v2.html, "Hierarchy overview"): slurmd
  creates the systemd scope ``system.slice/slurmstepd.scope`` (``<node>_slurmstepd.scope``
  when built with ``--enable-multiple-slurmd``); each job is ``job_<id>``, each step
  ``step_<n|batch|extern|interactive>`` with the step's slurmstepd in ``slurm`` and the
  user's processes in ``user/task_<n>``.  The scope's ``system`` folder holds only the idle
  ``slurmstepd infinity`` process and belongs to no job.
- **Slurm without cgroup process tracking** (``ProctrackType`` other than proctrack/cgroup):
  slurmstepd and its tasks stay in the cgroup slurmd was started in,
  ``system.slice/slurmd.service``: a job's process, but which job is not told (id "").
- **Slurm, cgroup/v1** (slurm.schedmd.com/cgroups.html): ``/slurm/uid_<uid>/job_<id>/...``
  in every controller's hierarchy (``slurm_<node>`` with multiple slurmd).
- **Kubernetes** (kubelet's cgroup manager, kubernetes/kubernetes
  ``pkg/kubelet/cm/cgroup_manager_linux.go``): with the cgroupfs driver
  ``/kubepods[/burstable|/besteffort]/pod<uid>/<container>``; with the systemd driver each
  level is a slice named after its path, ``kubepods-burstable-pod<uid>.slice``, where the
  dashes of the pod UID are written as underscores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["CgroupOwner", "cgroup_owner", "cgroup_path"]

_SLURM_V2 = re.compile(r"/system\.slice/(?:[^/]+_)?slurmstepd\.scope/job_(\d+)(?:/|$)")
_SLURM_V1 = re.compile(r"/slurm(?:_[^/]+)?/uid_\d+/job_(\d+)(?:/|$)")
_SLURMD = re.compile(r"/system\.slice/slurmd\.service(?:/|$)")
# A pod UID is an RFC 4122 UUID: 36 characters, dashes (cgroupfs) or underscores (systemd).
_POD_SYSTEMD = re.compile(r"/kubepods[-\w]*-pod([0-9a-f_]{36})\.slice(?:/|$)")
_POD_CGROUPFS = re.compile(r"/kubepods(?:/burstable|/besteffort)?/pod([0-9a-f-]{36})(?:/|$)")


@dataclass(frozen=True)
class CgroupOwner:
    """The scheduled work a cgroup belongs to.  ``path`` is the job's own cgroup folder
    (``.../job_<id>``) for a Slurm job, the pod's folder for a pod."""

    kind: Literal["slurm_job", "pod"]
    id: str
    path: str


def cgroup_owner(path: str) -> CgroupOwner | None:
    """The Slurm job or Kubernetes pod whose cgroup ``path`` is in, or None."""
    for pattern in (_SLURM_V2, _SLURM_V1):
        if match := pattern.search(path):
            return CgroupOwner("slurm_job", match.group(1), path[: match.end(1)])
    if match := _SLURMD.search(path):
        return CgroupOwner("slurm_job", "", path[: match.end()].rstrip("/"))
    for pattern in (_POD_SYSTEMD, _POD_CGROUPFS):
        if match := pattern.search(path):
            uid = match.group(1).replace("_", "-")
            return CgroupOwner("pod", uid, path[: match.end()].rstrip("/"))
    return None


def cgroup_path(text: str) -> str | None:
    """The path to judge a process by, from ``/proc/<pid>/cgroup``: the cgroup v2 line
    (``0::path``), else the first v1 line whose path names a job or a pod, else the first."""
    paths: list[tuple[str, str]] = []
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        _controllers, sep, path = rest.partition(":")
        if sep:
            paths.append((hierarchy, path.strip()))
    for hierarchy, path in paths:
        if hierarchy == "0":
            return path
    owned = [path for _, path in paths if cgroup_owner(path) is not None]
    ordered = owned or [path for _, path in paths]
    return ordered[0] if ordered else None
