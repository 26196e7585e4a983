"""Cabling of the support fabrics: storage, in-band and out-of-band management.

Each fabric's endpoint ports are counted rack by rack in floor order from what the racks
hold, and handed to the leaves in that order, ``ports_per_leaf`` at a time, which is how the
floor plan placed the leaves (:mod:`clusterforge.design.facility.floorplan`): a leaf serves the
racks around it.  Endpoint ports per device, after NVIDIA's DGX SuperPOD reference architecture:

* storage, in-band or the converged storage-and-in-band fabric: the ports the design gives
  each node, storage server and management server on it (``SupportFabric.ports_per_*``),
  and, on the fabric that carries in-band traffic, the out-of-band switches' up-links;
* out-of-band (1 GbE, Cat6): one BMC/management port per node, switch, storage and
  management server, and one per metered PDU.

Leaf up-links run from each leaf's rack to the spines in the core block, at the fabric's
up-link speed.  A switch cage that breaks out into several endpoint ports (an SN5600's 800G
cage into four 200G ports) holds one module for those ports.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clusterforge.catalog import Cage, Catalog
from clusterforge.design.cabling.media import (
    LinkClass,
    LinkEnd,
    fiber_media,
    link_class,
    run_lengths_m,
)
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.racks import Layout, Rack, RackDevice
from clusterforge.design.storage import StorageDesign

__all__ = ["endpoint_ports", "endpoint_runs_m", "ports_of", "support_cabling", "uplink_runs_m"]

# Storage and in-band ports sit on dual-port ConnectX-7 adapters or BlueField-3 DPUs, whose
# cages are QSFP112 (DGX H100/H200 user guide, network ports; BlueField-3 accepts QSFP112
# only, NVIDIA LinkX MMA1Z00-NS400 specification); out-of-band ports are RJ45 BMC jacks.
ENDPOINT_CAGE: Cage = "qsfp"
OOB_ENDPOINT_CAGE: Cage = "rj45"


def ports_of(
    device: RackDevice,
    fab: SupportFabric,
    compute: ComputeDesign,
    storage: StorageDesign,
    support: Sequence[SupportFabric],
) -> int:
    """Ports ``device`` has on support fabric ``fab`` (the design says how many per kind)."""
    match fab.name, device.kind:
        case "out-of-band", "pdu" | "power-shelf":
            return 1
        case "out-of-band", "switch":
            return 0 if device.role == "nvlink" else 1
        case _, "node":
            return fab.ports_per_node
        case _, "storage":
            return fab.ports_per_storage_block
        case _, "server":
            return fab.ports_per_mgmt_server
        case _, "switch" if device.role == "out-of-band" and fab.carries_inband:
            return _oob_uplinks_per_leaf(support)
    return 0


def _oob_uplinks_per_leaf(support: Sequence[SupportFabric]) -> int:
    oob = next((f for f in support if f.name == "out-of-band"), None)
    return oob.num_uplinks // oob.num_leaves if oob and oob.num_leaves else 0


def endpoint_ports(
    racks: list[Rack],
    fab: SupportFabric,
    compute: ComputeDesign,
    storage: StorageDesign,
    support: Sequence[SupportFabric],
) -> np.ndarray:
    """Endpoint ports of ``fab`` in each rack, floor order (a device's ports depend on its
    kind and role only: each pair is looked up once)."""
    table: dict[tuple[str, str], int] = {}
    counts = np.zeros(len(racks), dtype=np.int64)
    for i, rack in enumerate(racks):
        for d in rack.devices:
            key = (d.kind, d.role)
            if key not in table:
                table[key] = ports_of(d, fab, compute, storage, support)
            counts[i] += table[key]
    return counts


def endpoint_runs_m(
    layout: Layout, fab: SupportFabric, rack_of_port: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(leaf, run in m) of each endpoint port, ports given in floor order by their rack:
    port i plugs into leaf i // ports_per_leaf, where the floor plan stood that leaf."""
    leaf = np.minimum(np.arange(rack_of_port.size) // fab.ports_per_leaf, fab.num_leaves - 1)
    leaf_rack = layout.support_rack[fab.name][: fab.num_leaves]
    return leaf, run_lengths_m(layout, rack_of_port, leaf_rack[leaf])


def support_cabling(
    compute: ComputeDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    layout: Layout,
    catalog: Catalog,
) -> list[LinkClass]:
    """Endpoint-leaf and leaf-spine classes of every support fabric."""
    classes = []
    for fab in support:
        ports = endpoint_ports(layout.racks, fab, compute, storage, support)
        classes.append(_endpoint_class(fab, ports, layout, catalog))
        if fab.num_spines:
            classes.append(_uplink_class(fab, layout, catalog))
    return classes


def _switch_end(fab: SupportFabric, name: str, speed: float | None = None) -> LinkEnd:
    """A switch end of ``fab``'s links at ``speed`` (default its endpoint ports' speed): as
    many links per module as one cage carries at that speed (four 200G in an 800G cage)."""
    mode = fab.switch.mode_at(fab.port_gbit_per_s if speed is None else speed)
    return LinkEnd(name, fab.switch.cage, mode.ports_per_cage if mode else 1)


def _endpoint_class(
    fab: SupportFabric, ports: np.ndarray, layout: Layout, catalog: Catalog
) -> LinkClass:
    _, lengths = endpoint_runs_m(layout, fab, np.repeat(np.arange(ports.size), ports))
    speed = fab.port_gbit_per_s
    if fab.name == "out-of-band":
        media = [catalog.media["cat6"]]
        ends = (LinkEnd("BMC / mgmt port", OOB_ENDPOINT_CAGE), _switch_end(fab, "oob switch"))
        return link_class(fab.name, "device-oob", ends, speed, lengths, media, catalog)
    media = fiber_media(catalog, speed)
    ends = (LinkEnd("node / storage port", ENDPOINT_CAGE), _switch_end(fab, f"{fab.name} leaf"))
    return link_class(fab.name, "endpoint-leaf", ends, speed, lengths, media, catalog)


def uplink_runs_m(layout: Layout, fab: SupportFabric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(leaf, spine, run in m) of each leaf up-link: a leaf's up-links are dealt round-robin
    over the spines (switch indices within ``fab``: spines follow the leaves)."""
    racks = layout.support_rack[fab.name]
    per_leaf = fab.num_uplinks // fab.num_leaves
    leaf = np.repeat(np.arange(fab.num_leaves), per_leaf)
    spine = fab.num_leaves + np.arange(leaf.size) % max(fab.num_spines, 1)
    return leaf, spine, run_lengths_m(layout, racks[leaf], racks[spine])


def _uplink_class(fab: SupportFabric, layout: Layout, catalog: Catalog) -> LinkClass:
    _, _, lengths = uplink_runs_m(layout, fab)
    speed = fab.uplink_gbit_per_s
    ends = (
        _switch_end(fab, f"{fab.name} leaf", speed),
        _switch_end(fab, f"{fab.name} spine", speed),
    )
    media = fiber_media(catalog, speed)
    return link_class(fab.name, "leaf-spine", ends, speed, lengths, media, catalog)
