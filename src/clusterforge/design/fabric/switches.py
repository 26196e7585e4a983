"""The switch planned for each role of a fabric when the spec names none.

The role of each catalog switch is a catalog fact (``Switch.default_roles``), after the NVIDIA
DGX SuperPOD H100 reference architecture ("Network fabrics"): the compute fabric's InfiniBand
or Ethernet switch, SN4600C for in-band and SN2201 for out-of-band management; after the DGX
SuperPOD GB200 reference architecture ("Storage and In-band Ethernet Fabric"), SN5600 for the
converged storage and in-band fabric of rack-scale systems.
"""

from __future__ import annotations

from typing import Literal

from clusterforge.catalog import Catalog, Switch
from clusterforge.errors import CatalogError

__all__ = ["SwitchRole", "default_switch"]

SwitchRole = Literal[
    "compute-infiniband", "compute-roce", "in-band", "storage-inband", "out-of-band"
]


def default_switch(catalog: Catalog, role: SwitchRole) -> Switch:
    """The catalog switch planned for ``role`` when the spec names none."""
    for switch in catalog.switches:
        if role in switch.default_roles:
            return switch
    raise CatalogError(f"switches.toml: no switch has default_roles = [{role!r}]; add one")
