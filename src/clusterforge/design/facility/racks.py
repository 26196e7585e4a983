"""Racks as built: the devices of each rack at their U, its feed, its cooling and its mass.

The models here are what the design carries (``Design.racks``); :func:`finish_racks` turns the
packer's device lists into racks with their place on the floor, their circuits (A+B feeds on
the rack's power path, :mod:`clusterforge.design.facility.power`), their cooling method
(:mod:`clusterforge.design.facility.cooling`) and their load on the floor.

Floor load: the rack's mass (frame + every device + a rear door) over its footprint,
``q = m·g / (width·depth)`` in kN/m² (= kPa), the uniformly distributed load a floor rating
states (ANSI/TIA-942-B: 7.2 kPa minimum, 12 kPa for Rated-3/4), and the point load on each
of its four feet, ``m·g / 4`` (raised-floor panels are rated for a concentrated load per
foot, CISCA "Recommended Test Procedures for Access Floors").  Over the footprint alone is
the conservative reading: a structural engineer may spread the load over the aisle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Node, PowerEntry
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.facility.cooling import CoolingDesign, choose_cooling, cool_rack
from clusterforge.design.facility.power import Circuit, PowerCap, plan_circuits
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec, FacilitySpec

__all__ = [
    "CDU_U",
    "PATCH_PANEL_KG",
    "PATCH_PANEL_U",
    "Density",
    "DeviceKind",
    "FloorLoad",
    "Layout",
    "Rack",
    "RackDevice",
    "RackRole",
    "device",
    "finish_racks",
    "floor_load",
    "power_entry",
    "rack_circuit",
]

PATCH_PANEL_U = 1
PATCH_PANEL_KG = 3.0  # a 1U fibre patch panel, loaded [U]
CDU_U = 4  # in-rack coolant distribution unit at the rack bottom [U]
STANDARD_GRAVITY_M_PER_S2 = 9.80665  # g_n (3rd CGPM, 1901; ISO 80000-3)
RACK_FEET = 4  # levelling feet or casters a rack stands on

DeviceKind = Literal[
    "node", "switch", "storage", "server", "cdu", "patch-panel", "pdu", "power-shelf"
]
RackRole = Literal["gpu", "network", "core"]
PackedRack = tuple[RackRole, list["RackDevice"], int | None]


class RackDevice(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    kind: DeviceKind
    model: str
    role: str = Field(description="compute | leaf | spine | core | storage | in-band | ...")
    u_position: int = Field(description="Lowest U occupied (0 = zero-U, e.g. PDUs)")
    u_height: int
    max_kw: float
    weight_kg: float = Field(description="Mass of the device, kg (catalog)")


class FloorLoad(BaseModel):
    """What a rack puts on the floor, against the facility's floor rating."""

    model_config = ConfigDict(frozen=True)
    mass_kg: float = Field(description="Rack frame + every device + a rear door, kg")
    footprint_m2: float = Field(description="facility.rack_width_m x facility.rack_depth_m")
    load_kn_per_m2: float = Field(description="m·g / footprint, kN/m2 (= kPa)")
    point_load_kn: float = Field(description="m·g / 4: the load on each of the rack's feet, kN")
    rating_kn_per_m2: float = Field(description="facility.floor_rating_kn_per_m2")


