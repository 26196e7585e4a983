"""A GPU rack's stack from the bottom: its CDU (liquid-cooled nodes), then its nodes, or,
for a rack-scale system, power shelves, compute trays and NVLink switch trays in the order
its vendor builds them.

:mod:`clusterforge.design.facility.placement` calls this for each GPU rack of the floor plan
and records where the rack's nodes landed.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterforge.catalog import Catalog
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.facility.racks import (
    CDU_U,
    Density,
    RackDevice,
    device,
    power_entry,
    rack_circuit,
)
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = ["node_devices"]


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
