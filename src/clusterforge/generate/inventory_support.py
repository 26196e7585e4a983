"""Ports and cables of the storage, in-band and out-of-band fabrics (design.support_fabrics).

Each support fabric is two tiers of one switch model (``clusterforge.design.network``): its
endpoint ports fill the leaves in order (``half`` ports a leaf when there are spines, all on
the one leaf otherwise) and each leaf's up-links go round-robin to the spines.  The endpoints
are those the design counts, in the design's order:

* storage: every node's storage ports, then every storage block's ports;
* in-band: every node's in-band ports, two per management server, the storage blocks when
  there is no storage fabric, then the up-links of the out-of-band switches;
* out-of-band: one BMC / management port per node, compute-fabric switch, storage block,
  management server and PDU (the design sizes the PDU share from a rack estimate; the real
  PDUs are cabled here while the OOB leaves have ports).

Lengths follow the cabling stage: a node port runs to the core block, everything else sits
in it (``CORE_BLOCK_RUN_M``); the medium is chosen by reach as for the compute fabric, Cat6
for out-of-band.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from clusterforge.design import Design
from clusterforge.design.cabling import CORE_BLOCK_RUN_M, run_lengths_m
from clusterforge.design.network import SupportFabric
from clusterforge.errors import GenerateError
from clusterforge.generate.common import checked_name
from clusterforge.generate.inventory_ports import (
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
    names = [
        checked_name(
            f"{fab.name}-{'leaf' if i < fab.num_leaves else 'spine'}-{i + 1:03d}", "switch"
        )
        for i in range(fab.num_switches)
    ]
    return names[: fab.num_leaves], names[fab.num_leaves :]


def _node_runs_m(design: Design) -> list[float]:
    layout = design.layout
    core = np.full(layout.node_rack.size, layout.core_rack)
    return [float(x) for x in run_lengths_m(layout, layout.node_rack, core)]


def _node_ports(design: Design, ports: list[str], what: str) -> list[Endpoint]:
    runs = _node_runs_m(design)
    return [
        Endpoint(checked_name(name, "node name"), port, runs[n], what)
        for n, name in enumerate(design.compute.node_names)
        for port in ports
    ]


def _core_ports(devices: list[str], ports: list[str], what: str) -> list[Endpoint]:
    """Ports of devices in the core block (switches, storage, management servers, PDUs)."""
    return [Endpoint(d, port, CORE_BLOCK_RUN_M, what) for d in devices for port in ports]


def _numbered(prefix: str, count: int, first: int = 0) -> list[str]:
    return [f"{prefix}{i}" for i in range(first, first + count)]


def _storage_names(design: Design) -> list[str]:
    return [f"storage-{i + 1:03d}" for i in range(design.storage.num_blocks)]


def _mgmt_names(design: Design) -> list[str]:
    return [f"mgmt-{i + 1:02d}" for i in range(design.num_mgmt_servers)]


def _fabric(design: Design, name: str) -> SupportFabric | None:
    return next((f for f in design.support_fabrics if f.name == name), None)


def _storage_block_ports(design: Design) -> list[Endpoint]:
    ports = _numbered("p", design.storage.block.num_ports, 1)
    return _core_ports(_storage_names(design), ports, "storage port")


def _storage_endpoints(design: Design) -> list[Endpoint]:
    node_ports = _numbered("storage", design.compute.node.num_storage_ports)
    return _node_ports(design, node_ports, "storage port") + _storage_block_ports(design)


def _inband_endpoints(design: Design) -> list[Endpoint]:
    node_ports = _numbered("inband", design.compute.node.num_inband_ports)
    ends = _node_ports(design, node_ports, "in-band port")
    ends += _core_ports(_mgmt_names(design), ["eth0", "eth1"], "in-band port")
    if _fabric(design, "storage") is None:
        ends += _storage_block_ports(design)
    oob = _fabric(design, "out-of-band")
    if oob is not None and oob.num_leaves:
        leaves, _ = support_switch_names(oob)
        uplinks = _numbered("up", oob.num_uplinks // oob.num_leaves, 1)
        ends += _core_ports(leaves, uplinks, "out-of-band up-link")
    return ends


def oob_endpoints(design: Design) -> list[Endpoint]:
    """Every device that reports over out-of-band, in the design's order."""
    runs = _node_runs_m(design)
    c = design.fabric.connectivity
    ends = [
        Endpoint(checked_name(n, "node name"), "bmc", runs[i], "BMC")
        for i, n in enumerate(design.compute.node_names)
    ]
    switches = [checked_name(c.switch_name(s), "switch name") for s in range(c.num_switches)]
    ends += _core_ports(switches, ["mgmt0"], "management port")
    ends += _core_ports(_storage_names(design), ["bmc"], "BMC")
    ends += _core_ports(_mgmt_names(design), ["bmc"], "BMC")
    names = rack_device_names(design)
    pdus = [names[(r.name, d.name)] for r in design.racks for d in r.devices if d.kind == "pdu"]
    return ends + _core_ports(pdus, ["mgmt0"], "PDU metering")


def _interface_type(fab: SupportFabric) -> str:
    table = IB_TYPES if fab.switch.fabric == "infiniband" else ETH_TYPES
    return table.get(int(fab.port_gbit_per_s), "other")


def _ports_per_leaf(fab: SupportFabric, num_endpoints: int) -> int:
    if fab.name == "out-of-band":
        return fab.switch.radix_at(1) or num_endpoints
    return fab.num_uplinks // fab.num_leaves if fab.num_spines else num_endpoints


def _endpoint_links(
    design: Design, fab: SupportFabric, ends: list[Endpoint], ports: Ports
) -> Iterator[Link]:
    leaves, _ = support_switch_names(fab)
    oob = fab.name == "out-of-band"
    media = (design.catalog.media["cat6"],) if oob else fiber_media(design)
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
    """Each leaf's up-links, round-robin over the spines (``half`` per leaf)."""
    leaves, spines = support_switch_names(fab)
    if not spines:
        return
    (cable,), (length,) = media_for(np.array([CORE_BLOCK_RUN_M]), fiber_media(design))
    kind = _interface_type(fab)
    per_leaf = fab.num_uplinks // fab.num_leaves
    for k in range(fab.num_uplinks):
        leaf, spine = leaves[k // per_leaf], spines[k % len(spines)]
        yield Link(
            leaf, ports.take(leaf), spine, ports.take(spine), cable, length, kind,
            fab.name, "leaf-spine", f"to {spine}",
        )  # fmt: skip


def support_links(design: Design) -> Iterator[Link]:
    """Every cable of the storage, in-band and out-of-band fabrics, fabric by fabric."""
    endpoints = {
        "storage": _storage_endpoints,
        "in-band": _inband_endpoints,
        "out-of-band": oob_endpoints,
    }
    ports = Ports()
    for fab in design.support_fabrics:
        ends = endpoints[fab.name](design)
        if fab.name != "out-of-band" and len(ends) != fab.num_endpoint_ports:
            raise GenerateError(  # a bug: the design and this module disagree on who plugs in
                f"{fab.name}: {len(ends)} endpoints found, the design counts "
                f"{fab.num_endpoint_ports}"
            )
        yield from _endpoint_links(design, fab, ends, ports)
        yield from _uplinks(design, fab, ports)
