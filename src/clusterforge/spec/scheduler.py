"""The scheduler the generated files target: which Slurm release reads them."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from clusterforge.spec.base import Section

__all__ = ["DEFAULT_SLURM_VERSION", "SLURM_VERSIONS", "SlurmSpec", "SlurmVersion"]

# Slurm's major releases (year.month) from Debian 12's slurm-wlm (22.05) to the current one;
# what each can read is in clusterforge.generate.slurm.releases.
SlurmVersion = Literal["22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11"]
SLURM_VERSIONS: tuple[str, ...] = get_args(SlurmVersion)
DEFAULT_SLURM_VERSION: SlurmVersion = "25.11"
_RELEASE_RE = re.compile(r"^(\d{2}\.\d{2})(\.\d+)?$")


class SlurmSpec(Section):
    """The Slurm release that will read the generated files."""

    version: SlurmVersion = Field(
        DEFAULT_SLURM_VERSION,
        description="Slurm major release (year.month) that runs the cluster: the files use "
        "what it supports (23.11+: topology/block for rack-scale NVLink; 24.05+: "
        "switch/nvidia_imex). 22.05 is Debian 12's slurm-wlm; a patch level (25.11.7) is "
        "accepted and ignored",
    )

    @field_validator("version", mode="before")
    @classmethod
    def _release(cls, value: Any) -> Any:
        """YAML reads ``25.11`` as a number and ``22.05`` as 22.05 (not '22.5'): format it back;
        drop a patch level."""
        if isinstance(value, float):
            return f"{value:.2f}"
        if isinstance(value, str) and (match := _RELEASE_RE.match(value.strip())):
            return match[1]
        return value
