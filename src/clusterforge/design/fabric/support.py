"""The support fabrics of a DGX SuperPOD-style cluster: storage, in-band and out-of-band.

NVIDIA's DGX SuperPOD reference architecture ("Network fabrics") runs four fabrics: compute,
storage (its own leaf/spine, here of the compute fabric's default switch), in-band management
(SN4600C) and out-of-band management (SN2201, 1 GbE).  Each support fabric here is two tiers
of one switch model, non-blocking: leaves give half their ports to endpoints once there are
spines.  The switch for each role is a catalog fact (``Switch.default_roles``).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from clusterforge.catalog import Catalog, Switch
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.switches import SwitchRole, default_switch
from clusterforge.design.storage import StorageDesign
from clusterforge.spec import ClusterSpec

__all__ = ["SupportFabric", "design_support_fabrics", "has_storage_fabric"]


class SupportFabric(BaseModel):
    """A storage, in-band or out-of-band fabric: two tiers of one switch model."""

    model_config = ConfigDict(frozen=True)
    name: str
    switch: Switch
    port_gbit_per_s: float
    num_endpoint_ports: int
    num_leaves: int
    num_spines: int
    num_uplinks: int

    @property
    def num_switches(self) -> int:
        return self.num_leaves + self.num_spines

    @property
    def ports_per_leaf(self) -> int:
        """Endpoint ports each leaf serves (half its radix once there are spines)."""
        radix = self.switch.radix_at(self.port_gbit_per_s) or max(
            m.num_ports for m in self.switch.port_modes
        )
        return radix // 2 if self.num_spines else radix


def _two_tier(name: str, switch: Switch, speed: float, ports: int) -> SupportFabric:
    """A non-blocking two-tier fabric of ``switch`` for ``ports`` endpoints at ``speed``."""
    radix = switch.radix_at(speed)
    if radix is None:
        radix = max(m.num_ports for m in switch.port_modes)
    if ports <= radix:
        return SupportFabric(
            name=name,
            switch=switch,
            port_gbit_per_s=speed,
            num_endpoint_ports=ports,
            num_leaves=1 if ports else 0,
            num_spines=0,
            num_uplinks=0,
        )
    half = radix // 2
    leaves = math.ceil(ports / half)
    spines = max(1, math.ceil(leaves * half / radix))
    return SupportFabric(
        name=name,
        switch=switch,
        port_gbit_per_s=speed,
        num_endpoint_ports=ports,
        num_leaves=leaves,
        num_spines=spines,
        num_uplinks=leaves * half,
    )


def _oob(switch: Switch, ports: int) -> SupportFabric:
    """Out-of-band: 1 GbE access switches, each with its 100 GbE uplinks to the in-band core."""
    radix = switch.radix_at(1) or 48
    leaves = math.ceil(ports / radix)
    return SupportFabric(
        name="out-of-band",
        switch=switch,
        port_gbit_per_s=1,
        num_endpoint_ports=ports,
        num_leaves=leaves,
        num_spines=0,
        num_uplinks=leaves * max(1, switch.uplink_ports // 2),
    )


def has_storage_fabric(spec: ClusterSpec, compute: ComputeDesign, storage: StorageDesign) -> bool:
    """A separate storage fabric, as in the SuperPOD, for a parallel file system shared by
    several nodes; a single NFS server or a one-node cluster uses the in-band network."""
    return (
        spec.network.storage_fabric
        and compute.node.num_storage_ports > 0
        and storage.block.parallel
        and compute.num_nodes > 1
    )


def design_support_fabrics(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    storage: StorageDesign,
    catalog: Catalog,
    num_pdus: int,
    num_mgmt_servers: int,
) -> list[SupportFabric]:
    """Storage, in-band and out-of-band fabrics (DGX SuperPOD RA's four-fabric layout).

    Out-of-band ports: every node BMC, every compute switch, storage server and management
    server, and every metered PDU (``num_pdus``, one per feed circuit).
    """
    node = compute.node
    fabrics: list[SupportFabric] = []
    if has_storage_fabric(spec, compute, storage):
        role: SwitchRole = (
            "compute-infiniband" if spec.network.fabric == "infiniband" else "compute-roce"
        )
        switch = default_switch(catalog, role)
        speed = node.storage_port_gbit_per_s
        ports = (
            compute.num_nodes * node.num_storage_ports
            + storage.num_blocks * storage.block.num_ports
        )
        fabrics.append(_two_tier("storage", switch, speed, ports))
    inband = default_switch(catalog, "in-band")
    inband_ports = compute.num_nodes * node.num_inband_ports + num_mgmt_servers * 2
    if not has_storage_fabric(spec, compute, storage):
        inband_ports += storage.num_blocks * storage.block.num_ports
    # Support switches have a management port too; in-band is counted before its OOB uplinks.
    support_switches = sum(f.num_switches for f in fabrics)
    support_switches += _two_tier("in-band", inband, 100, inband_ports).num_switches
    oob_ports = (
        compute.num_nodes
        + fabric.num_switches
        + support_switches
        + storage.num_blocks
        + num_mgmt_servers
        + num_pdus
    )
    oob = _oob(default_switch(catalog, "out-of-band"), oob_ports)
    inband_ports += oob.num_uplinks
    fabrics.append(_two_tier("in-band", inband, 100, inband_ports))
    fabrics.append(oob)
    return fabrics
