"""Ports and cables of the storage, in-band and out-of-band fabrics (design.support_fabrics).

Each support fabric is two tiers of one switch model (``clusterforge.design.fabric.network``): its
endpoint ports fill the leaves in order (``half`` ports a leaf when there are spines, all on
the one leaf otherwise) and each leaf's up-links go round-robin to the spines.  The endpoints
are those the design counts, in the design's order:

* storage, in-band or the converged storage-and-in-band fabric: the ports the design gives
  each node, management server and storage block on it, then, on the fabric carrying in-band
  traffic, the up-links of the out-of-band switches;
* out-of-band: one BMC / management port per node, compute-fabric switch, storage block,
  management server and PDU (the design sizes the PDU share from a rack estimate; the real
  PDUs are cabled here while the OOB leaves have ports).

Endpoints are listed rack by rack in floor order and their lengths follow the cabling stage
(``clusterforge.design.cabling.support``): port i plugs into leaf i // ports-per-leaf, which
the floor plan stood beside those racks; the medium is chosen by speed and reach as for the
compute fabric, Cat6 for out-of-band.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from clusterforge.design import Design
from clusterforge.design.cabling.support import endpoint_runs_m, ports_of, uplink_runs_m
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.placement import support_switch_name
from clusterforge.errors import GenerateError
from clusterforge.generate.common import checked_name
from clusterforge.generate.inventory.ports import (
    ETH_TYPES,
    IB_TYPES,
    Link,
    Ports,
    fiber_media,
    media_for,
    rack_device_names,
)

__all__ = ["Endpoint", "oob_endpoints", "support_links", "support_switch_names"]


class Endpoint(NamedTuple):
    """A device port that a support fabric serves, and its cable run in metres."""

    device: str
    port: str
    run_m: float
    description: str


def support_switch_names(fab: SupportFabric) -> tuple[list[str], list[str]]:
    """Leaf and spine names as the layout racks them (``storage-leaf-001``, ...)."""
    names = [checked_name(support_switch_name(fab, i), "switch") for i in range(fab.num_switches)]
    return names[: fab.num_leaves], names[fab.num_leaves :]


_PORT_NAMES = {
    ("out-of-band", "switch"): ("mgmt0", "management port"),
    ("out-of-band", "pdu"): ("mgmt0", "PDU metering"),
    ("out-of-band", "power-shelf"): ("mgmt0", "power shelf controller"),
    ("storage", "node"): ("storage{k}", "storage port"),
    ("storage", "storage"): ("p{n}", "storage port"),
    ("in-band", "node"): ("inband{k}", "in-band port"),
    ("in-band", "server"): ("eth{k}", "in-band port"),
    ("in-band", "storage"): ("p{n}", "storage port"),
    ("in-band", "switch"): ("up{n}", "out-of-band up-link"),
    ("storage-inband", "node"): ("bf{k}", "storage and in-band port"),
    ("storage-inband", "server"): ("eth{k}", "in-band port"),
    ("storage-inband", "storage"): ("p{n}", "storage port"),
    ("storage-inband", "switch"): ("up{n}", "out-of-band up-link"),
}


def _port(fab: str, kind: str, k: int) -> tuple[str, str]:
    """Port name and description of a device's k-th port on support fabric ``fab``."""
    name, what = _PORT_NAMES.get((fab, kind), ("bmc", "BMC"))
    return name.format(k=k, n=k + 1), what


def floor_endpoints(design: Design, fab: SupportFabric) -> list[Endpoint]:
    """Every port ``fab`` serves, rack by rack in floor order, with its run to the leaf the
    design plugs it into (:func:`clusterforge.design.cabling.support.endpoint_runs_m`)."""
    names = rack_device_names(design)
    found = [
        (r, rack.name, d, k)
        for r, rack in enumerate(design.racks)
        for d in rack.devices
        for k in range(ports_of(d, fab, design.compute, design.storage, design.support_fabrics))
    ]
    racks = np.array([r for r, *_ in found], dtype=np.int64)
    _, runs = endpoint_runs_m(design.layout, fab, racks)
    ends = []
    for (_, rack, d, k), run in zip(found, runs.tolist(), strict=True):
        port, what = _port(fab.name, d.kind, k)
        ends.append(Endpoint(names[(rack, d.name)], port, run, what))
    return ends


def oob_endpoints(design: Design) -> list[Endpoint]:
    """Every device that reports over out-of-band, in floor order."""
    oob = next((f for f in design.support_fabrics if f.name == "out-of-band"), None)
    return floor_endpoints(design, oob) if oob is not None else []


def _interface_type(fab: SupportFabric, speed: float | None = None) -> str:
    table = IB_TYPES if fab.switch.fabric == "infiniband" else ETH_TYPES
    return table.get(int(speed or fab.port_gbit_per_s), "other")


def _ports_per_leaf(fab: SupportFabric, num_endpoints: int) -> int:
    if fab.name == "out-of-band":
        return fab.switch.radix_at(1) or num_endpoints
    return fab.ports_per_leaf if fab.num_spines else num_endpoints


def _endpoint_links(
    design: Design, fab: SupportFabric, ends: list[Endpoint], ports: Ports
) -> Iterator[Link]:
    leaves, _ = support_switch_names(fab)
    oob = fab.name == "out-of-band"
    media = (design.catalog.media["cat6"],) if oob else fiber_media(design, fab.port_gbit_per_s)
    cables, lengths = media_for(np.array([e.run_m for e in ends]), media)
    per_leaf = max(1, _ports_per_leaf(fab, len(ends)))
    kind = _interface_type(fab)
    link_class = "device-oob" if oob else "endpoint-leaf"
    for i, (e, cable, length) in enumerate(zip(ends, cables, lengths, strict=True)):
        if i // per_leaf >= len(leaves):
            return  # OOB leaves full: the design sizes their PDU share from a rack estimate
        leaf = leaves[i // per_leaf]
        yield Link(
            e.device, e.port, leaf, ports.take(leaf), cable, length, kind,
            fab.name, link_class, e.description,
        )  # fmt: skip


def _uplinks(design: Design, fab: SupportFabric, ports: Ports) -> Iterator[Link]:
    """Each leaf's up-links, round-robin over the spines, at the design's run lengths."""
    if not fab.num_spines:
        return
    names = [*(n for tier in support_switch_names(fab) for n in tier)]
    leaf, spine, runs = uplink_runs_m(design.layout, fab)
    cables, lengths = media_for(runs, fiber_media(design, fab.uplink_gbit_per_s))
    kind = _interface_type(fab, fab.uplink_gbit_per_s)
    for a, b, cable, length in zip(leaf.tolist(), spine.tolist(), cables, lengths, strict=True):
        yield Link(
            names[a], ports.take(names[a]), names[b], ports.take(names[b]), cable, length,
            kind, fab.name, "leaf-spine", f"to {names[b]}",
        )  # fmt: skip


def support_links(design: Design) -> Iterator[Link]:
    """Every cable of the storage, in-band and out-of-band fabrics, fabric by fabric."""
    ports = Ports()
    for fab in design.support_fabrics:
        ends = floor_endpoints(design, fab)
        if fab.name != "out-of-band" and len(ends) != fab.num_endpoint_ports:
            raise GenerateError(  # a bug: the design and this module disagree on who plugs in
                f"{fab.name}: {len(ends)} endpoints found, the design counts "
                f"{fab.num_endpoint_ports}"
            )
        yield from _endpoint_links(design, fab, ends, ports)
        yield from _uplinks(design, fab, ports)
