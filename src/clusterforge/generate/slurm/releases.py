"""What each Slurm release can read: the plugins the generated files may name.

Each feature carries the release that introduced it and where that is written:

* ``topology/block`` with ``BlockName=... Nodes=...`` in topology.conf: Slurm 23.11
  (SchedMD, "Slurm 23.11 release notes"; topology.conf(5), "topology/block");
* ``BlockSizes=`` in topology.conf (the planning base block size, then power-of-two larger
  aggregates; every block holds at least the base size): Slurm 24.05 (topology.conf(5));
* ``SwitchType=switch/nvidia_imex`` (one IMEX channel per job; the channel device's major
  number is read from /proc/devices unless ``SwitchParameters=imex_dev_major=`` says
  otherwise): Slurm 24.05 (Slurm NEWS, 24.05.0; slurm.conf(5), SwitchType; NVIDIA's
  "Slurm support for multi-node NVLink" notes the plugin "introduced in Slurm 24.05").

Releases are compared as (year, month), the way SchedMD numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.spec import SLURM_VERSIONS, SlurmVersion

__all__ = ["SLURM_FEATURES", "SlurmFeature", "SlurmRelease", "slurm_release"]


@dataclass(frozen=True)
class SlurmFeature:
    """One thing the generated files use, and the first release that has it."""

    name: str
    since: str  # year.month
    source: str


SLURM_FEATURES: dict[str, SlurmFeature] = {
    f.name: f
    for f in (
        SlurmFeature("topology/block", "23.11", "Slurm 23.11 release notes; topology.conf(5)"),
        SlurmFeature("BlockSizes", "24.05", "topology.conf(5), BlockSizes"),
        SlurmFeature(
            "switch/nvidia_imex", "24.05", "Slurm NEWS 24.05.0; slurm.conf(5), SwitchType"
        ),
    )
}


def _release_key(version: str) -> tuple[int, int]:
    year, month = version.split(".")
    return int(year), int(month)


@dataclass(frozen=True)
class SlurmRelease:
    """A target Slurm release and which of :data:`SLURM_FEATURES` it has."""

    version: SlurmVersion

    def has(self, feature: str) -> bool:
        return _release_key(self.version) >= _release_key(SLURM_FEATURES[feature].since)

    @property
    def block_topology(self) -> bool:
        return self.has("topology/block")

    @property
    def block_sizes(self) -> bool:
        return self.has("BlockSizes")

    @property
    def nvidia_imex(self) -> bool:
        return self.has("switch/nvidia_imex")


def slurm_release(version: SlurmVersion) -> SlurmRelease:
    """The release the spec targets (the spec has already refused any other version)."""
    assert version in SLURM_VERSIONS, version
    return SlurmRelease(version)
