"""Typed rows of the network catalog: NICs, switches, link media, cables and transceivers.

Units are in the field names; every row has a source. A NIC's or switch's ``cage`` is the
socket its cables and transceivers plug into, which is how :class:`Part` rows are matched to
the ports they serve.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clusterforge.catalog.models import CatalogRow

__all__ = ["Cage", "Medium", "Nic", "Part", "PartMode", "PortMode", "Switch"]

Cage = Literal["osfp-finned", "osfp-flat", "qsfp", "rj45"]
"""The socket a transceiver or cable end plugs into: an OSFP cage with a finned-top (IHS) plug
(air-cooled Quantum-2 / Spectrum-4 switches), an OSFP cage with a riding heat sink that takes
flat-top (RHS) plugs (ConnectX-7/8 adapters, DGX H100 twin-port cages), the QSFP family
(QSFP28 / QSFP56 / QSFP112, one plug shape), or an RJ45 copper jack (NVIDIA LinkX 100G-PAM4
user guide, "connector types")."""


class Nic(CatalogRow):
    port_gbit_per_s: float
    num_ports: int
    cage: Cage | None = Field(
        None, description="Cage of each port (None: unknown, optics cannot be ordered)"
    )
    fabrics: list[Literal["infiniband", "ethernet"]]
    power_w: float
    price_usd: float


class PortMode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    port_gbit_per_s: float
    num_ports: int
    ports_per_cage: int


class Switch(CatalogRow):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    fabric: Literal["infiniband", "ethernet"]
    cage: Cage | None = Field(
        None, description="Cage of the front ports (None: unknown, optics cannot be ordered)"
    )
    u_height: int
    typical_w: float
    max_w: float
    weight_kg: float
    price_usd: float
    price_date: str
    port_modes: list[PortMode]
    uplink_ports: int = 0
    uplink_gbit_per_s: float = 0.0
    in_network_reduction: bool = Field(
        False, description="Reduces in the switch (InfiniBand SHARP), so NCCL CollNet can run"
    )
    default_roles: list[
        Literal["compute-infiniband", "compute-roce", "in-band", "storage-inband", "out-of-band"]
    ] = Field(
        default_factory=list,
        description="Fabrics this switch is planned for when a spec names none (a role is "
        "held by exactly one switch)",
    )

    def radix_at(self, port_gbit_per_s: float) -> int | None:
        """Number of ports at the given speed, or None when the switch cannot run it."""
        mode = self.mode_at(port_gbit_per_s)
        return mode.num_ports if mode else None

    def mode_at(self, port_gbit_per_s: float) -> PortMode | None:
        for mode in self.port_modes:
            if mode.port_gbit_per_s == port_gbit_per_s:
                return mode
        return None


class Medium(CatalogRow):
    netbox_type: str
    max_reach_m: float
    min_gbit_per_s: float = Field(description="Slowest lane rate the medium is sold for, Gb/s")
    max_gbit_per_s: float = Field(
        description="Fastest port speed the medium is specified (or recommended) for, Gb/s"
    )
    pluggable_optics: bool = Field(description="A transceiver is bought per end")


class PartMode(BaseModel):
    """How many links one module or cable serves at one port speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gbit_per_s: float = Field(description="Port speed of each link, Gb/s")
    num_links: int = Field(gt=0, description="Links one module (or cable) serves at that speed")


class Part(CatalogRow):
    """An orderable cable or transceiver: ``id`` is the vendor's ordering part number."""

    media: list[str] = Field(description="The media (media.toml ids) this part realizes")
    kind: Literal["transceiver", "cable"]
    cages: list[Cage] = Field(
        description="Transceiver: the one cage it plugs into; cable with its own plugs (DAC, "
        "ACC, AOC, Cat6): the cages of its two ends; fibre: empty (it plugs into transceivers)"
    )
    modes: list[PartMode]
    power_w: float = Field(description="Power of one module, or of both ends of one cable, W")
    price_usd: float
    price_date: str = Field(description="Month the price holds for, YYYY-MM")
    price_source: str = Field(description="Where the price comes from, with a confidence tag")

    @model_validator(mode="after")
    def _cages_fit_kind(self) -> Part:
        if self.kind == "transceiver" and len(self.cages) != 1:
            raise ValueError(f"{self.id}: a transceiver plugs into exactly one cage")
        if self.kind == "cable" and len(self.cages) not in (0, 2):
            raise ValueError(f"{self.id}: a cable has two plugged ends, or none (a fibre)")
        return self

    def links_at(self, gbit_per_s: float) -> int | None:
        """Links one unit serves at ``gbit_per_s``, or None when it cannot run that speed."""
        return next((m.num_links for m in self.modes if m.gbit_per_s == gbit_per_s), None)
