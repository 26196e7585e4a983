"""Racks and elevations: which device sits in which rack at which U, and where racks stand.

Density: nodes per rack = min(⌊limit / node max kW⌋, ⌊usable U / node U⌋), sized on *max*
power, not typical (design.md §4.5), where the limit is the contracted rack power capped by the
best cooling band the facility offers.  A rack-scale system (NVL72) is one fixed rack.

Floor plan: racks stand in rows of ``racks_per_row``.  Each node group (scalable unit, ToR
group, dragonfly group) is followed by the network racks holding its leaves (end-of-group);
spines, cores, support fabrics, storage and management sit in a core block in the middle of
the hall, which halves the longest leaf-spine run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.cooling import COOLING_BAND_KW, CoolingDesign, choose_cooling, cool_rack
from clusterforge.design.network import FabricDesign, SupportFabric
from clusterforge.design.power import Circuit, PowerCap, plan_circuits, propose_power_cap
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = ["Density", "Layout", "Rack", "RackDevice", "choose_density", "lay_out"]

PATCH_PANEL_U = 1
CDU_U = 4
NETWORK_RACK_KW = 20.0  # switch racks stay air-cooled without containment (design.md §4.4)


class RackDevice(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    kind: str = Field(description="node | switch | storage | server | cdu | patch-panel | pdu")
    model: str
    role: str = Field(description="compute | leaf | spine | core | storage | in-band | ...")
    u_position: int = Field(description="Lowest U occupied (0 = zero-U, e.g. PDUs)")
    u_height: int
    max_kw: float


class Rack(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    role: str = Field(description="gpu | network | core")
    row: int
    position: int
    x_m: float
    y_m: float
    max_kw: float
    u_used: int
    devices: list[RackDevice]
    circuit: Circuit
    cooling: CoolingDesign


class Density(BaseModel):
    model_config = ConfigDict(frozen=True)
    nodes_per_rack: int
    node_max_kw: float = Field(description="Node max power used for sizing (after any cap)")
    limit_kw: float = Field(description="min(contracted rack kW, best cooling band)")
    limited_by: str
    power_cap: PowerCap | None = None
    usable_u: int


@dataclass(frozen=True)
class Layout:
    racks: list[Rack]
    density: Density
    node_rack: np.ndarray  # rack index of each node
    switch_rack: np.ndarray  # rack index of each compute-fabric switch (global switch id)
    core_rack: int  # index of the first core-block rack (support fabrics live there)


def choose_density(spec: ClusterSpec, compute: ComputeDesign) -> Density:
    """Nodes per rack under the power cap, the cooling band and the rack height."""
    f, node = spec.facility, compute.node
    liquid = node.cooling == "liquid"
    bands = [
        COOLING_BAND_KW[m]
        for m in f.cooling_available
        if not (liquid and m in ("air", "rear-door"))
    ]
    if not bands:
        raise CapacityError(
            f"facility.cooling_available: {node.id} is liquid-cooled but the facility offers only "
            f"{', '.join(f.cooling_available)}; add direct-to-chip or immersion"
        )
    limit = min(f.max_rack_kw, max(bands))
    limited_by = "facility.max_rack_kw" if f.max_rack_kw <= max(bands) else "cooling band"
    usable_u = f.rack_u - PATCH_PANEL_U - (CDU_U if liquid else 0)
    if node.rack_scale_nodes:
        return _rack_scale_density(spec, compute, limit, limited_by, usable_u)
    cap = None
    node_kw = node.max_kw
    if node_kw > limit:
        cap = propose_power_cap(node_kw, node.num_gpus, compute.gpu.tdp_w, limit, limited_by)
        if not f.allow_power_capping:
            raise CapacityError(
                f"{limited_by}: {limit:g} kW per rack is below one {node.id} node "
                f"({node_kw:g} kW max); raise it, add a cooling method, or set "
                f"facility.allow_power_capping: true to cap each GPU at "
                f"{cap.gpu_power_limit_w:.0f} W (about {1 - cap.throughput_factor:.0%} less throughput)"
            )
        node_kw = cap.node_max_kw
    by_power = math.floor(limit / node_kw + 1e-9)
    by_u = usable_u // node.u_height
    if by_u < 1:
        raise CapacityError(f"facility.rack_u: {f.rack_u} U cannot hold a {node.u_height} U node")
    if by_u < by_power:
        limited_by = "facility.rack_u"
    return Density(
        nodes_per_rack=min(by_power, by_u),
        node_max_kw=node_kw,
        limit_kw=limit,
        limited_by=limited_by,
        power_cap=cap,
        usable_u=usable_u,
    )


def _rack_scale_density(
    spec: ClusterSpec, compute: ComputeDesign, limit: float, limited_by: str, usable_u: int
) -> Density:
    node = compute.node
    rack_kw = node.rack_scale_nodes * node.max_kw + node.rack_overhead_kw
    if rack_kw > limit + 1e-9:
        raise CapacityError(
            f"{limited_by}: {limit:g} kW per rack cannot hold one {node.id} rack-scale system "
            f"({rack_kw:g} kW; it cannot be split); raise facility.max_rack_kw to at least "
            f"{math.ceil(rack_kw)} and offer direct-to-chip cooling"
        )
    return Density(
        nodes_per_rack=node.rack_scale_nodes,
        node_max_kw=node.max_kw,
        limit_kw=limit,
        limited_by="rack-scale system",
        usable_u=usable_u,
    )


class _Packer:
    """Fills racks in floor order; a new rack starts when U or power would overflow."""

    def __init__(self, spec: ClusterSpec, network_limit_kw: float) -> None:
        self.spec = spec
        self.limit_kw = network_limit_kw
        self.racks: list[tuple[str, list[RackDevice]]] = []

    def gpu_rack(self, devices: list[RackDevice]) -> int:
        self.racks.append(("gpu", devices))
        return len(self.racks) - 1

    def pack(self, role: str, items: list[tuple[str, str, str, str, int, float]]) -> list[int]:
        """Place (name, kind, model, role, u, kw) items; returns the rack index of each."""
        where: list[int] = []
        usable = self.spec.facility.rack_u - PATCH_PANEL_U
        current: list[RackDevice] = []
        u = kw = 0.0
        for name, kind, model, dev_role, height, dev_kw in items:
            if current and (u + height > usable or kw + dev_kw > self.limit_kw):
                self.racks.append((role, current))
                current, u, kw = [], 0.0, 0.0
            current.append(
                RackDevice(
                    name=name,
                    kind=kind,
                    model=model,
                    role=dev_role,
                    u_position=int(u) + 1,
                    u_height=height,
                    max_kw=dev_kw,
                )
            )
            u += height
            kw += dev_kw
            where.append(len(self.racks))
        if current:
            self.racks.append((role, current))
        return where


def _node_devices(
    spec: ClusterSpec, compute: ComputeDesign, density: Density, nodes: range
) -> list[RackDevice]:
    node = compute.node
    devices: list[RackDevice] = []
    u = 1
    if node.cooling == "liquid":
        devices.append(
            RackDevice(
                name="cdu",
                kind="cdu",
                model="rack-cdu",
                role="cooling",
                u_position=1,
                u_height=CDU_U,
                max_kw=0.0,
            )
        )
        u += CDU_U
    for i in nodes:
        devices.append(
            RackDevice(
                name=compute.node_names[i],
                kind="node",
                model=node.id,
                role="compute",
                u_position=u,
                u_height=node.u_height,
                max_kw=density.node_max_kw,
            )
        )
        u += node.u_height
    if node.rack_overhead_kw:
        devices.append(
            RackDevice(
                name="nvlink-switch-trays",
                kind="switch",
                model=node.id,
                role="nvlink",
                u_position=u,
                u_height=node.rack_overhead_u,
                max_kw=node.rack_overhead_kw,
            )
        )
    return devices


def _leaf_groups(fabric: FabricDesign) -> np.ndarray:
    """Node group that each leaf belongs to (leaves with no node go to the last group)."""
    c = fabric.connectivity
    node, _, leaf = c.node_links()
    groups = c.group_of(node)
    last = int(groups.max()) if groups.size else 0
    leaf_group = np.full(c.num_leaves, last, dtype=np.int64)
    np.minimum.at(leaf_group, leaf, groups)
    return leaf_group


def lay_out(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    catalog: Catalog,
    density: Density,
    num_mgmt_servers: int,
) -> Layout:
    """Place every device; returns racks in floor order plus index arrays for cabling."""
    network_limit = min(spec.facility.max_rack_kw, NETWORK_RACK_KW)
    packer = _Packer(spec, network_limit)
    c = fabric.connectivity
    sw = fabric.switch
    node_rack = np.zeros(compute.num_nodes, dtype=np.int64)
    switch_rack = np.zeros(c.num_switches, dtype=np.int64)
    node_groups = c.group_of(np.arange(compute.num_nodes))
    leaf_groups = _leaf_groups(fabric)
    group_ids = np.unique(node_groups)
    core_at = len(group_ids) // 2
    core_rack = 0
    per_rack = density.nodes_per_rack
    for gi, g in enumerate(group_ids):
        if gi == core_at:
            core_rack = len(packer.racks)
            _pack_core(packer, c, fabric, support, storage, catalog, num_mgmt_servers, switch_rack)
        members = np.flatnonzero(node_groups == g)
        for start in range(0, members.size, per_rack):
            chunk = members[start : start + per_rack]
            idx = packer.gpu_rack(
                _node_devices(spec, compute, density, range(chunk[0], chunk[-1] + 1))
            )
            node_rack[chunk] = idx
        leaves = np.flatnonzero(leaf_groups == g)
        items = [
            (c.switch_name(int(s)), "switch", sw.id, "leaf", sw.u_height, sw.max_w / 1000)
            for s in leaves
        ]
        switch_rack[leaves] = packer.pack("network", items)
    racks = _finish_racks(spec, packer, compute)
    return Layout(
        racks=racks,
        density=density,
        node_rack=node_rack,
        switch_rack=switch_rack,
        core_rack=core_rack,
    )


def _pack_core(
    packer: _Packer,
    c: object,
    fabric: FabricDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    catalog: Catalog,
    num_mgmt_servers: int,
    switch_rack: np.ndarray,
) -> None:
    conn = fabric.connectivity
    sw = fabric.switch
    upper = np.arange(conn.num_leaves, conn.num_switches)
    items = [
        (
            conn.switch_name(int(s)),
            "switch",
            sw.id,
            "spine" if s < conn.num_leaves + conn.num_spines else "core",
            sw.u_height,
            sw.max_w / 1000,
        )
        for s in upper
    ]
    switch_rack[upper] = packer.pack("core", items)
    extra: list[tuple[str, str, str, str, int, float]] = []
    for fab in support:
        for i in range(fab.num_switches):
            tier = "leaf" if i < fab.num_leaves else "spine"
            extra.append(
                (
                    f"{fab.name}-{tier}-{i + 1:03d}",
                    "switch",
                    fab.switch.id,
                    fab.name,
                    fab.switch.u_height,
                    fab.switch.max_w / 1000,
                )
            )
    block = storage.block
    extra += [
        (f"storage-{i + 1:03d}", "storage", block.id, "storage", block.u_height, block.power_kw)
        for i in range(storage.num_blocks)
    ]
    server = catalog.facility["mgmt-server"]
    extra += [
        (f"mgmt-{i + 1:02d}", "server", server.id, "management", server.u_height, server.power_kw)
        for i in range(num_mgmt_servers)
    ]
    packer.pack("core", extra)


def _finish_racks(spec: ClusterSpec, packer: _Packer, compute: ComputeDesign) -> list[Rack]:
    f = spec.facility
    racks: list[Rack] = []
    for index, (role, devices) in enumerate(packer.racks):
        row, pos = divmod(index, f.racks_per_row)
        name = f"r{row + 1:03d}-{pos + 1:02d}"
        kw = sum(d.max_kw for d in devices)
        liquid = role == "gpu" and compute.node.cooling == "liquid"
        method = choose_cooling(kw, list(f.cooling_available), liquid)
        if method is None:
            raise CapacityError(
                f"facility.cooling_available: rack {name} draws {kw:.1f} kW, more than "
                f"{', '.join(f.cooling_available)} can remove; add a cooling method"
            )
        circuit = plan_circuits(kw, f)
        pdus = [
            RackDevice(
                name=f"pdu-{feed}{i + 1}",
                kind="pdu",
                model="pdu-3ph",
                role="power",
                u_position=0,
                u_height=0,
                max_kw=0.0,
            )
            for feed in "ab"[: circuit.num_feeds]
            for i in range(circuit.circuits_per_feed)
        ]
        patch = RackDevice(
            name="patch-panel",
            kind="patch-panel",
            model="patch-panel",
            role="cabling",
            u_position=f.rack_u,
            u_height=PATCH_PANEL_U,
            max_kw=0.0,
        )
        racks.append(
            Rack(
                name=name,
                role=role,
                row=row + 1,
                position=pos + 1,
                x_m=pos * f.rack_width_m,
                y_m=row * f.row_pitch_m,
                max_kw=kw,
                u_used=sum(d.u_height for d in devices) + 1,
                devices=[*devices, patch, *pdus],
                circuit=circuit,
                cooling=cool_rack(kw, method),
            )
        )
    return racks
