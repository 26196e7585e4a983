"""Racks as built: the devices of each rack at their U, its feed and its cooling.

The models here are what the design carries (``Design.racks``); :func:`finish_racks` turns the
packer's device lists into racks with their place on the floor, their circuits (A+B feeds,
:mod:`clusterforge.design.facility.power`) and their cooling method
(:mod:`clusterforge.design.facility.cooling`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.design.compute import ComputeDesign
from clusterforge.design.facility.cooling import CoolingDesign, choose_cooling, cool_rack
from clusterforge.design.facility.power import Circuit, PowerCap, plan_circuits
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = [
    "CDU_U",
    "PATCH_PANEL_U",
    "Density",
    "DeviceKind",
    "Layout",
    "Rack",
    "RackDevice",
    "RackRole",
    "device",
    "finish_racks",
]

PATCH_PANEL_U = 1
CDU_U = 4  # in-rack coolant distribution unit at the rack bottom [U]

DeviceKind = Literal["node", "switch", "storage", "server", "cdu", "patch-panel", "pdu"]
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


def finish_racks(spec: ClusterSpec, packed: list[PackedRack], compute: ComputeDesign) -> list[Rack]:
    """Racks with their floor position, circuits, cooling and zero-U PDUs (PDUs, patch panels
    and circuits of equal racks are shared: they are frozen)."""
    f = spec.facility
    racks: list[Rack] = []
    circuits: dict[float, Circuit] = {}  # racks of one kind share a load: plan each load once
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
        circuit = circuits.get(kw) or circuits.setdefault(kw, plan_circuits(kw, f))
        pdus = _pdus(circuit.num_feeds, circuit.circuits_per_feed)
        patch = _patch_panel(f.rack_u)
        cooling = cooled.get((kw, method)) or cooled.setdefault((kw, method), cool_rack(kw, method))
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
                cooling=cooling,
                nvlink_domain=nvlink_domain,
            )
        )
    return racks


@cache
def _pdus(num_feeds: int, per_feed: int) -> list[RackDevice]:
    """Zero-U metered PDUs, one per whip (frozen devices: racks share the instances)."""
    return [
        RackDevice(
            name=f"pdu-{feed}{i + 1}",
            kind="pdu",
            model="pdu-3ph",
            role="power",
            u_position=0,
            u_height=0,
            max_kw=0.0,
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
    )
