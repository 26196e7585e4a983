"""Placement: devices into racks in floor order, zone by zone, from a :class:`FloorPlan`.

A zone's network rack stands in the middle of its GPU racks (middle-of-row, ANSI/TIA-942-B
§6), each GPU rack stacked by :mod:`clusterforge.design.facility.gpu_rack`; every switch goes
to the rack its floor plan names, and the rack index of every cabled device is recorded for
the cabling stage.
"""

from __future__ import annotations

import numpy as np

from clusterforge.catalog import Catalog
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.floorplan import CORE, FloorPlan
from clusterforge.design.facility.gpu_rack import node_devices
from clusterforge.design.facility.racks import (
    PATCH_PANEL_U,
    Density,
    Layout,
    PackedRack,
    RackDevice,
    RackRole,
    device,
    finish_racks,
)
from clusterforge.design.storage import StorageDesign
from clusterforge.spec import ClusterSpec

__all__ = ["DeviceItem", "Packer", "Placer", "support_switch_name"]

DeviceItem = tuple[str, str, str, str, int, float, float]  # name, kind, model, role, U, kW, kg


class Packer:
    """Fills racks in floor order; a new rack starts when U or power would overflow."""

    def __init__(self, spec: ClusterSpec, network_limit_kw: float) -> None:
        self.spec = spec
        self.limit_kw = network_limit_kw
        self.racks: list[PackedRack] = []
        self.open: int | None = None

    def gpu_rack(self, devices: list[RackDevice], nvlink_domain: int | None) -> int:
        self.racks.append(("gpu", devices, nvlink_domain))
        return len(self.racks) - 1

    def share(self, rack: int) -> None:
        """Let the next items fill GPU rack ``rack`` first, up to the facility's rack power:
        a one-rack cluster keeps its switches, storage and head node beside the node."""
        self.open = rack

    def pack(self, role: RackRole, items: list[DeviceItem]) -> list[int]:
        """Place (name, kind, model, role, u, kw, kg) items; returns the rack index of each."""
        where: list[int] = []
        usable = self.spec.facility.rack_u - PATCH_PANEL_U
        current, index, u, kw, limit = self._start()
        for name, kind, model, dev_role, height, dev_kw, dev_kg in items:
            if current and (u + height > usable or kw + dev_kw > limit):
                self._close(role, current, index)
                current, index, u, kw, limit = [], len(self.racks), 0.0, 0.0, self.limit_kw
            current.append(device(name, kind, model, dev_role, int(u) + 1, height, dev_kw, dev_kg))
            u += height
            kw += dev_kw
            where.append(index)
        if current and index != self.open:
            self.racks.append((role, current, None))
        return where

    def _start(self) -> tuple[list[RackDevice], int, float, float, float]:
        """(devices, rack index, U used, kW, kW limit) of the rack that takes the next item."""
        if self.open is None:
            return [], len(self.racks), 0.0, 0.0, self.limit_kw
        devices = self.racks[self.open][1]
        used_u = max((d.u_position + d.u_height - 1 for d in devices), default=0)
        kw = sum(d.max_kw for d in devices)
        return devices, self.open, float(used_u), kw, self.spec.facility.max_rack_kw

    def _close(self, role: RackRole, devices: list[RackDevice], index: int) -> None:
        if index == self.open:
            self.open = None  # the shared rack is full (it is already in self.racks)
            return
        self.racks.append((role, devices, None))


Target = tuple[np.ndarray, int]  # (index array, position) that receives a device's rack


def support_switch_name(fab: SupportFabric, index: int) -> str:
    """``storage-leaf-001``, ``in-band-spine-002``: the names generators and NetBox use.
    ``index`` runs over the fabric's leaves then its spines; each tier is numbered from 1."""
    if index < fab.num_leaves:
        return f"{fab.name}-leaf-{index + 1:03d}"
    return f"{fab.name}-spine-{index - fab.num_leaves + 1:03d}"


