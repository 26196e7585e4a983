"""The emulated Slurm recipe, now a library module: :mod:`clusterforge.rehearse.emulated`.

Re-exported here so the system tests that bring up the generated files keep their imports;
the default :class:`Ports` (controller 16817, nodes from 17001) are this folder's range.
"""

from __future__ import annotations

from clusterforge.rehearse.emulated import (
    EmulatedSlurm,
    Ports,
    cgroups_unavailable,
    expand_hostlist,
    slurm_env,
    slurm_release_of,
)

__all__ = [
    "EmulatedSlurm",
    "Ports",
    "cgroups_unavailable",
    "expand_hostlist",
    "slurm_env",
    "slurm_release_of",
]
