"""The spares a design holds, in one sentence: how many, where they stand, how they join.

Four ways to hold them: whole spare nodes on the free leaf ports of the training fabric, the
rest cold and cabled on swap (``spare-ports``); on leaves of their own (``spare-pool``);
cabled like training nodes (``counted``); or, for rack-scale NVLink domains, a few trays of
every rack kept as hot spares inside the domain (``in-domain``, the spec's
``spare_nodes_per_nvlink_domain``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = ["SpareMode", "SparesHeld", "spares_held"]

SpareMode = Literal["none", "spare-ports", "spare-pool", "counted", "in-domain"]


@dataclass(frozen=True)
class SparesHeld:
    """Spare nodes of a design and how they are held."""

    mode: SpareMode
    num_spare_nodes: int
    num_cabled: int  # on the compute fabric now (free leaf ports, or cabled like training)
    num_cold: int  # cabled on swap
    num_pool_leaves: int
    per_domain: int  # in-domain: trays of each NVLink domain held as spares
    num_domains: int  # in-domain: the NVLink domains (racks) that hold them
    whole_racks: int  # rack-scale systems: spares that are whole racks
    domain_trays: int = 0  # rack-scale systems: trays of one NVLink domain

    @property
    def summary(self) -> str:
        """``18 nodes (1 whole rack): 16 on free leaf ports, 2 cold (cabled on swap)``."""
        n = self.num_spare_nodes
        match self.mode:
            case "none":
                return "none"
            case "in-domain":
                used = self.domain_trays - self.per_domain
                return (
                    f"{n} trays, {self.per_domain} in each of {self.num_domains} NVLink "
                    f"domains: hot and cabled, swapped in by a restart (jobs use {used} of "
                    f"{self.domain_trays} trays)"
                )
            case _:
                return f"{n} node{'s' if n != 1 else ''}{self._racks}: {self._where}"

    @property
    def _racks(self) -> str:
        if not self.whole_racks:
            return ""
        return f" ({self.whole_racks} whole rack{'s' if self.whole_racks > 1 else ''})"

    @property
    def _where(self) -> str:
        match self.mode:
            case "spare-pool" if not self.num_pool_leaves:
                return "cold: no compute fabric for pool leaves to join"
            case "spare-pool":
                leaves = self.num_pool_leaves
                return f"on {leaves} pool lea{'ves' if leaves != 1 else 'f'} of their own"
            case "counted":
                return "cabled like training nodes"
            case _ if not self.num_cabled:
                return "cold (cabled on swap)"
            case _:
                return (
                    f"{self.num_cabled} on free leaf ports, {self.num_cold} cold (cabled on swap)"
                )


def spares_held(design: Design) -> SparesHeld:
    """How ``design`` holds its spare nodes."""
    c, f = design.compute, design.fabric
    spares = c.num_spare_nodes
    system = c.node.rack_scale_nodes
    if not spares:
        return SparesHeld("none", 0, 0, 0, 0, 0, 0, 0)
    if c.num_spares_per_nvlink_domain:
        racks = len(c.rack_scale_blocks())
        per_domain = c.num_spares_per_nvlink_domain
        return SparesHeld("in-domain", spares, spares, 0, 0, per_domain, racks, 0, system)
    cabled = spares - f.num_cold_spares - (spares if f.spares == "spare-pool" else 0)
    return SparesHeld(
        f.spares,
        spares,
        max(cabled, 0),
        f.num_cold_spares,
        f.num_spare_pool_leaves,
        0,
        0,
        spares // system if system else 0,
        system,
    )
