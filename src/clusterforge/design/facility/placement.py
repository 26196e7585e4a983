"""Placement: devices into racks in floor order, zone by zone, from a :class:`FloorPlan`.

A zone's network rack stands in the middle of its GPU racks (middle-of-row, ANSI/TIA-942-B
§6); every switch goes to the rack its floor plan names, and the rack index of every cabled
device is recorded for the cabling stage.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clusterforge.catalog import Catalog
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.floorplan import CORE, FloorPlan
from clusterforge.design.facility.racks import (
    CDU_U,
    PATCH_PANEL_U,
    Density,
    Layout,
    PackedRack,
    RackDevice,
    RackRole,
    device,
    finish_racks,
    power_entry,
    rack_circuit,
)
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = ["DeviceItem", "Packer", "Placer", "node_devices", "support_switch_name"]

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


def node_devices(
    spec: ClusterSpec,
    compute: ComputeDesign,
    density: Density,
    nodes: Sequence[int],
    catalog: Catalog,
) -> list[RackDevice]:
    """A GPU rack's devices from the bottom: its CDU (liquid nodes), then its nodes; a
    rack-scale system (:func:`_rack_scale_stack`) stands its trays between power shelves."""
    node = compute.node
    devices: list[RackDevice] = []
    u = 1
    if node.cooling == "liquid":
        cdu = catalog.facility["rack-cdu"]
        devices.append(device("cdu", "cdu", cdu.id, "cooling", 1, CDU_U, 0.0, cdu.weight_kg))
        u += CDU_U
    if node.rack_overhead_kw:
        return devices + _rack_scale_stack(spec, compute, density, nodes, catalog, u)
    for i in nodes:
        devices.append(_node_device(compute, density, i, u))
        u += node.u_height
    return devices


def _node_device(compute: ComputeDesign, density: Density, i: int, u: int) -> RackDevice:
    node = compute.node
    return device(compute.node_names[i], "node", node.id, "compute", u, node.u_height,
                  density.node_max_kw, node.weight_kg)  # fmt: skip


def _rack_scale_stack(
    spec: ClusterSpec,
    compute: ComputeDesign,
    density: Density,
    nodes: Sequence[int],
    catalog: Catalog,
    u: int,
) -> list[RackDevice]:
    """A rack-scale system from U ``u`` up, as its vendor builds it (GB200 NVL72, NVIDIA DGX
    GB200 User Guide, "Hardware", front view): half the power shelves, the lower compute
    trays, the 1U NVLink switch trays (``nvlink-switch-1`` ...), the upper
    ``rack_nodes_above_switches`` compute trays, the other power shelves.  The switch trays
    carry the system's fixed power and mass (``rack_overhead_kw``, ``_kg``); the rest of
    ``rack_overhead_u`` (management switches, cable management) holds no modelled device."""
    node = compute.node
    shelves = _power_shelves(spec, compute, density, len(nodes), catalog)
    num_trays = node.rack_switch_trays
    if sum(d.u_height for d in shelves) + num_trays > node.rack_overhead_u:
        raise CapacityError(
            f"catalog: {node.id}.rack_overhead_u = {node.rack_overhead_u} cannot hold its "
            f"{len(shelves)} power shelves and {num_trays} switch trays; raise it"
        )
    below = max(0, node.rack_scale_nodes - node.rack_nodes_above_switches)
    lower, upper = list(nodes[:below]), list(nodes[below:])
    half = (len(shelves) + 1) // 2
    stack: list[RackDevice] = []
    for shelf in shelves[:half]:
        stack.append(shelf.model_copy(update={"u_position": u}))
        u += shelf.u_height
    for i in lower:
        stack.append(_node_device(compute, density, i, u))
        u += node.u_height
    u += (below - len(lower)) * node.u_height  # an empty slot stays where its tray would be
    for t in range(num_trays):
        stack.append(device(f"nvlink-switch-{t + 1}", "switch", node.id, "nvlink", u, 1,
                            node.rack_overhead_kw / max(num_trays, 1),
                            node.rack_overhead_kg / max(num_trays, 1)))  # fmt: skip
        u += 1
    for i in upper:
        stack.append(_node_device(compute, density, i, u))
        u += node.u_height
    for shelf in shelves[half:]:
        stack.append(shelf.model_copy(update={"u_position": u}))
        u += shelf.u_height
    return stack


def _power_shelves(
    spec: ClusterSpec,
    compute: ComputeDesign,
    density: Density,
    num_nodes: int,
    catalog: Catalog,
) -> list[RackDevice]:
    """The racked rack-end devices of a GPU rack's power path (power shelves ``shelf-a1``,
    ``shelf-b1``, ...: one per circuit of each feed; the caller sets their U); none for
    zero-U PDUs."""
    load_kw = num_nodes * density.node_max_kw + compute.node.rack_overhead_kw
    entry = power_entry("gpu", compute.node)
    circuit = rack_circuit(catalog, spec.facility, entry, load_kw)
    end = catalog.facility[catalog.power_paths[circuit.power_path].circuit_device]
    if not end.u_height:
        return []
    ends = [
        (side, i) for side in "ab"[: circuit.num_feeds] for i in range(circuit.circuits_per_feed)
    ]
    return [
        device(
            f"shelf-{side}{i + 1}",
            "power-shelf",
            end.id,
            "power",
            1,
            end.u_height,
            0.0,
            end.weight_kg,
        )
        for side, i in ends
    ]


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
