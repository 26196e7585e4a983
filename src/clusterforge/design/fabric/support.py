"""The support fabrics of a DGX SuperPOD-style cluster: storage, in-band and out-of-band.

Which storage and in-band networks a cluster gets is the node's reference design, a catalog
fact (``Node.storage_inband``):

* ``separate`` (NVIDIA DGX SuperPOD H100 and B200 reference architectures, "Network
  fabrics"): storage on its own leaf/spine of the compute fabric's default switch, in-band
  management on SN4600C at 100 GbE;
* ``converged`` (NVIDIA DGX SuperPOD GB200 reference architecture, "Storage and In-band
  Ethernet Fabric"): one Ethernet fabric (SN5600, role ``storage-inband``) carries both,
  reached through the node's storage ports (the compute trays' BlueField-3 ports), its leaves
  ``storage_leaf_oversubscription`` blocking toward the spines (5:3 in the RA).

Out-of-band management is SN2201 at 1 GbE in both.  Each data fabric here is two tiers of one
switch model: a leaf gives the share r/(r+1) of its bandwidth to endpoints once there are
spines (folded Clos, Al-Fares et al., SIGCOMM 2008 §2), its up-links run at the switch's
fastest port speed (800G cages of an SN5600 whose endpoint ports break out to 200G).  The
switch for each role is a catalog fact (``Switch.default_roles``).
"""

from __future__ import annotations

import math
from typing import Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Switch
from clusterforge.design.cabling.media import LinkEnd, fiber_media, is_orderable
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.switches import SwitchRole, default_switch
from clusterforge.design.storage import StorageDesign
from clusterforge.spec import ClusterSpec

__all__ = [
    "MGMT_SERVER_INBAND_PORTS",
    "SupportFabric",
    "SupportFabricName",
    "design_support_fabrics",
    "has_storage_fabric",
]

SupportFabricName = Literal["storage", "in-band", "storage-inband", "out-of-band"]

MGMT_SERVER_INBAND_PORTS = 2  # a bonded pair per management server (DGX SuperPOD RA)


class SupportFabric(BaseModel):
    """A storage, in-band, converged storage-and-in-band or out-of-band fabric: two tiers of
    one switch model, with the ports each kind of device has on it."""

    model_config = ConfigDict(frozen=True)
    name: SupportFabricName
    switch: Switch
    port_gbit_per_s: float = Field(description="Endpoint port speed, Gb/s")
    uplink_gbit_per_s: float = Field(description="Leaf to spine link speed, Gb/s")
    oversubscription: float = Field(1.0, description="Leaf endpoint : up-link bandwidth")
    ports_per_node: int = Field(description="Ports each GPU node has on this fabric")
    ports_per_storage_block: int = Field(description="Ports each storage block has on it")
    ports_per_mgmt_server: int = Field(description="Ports each management server has on it")
    num_endpoint_ports: int
    num_leaves: int
    num_spines: int
    num_uplinks: int

    @property
    def num_switches(self) -> int:
        return self.num_leaves + self.num_spines

    @property
    def carries_inband(self) -> bool:
        """In-band management rides this fabric (the out-of-band switches uplink to it)."""
        return self.name in ("in-band", "storage-inband")

    @property
    def ports_per_leaf(self) -> int:
        """Endpoint ports each leaf serves: all its ports alone, else the share the
        oversubscription leaves to endpoints (half of them when non-blocking)."""
        radix = _radix(self.switch, self.port_gbit_per_s)
        if not self.num_spines:
            return radix
        return _leaf_down_ports(self.switch, self.port_gbit_per_s, self.oversubscription)


def _radix(switch: Switch, speed: float) -> int:
    return switch.radix_at(speed) or max(m.num_ports for m in switch.port_modes)


def _uplink_speed(switch: Switch, catalog: Catalog) -> float:
    """Leaf-spine links run at the switch's fastest speed that the catalog can cable from
    one of its cages to another with orderable parts (an 800G port mode whose optics the
    catalog does not list would be an unpriced BOM line: 2 x 400G links per cage instead);
    the fastest speed when none is orderable."""
    speeds = sorted({m.port_gbit_per_s for m in switch.port_modes}, reverse=True)
    for speed in speeds:
        mode = switch.mode_at(speed)
        end = LinkEnd("switch", switch.cage, mode.ports_per_cage if mode else 1)
        if any(is_orderable(catalog, m, (end, end), speed) for m in fiber_media(catalog, speed)):
            return speed
    return speeds[0]


def _leaf_down_ports(switch: Switch, speed: float, oversubscription: float) -> int:
    """Endpoint ports of a leaf with spines: the share r/(r+1) of its bandwidth, whole ports."""
    radix = _radix(switch, speed)
    return max(1, int(radix * oversubscription / (oversubscription + 1)))


class _Ports(BaseModel):
    """What a data fabric is built from before it is sized."""

    model_config = ConfigDict(frozen=True)
    name: SupportFabricName
    switch: Switch
    speed: float
    oversubscription: float = 1.0
    per_node: int
    per_storage_block: int
    per_mgmt_server: int

    def endpoints(self, compute: ComputeDesign, storage: StorageDesign, num_mgmt: int) -> int:
        return (
            compute.num_nodes * self.per_node
            + storage.num_blocks * self.per_storage_block
            + num_mgmt * self.per_mgmt_server
        )