class Rack(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    role: RackRole = Field(description="gpu: compute; network: a zone's or pod's switches; core")
    row: int
    position: int
    x_m: float
    y_m: float
    max_kw: float
    u_used: int
    devices: list[RackDevice]
    circuit: Circuit
    cooling: CoolingDesign
    floor: FloorLoad
    nvlink_domain: int | None = Field(
        None,
        description="Index of the rack-scale system (one NVLink domain) this rack is; None "
        "when the NVLink domain is one node",
    )


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
    """Racks in floor order plus index arrays that say where every cabled device stands."""

    racks: list[Rack]
    density: Density
    node_rack: np.ndarray  # rack index of each node
    switch_rack: np.ndarray  # rack index of each compute-fabric switch (global switch id)
    core_rack: int  # index of the first core-block rack
    support_rack: dict[str, np.ndarray] = field(default_factory=dict)  # per support switch
    pool_leaf_rack: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # What of the support fabrics the placement read (see layout.placement_key)
    placement_key: tuple[tuple[str, str, int, int, bytes], ...] = ()


def power_entry(role: RackRole, node: Node) -> PowerEntry:
    """What a rack's devices take power from: the power shelves of a rack-scale system whose
    trays have no PSU (GB200 NVL72), else their own PSUs."""
    return "power-shelf" if role == "gpu" and node.num_psus == 0 else "psu"


def rack_circuit(
    catalog: Catalog, facility: FacilitySpec, entry: PowerEntry, load_kw: float
) -> Circuit:
    """The circuits of a rack on the first catalog power path for its power entry that carries
    its load (the catalog lists the paths in order of preference)."""
    paths = [p for p in catalog.power_paths if p.feeds == entry]
    if not paths:
        raise CapacityError(f"catalog: no [[power_path]] feeds {entry!r} racks; add one")
    for path in paths[:-1]:
        try:
            return plan_circuits(load_kw, facility, path)
        except CapacityError:
            continue
    return plan_circuits(load_kw, facility, paths[-1])


def floor_load(mass_kg: float, facility: FacilitySpec) -> FloorLoad:
    """Distributed load over the rack footprint and point load per foot (module docstring)."""
    footprint = facility.rack_width_m * facility.rack_depth_m
    weight_kn = mass_kg * STANDARD_GRAVITY_M_PER_S2 / 1000
    return FloorLoad(
        mass_kg=mass_kg,
        footprint_m2=footprint,
        load_kn_per_m2=weight_kn / footprint,
        point_load_kn=weight_kn / RACK_FEET,
        rating_kn_per_m2=facility.floor_rating_kn_per_m2,
    )


def finish_racks(
    spec: ClusterSpec, packed: list[PackedRack], compute: ComputeDesign, catalog: Catalog
) -> list[Rack]:
    """Racks with their floor position, circuits, cooling, zero-U PDUs and floor load (PDUs,
    patch panels and circuits of equal racks are shared: they are frozen)."""
    f = spec.facility
    racks: list[Rack] = []
    circuits: dict[tuple[float, str], Circuit] = {}  # plan each (load, entry) once
    cooled: dict[tuple[float, str], CoolingDesign] = {}  # and its cooling (frozen, shared)
    for index, (role, devices, nvlink_domain) in enumerate(packed):
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
        entry = power_entry(role, compute.node)
        key = (kw, entry)
        circuit = circuits.get(key) or circuits.setdefault(key, rack_circuit(catalog, f, entry, kw))
        path = catalog.power_paths[circuit.power_path]
        end = catalog.facility[path.circuit_device]
        # a zero-U rack end (PDU) hangs in the rear channels here; a racked one (power shelf)
        # was placed with the rack-scale system's devices
        pdus = (
            []
            if end.u_height
            else _pdus(circuit.num_feeds, circuit.circuits_per_feed, end.id, end.weight_kg)
        )
        patch = _patch_panel(f.rack_u)
        cooling = cooled.get((kw, method)) or cooled.setdefault((kw, method), cool_rack(kw, method))
        all_devices = [*devices, patch, *pdus]
        mass = catalog.facility["rack-48u"].weight_kg + sum(d.weight_kg for d in all_devices)
        if method == "rear-door":
            mass += catalog.facility["rdhx"].weight_kg
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
                devices=all_devices,
                circuit=circuit,
                cooling=cooling,
                floor=floor_load(mass, f),
                nvlink_domain=nvlink_domain,
            )
        )
    return racks


@cache
def _pdus(num_feeds: int, per_feed: int, model: str, weight_kg: float) -> list[RackDevice]:
    """Zero-U metered PDUs, one per circuit (frozen devices: racks share the instances)."""
    return [
        RackDevice(
            name=f"pdu-{feed}{i + 1}",
            kind="pdu",
            model=model,
            role="power",
            u_position=0,
            u_height=0,
            max_kw=0.0,
            weight_kg=weight_kg,
        )
        for feed in "ab"[:num_feeds]
        for i in range(per_feed)
    ]


@cache
def _patch_panel(rack_u: int) -> RackDevice:
    return RackDevice(
        name="patch-panel",
        kind="patch-panel",
        model="patch-panel",
        role="cabling",
        u_position=rack_u,
        u_height=PATCH_PANEL_U,
        max_kw=0.0,
        weight_kg=PATCH_PANEL_KG,
    )


@lru_cache(maxsize=1 << 18)
def device(
    name: str,
    kind: DeviceKind,
    model: str,
    role: str,
    u_position: int,
    u_height: int,
    max_kw: float,
    weight_kg: float,
) -> RackDevice:
    """A racked device.  Devices are frozen, and the planner lays the hall out more than once
    (until the out-of-band port count settles): equal devices are made once and shared."""
    return RackDevice(
        name=name,
        kind=kind,
        model=model,
        role=role,
        u_position=u_position,
        u_height=u_height,
        max_kw=max_kw,
        weight_kg=weight_kg,
    )