class Placer:
    """Walks the floor plan's slots and records where every device lands."""

    def __init__(
        self,
        spec: ClusterSpec,
        compute: ComputeDesign,
        fabric: FabricDesign,
        support: list[SupportFabric],
        density: Density,
        floor: FloorPlan,
        network_limit_kw: float,
        catalog: Catalog,
    ) -> None:
        self.spec, self.compute, self.fabric, self.support = spec, compute, fabric, support
        self.density, self.floor = density, floor
        self.catalog = catalog
        self.packer = Packer(spec, network_limit_kw)
        c = fabric.connectivity
        self.node_rack = np.zeros(compute.num_nodes, dtype=np.int64)
        self.switch_rack = np.zeros(c.num_switches, dtype=np.int64)
        self.support_rack: dict[str, np.ndarray] = {
            f.name: np.zeros(f.num_switches, dtype=np.int64) for f in support
        }
        self.pool_rack = np.zeros(fabric.num_spare_pool_leaves, dtype=np.int64)
        self.core_rack = 0
        self.zone_blocks: dict[int, list[int]] = {}
        for i, z in enumerate(floor.block_zone.tolist()):
            self.zone_blocks.setdefault(z, []).append(i)

    def zone(self, z: int) -> None:
        """GPU racks of zone ``z`` with its network rack in the middle."""
        blocks = self.zone_blocks.get(z, [])
        half = (len(blocks) + 1) // 2
        for b in blocks[:half]:
            self._gpu_rack(b)
        if len(self.floor.blocks) == 1 and not self.compute.node.rack_scale_nodes:
            self.packer.share(int(self.node_rack[0]))
        self._place("network", self._zone_switches(z))
        for b in blocks[half:]:
            self._gpu_rack(b)

    def core(self, storage: StorageDesign, catalog: Catalog, num_mgmt_servers: int) -> None:
        """The core block: cores, central spines, support spines, storage, management."""
        open_rack = self.packer.open
        self.core_rack = len(self.packer.racks) if open_rack is None else open_rack
        items = self._compute_switches(self.floor.spine_zone, CORE, core=True)
        items += self._support_switches(CORE, spines=True)
        sw = self.fabric.switch
        items += [
            (
                (
                    f"spare-pool-leaf-{i + 1:02d}",
                    "switch",
                    sw.id,
                    "spare-pool",
                    sw.u_height,
                    sw.max_w / 1000,
                    sw.weight_kg,
                ),
                (self.pool_rack, i),
            )
            for i in range(self.fabric.num_spare_pool_leaves)
        ]
        block = storage.block
        items += [
            (
                (
                    f"storage-{i + 1:03d}",
                    "storage",
                    block.id,
                    "storage",
                    block.u_height,
                    block.power_kw,
                    block.weight_kg,
                ),
                None,
            )
            for i in range(storage.num_blocks)
        ]
        server = catalog.facility["mgmt-server"]
        items += [
            (
                (
                    f"mgmt-{i + 1:02d}",
                    "server",
                    server.id,
                    "management",
                    server.u_height,
                    server.power_kw,
                    server.weight_kg,
                ),
                None,
            )
            for i in range(num_mgmt_servers)
        ]
        self._place("core", items)

    def layout(self) -> Layout:
        racks = finish_racks(self.spec, self.packer.racks, self.compute, self.catalog)
        return Layout(
            racks=racks,
            density=self.density,
            node_rack=self.node_rack,
            switch_rack=self.switch_rack,
            core_rack=self.core_rack,
            support_rack=self.support_rack,
            pool_leaf_rack=self.pool_rack,
        )

    def _gpu_rack(self, block: int) -> None:
        nodes = self.floor.blocks[block]
        system = block if self.compute.node.rack_scale_nodes else None
        devices = node_devices(self.spec, self.compute, self.density, nodes, self.catalog)
        self.node_rack[list(nodes)] = self.packer.gpu_rack(devices, system)

    def _zone_switches(self, z: int) -> list[tuple[DeviceItem, Target | None]]:
        c = self.fabric.connectivity
        sw = self.fabric.switch
        leaves = np.flatnonzero(self.floor.leaf_zone == z)
        items = self._compute_switches(self.floor.spine_zone, z, core=False)
        items += [
            (
                (
                    c.switch_name(int(s)),
                    "switch",
                    sw.id,
                    "leaf",
                    sw.u_height,
                    sw.max_w / 1000,
                    sw.weight_kg,
                ),
                (self.switch_rack, int(s)),
            )
            for s in leaves
        ]
        return items + self._support_switches(z, spines=False)

    def _compute_switches(
        self, spine_zone: np.ndarray, slot: int, *, core: bool
    ) -> list[tuple[DeviceItem, Target | None]]:
        """Spines homed in ``slot`` (and, for the core block, every core switch)."""
        c = self.fabric.connectivity
        sw = self.fabric.switch
        ids = (c.num_leaves + np.flatnonzero(spine_zone == slot)).tolist()
        if core:
            ids += range(c.num_leaves + c.num_spines, c.num_switches)
        return [
            (
                (
                    c.switch_name(s),
                    "switch",
                    sw.id,
                    "spine" if s < c.num_leaves + c.num_spines else "core",
                    sw.u_height,
                    sw.max_w / 1000,
                    sw.weight_kg,
                ),
                (self.switch_rack, s),
            )
            for s in ids
        ]

    def _support_switches(
        self, slot: int, *, spines: bool
    ) -> list[tuple[DeviceItem, Target | None]]:
        items: list[tuple[DeviceItem, Target | None]] = []
        for fab in self.support:
            home = self.floor.support_leaf_zone[fab.name]
            ids = np.flatnonzero(home == slot).tolist()
            if spines:
                ids += range(fab.num_leaves, fab.num_switches)
            items += [
                (
                    (
                        support_switch_name(fab, i),
                        "switch",
                        fab.switch.id,
                        fab.name,
                        fab.switch.u_height,
                        fab.switch.max_w / 1000,
                        fab.switch.weight_kg,
                    ),
                    (self.support_rack[fab.name], i),
                )
                for i in ids
            ]
        return items

    def _place(self, role: RackRole, items: list[tuple[DeviceItem, Target | None]]) -> None:
        where = self.packer.pack(role, [item for item, _ in items])
        for (_, target), rack in zip(items, where, strict=True):
            if target is not None:
                target[0][target[1]] = rack