def _two_tier(p: _Ports, ports: int, catalog: Catalog) -> SupportFabric:
    """A two-tier fabric of ``p.switch`` for ``ports`` endpoints: one switch while they fit,
    else leaves of ``_leaf_down_ports`` endpoints whose up-links, at the switch's fastest
    speed, keep the oversubscription, and the spines those up-links fill."""
    radix = _radix(p.switch, p.speed)
    up_speed = _uplink_speed(p.switch, catalog)
    common = dict(
        name=p.name,
        switch=p.switch,
        port_gbit_per_s=p.speed,
        uplink_gbit_per_s=up_speed,
        oversubscription=p.oversubscription,
        ports_per_node=p.per_node,
        ports_per_storage_block=p.per_storage_block,
        ports_per_mgmt_server=p.per_mgmt_server,
        num_endpoint_ports=ports,
    )
    if ports <= radix:
        return SupportFabric(**common, num_leaves=1 if ports else 0, num_spines=0, num_uplinks=0)
    down = _leaf_down_ports(p.switch, p.speed, p.oversubscription)
    leaves = math.ceil(ports / down)
    up_per_leaf = math.ceil(down * p.speed / p.oversubscription / up_speed - 1e-9)
    spine_radix = _radix(p.switch, up_speed)
    spines = max(1, math.ceil(leaves * up_per_leaf / spine_radix))
    return SupportFabric(
        **common, num_leaves=leaves, num_spines=spines, num_uplinks=leaves * up_per_leaf
    )


def _oob(switch: Switch, ports: int) -> SupportFabric:
    """Out-of-band: 1 GbE access switches, each with its 100 GbE uplinks to the in-band core."""
    radix = switch.radix_at(1) or 48
    leaves = math.ceil(ports / radix)
    return SupportFabric(
        name="out-of-band",
        switch=switch,
        port_gbit_per_s=1,
        uplink_gbit_per_s=switch.uplink_gbit_per_s or 1,
        ports_per_node=1,
        ports_per_storage_block=1,
        ports_per_mgmt_server=1,
        num_endpoint_ports=ports,
        num_leaves=leaves,
        num_spines=0,
        num_uplinks=leaves * max(1, switch.uplink_ports // 2),
    )


def has_storage_fabric(spec: ClusterSpec, compute: ComputeDesign, storage: StorageDesign) -> bool:
    """A separate storage fabric, as in the SuperPOD H100/B200, for a parallel file system
    shared by several nodes of the separate design; a single NFS server or a one-node cluster
    uses the in-band network, a converged node the one fabric it has."""
    return (
        compute.node.storage_inband == "separate"
        and spec.network.storage_fabric
        and compute.node.num_storage_ports > 0
        and storage.block.parallel
        and compute.num_nodes > 1
    )


def _data_fabrics(
    spec: ClusterSpec, compute: ComputeDesign, storage: StorageDesign, catalog: Catalog
) -> list[_Ports]:
    """The storage and in-band fabrics of the node's reference design, unsized."""
    node, block = compute.node, storage.block
    match node.storage_inband:
        case "converged":
            return [
                _Ports(
                    name="storage-inband",
                    switch=default_switch(catalog, "storage-inband"),
                    speed=node.storage_port_gbit_per_s,
                    oversubscription=node.storage_leaf_oversubscription,
                    per_node=node.num_storage_ports,
                    per_storage_block=block.num_ports,
                    per_mgmt_server=MGMT_SERVER_INBAND_PORTS,
                )
            ]
        case "separate":
            separate = has_storage_fabric(spec, compute, storage)
            inband_switch = default_switch(catalog, "in-band")
            inband = _Ports(
                name="in-band",
                switch=inband_switch,
                speed=_uplink_speed(inband_switch, catalog),  # SN4600C: 100 GbE throughout
                per_node=node.num_inband_ports,
                per_storage_block=0 if separate else block.num_ports,
                per_mgmt_server=MGMT_SERVER_INBAND_PORTS,
            )
            if not separate:
                return [inband]
            role: SwitchRole = (
                "compute-infiniband" if spec.network.fabric == "infiniband" else "compute-roce"
            )
            store = _Ports(
                name="storage",
                switch=default_switch(catalog, role),
                speed=node.storage_port_gbit_per_s,
                per_node=node.num_storage_ports,
                per_storage_block=block.num_ports,
                per_mgmt_server=0,
            )
            return [store, inband]
        case _:
            assert_never(node.storage_inband)


def design_support_fabrics(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    storage: StorageDesign,
    catalog: Catalog,
    num_pdus: int,
    num_mgmt_servers: int,
) -> list[SupportFabric]:
    """The data fabrics of the node's reference design, then out-of-band.

    Out-of-band ports: every node BMC, every compute switch, storage server and management
    server, and every metered PDU (``num_pdus``, one per feed circuit); its switches' up-links
    plug into the fabric that carries in-band traffic.
    """
    plans = _data_fabrics(spec, compute, storage, catalog)
    data = [_two_tier(p, p.endpoints(compute, storage, num_mgmt_servers), catalog) for p in plans]
    # Support switches have a management port too; counted before the OOB up-links.
    oob_ports = (
        compute.num_nodes
        + fabric.num_switches
        + sum(f.num_switches for f in data)
        + storage.num_blocks
        + num_mgmt_servers
        + num_pdus
    )
    oob = _oob(default_switch(catalog, "out-of-band"), oob_ports)
    data = [
        _two_tier(p, f.num_endpoint_ports + oob.num_uplinks, catalog) if f.carries_inband else f
        for p, f in zip(plans, data, strict=True)
    ]
    return [*data, oob]
