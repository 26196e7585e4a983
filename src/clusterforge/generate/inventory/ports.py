"""Ports and cables of the compute fabric, for the NetBox interface and cable CSVs.

Every node HCA is named as NCCL and the dashboards name it (``mlx5_<rail>``); switch ports are
numbered ``p1, p2, ...`` in the order links are laid: node links first (down ports), then the
switch-to-switch bundles (up ports on the lower switch, down ports on the upper one).  Each
link's length and medium are those the design's cabling stage picks for its rack pair.

Links are yielded one by one, never held in a list: a 100,000-GPU fabric has about 400,000
of them, and the interface and cable files each walk them once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from clusterforge.catalog import Medium
from clusterforge.design import Design
from clusterforge.design.cabling.links import TIER_NAMES, pick_media, run_lengths_m
from clusterforge.design.cabling.media import fiber_media as design_fiber_media
from clusterforge.generate.common import checked_name
from clusterforge.generate.training.launch import hca_names

__all__ = [
    "CABLE_FIELDS",
    "ETH_TYPES",
    "IB_TYPES",
    "INTERFACE_FIELDS",
    "STATUS",
    "Link",
    "Ports",
    "cable_rows",
    "compute_links",
    "fiber_media",
    "interface_rows",
    "interface_type",
    "media_for",
    "rack_device_names",
]

STATUS = "planned"
# NetBox interface type slugs (NetBox dcim/choices.py, InterfaceTypeChoices).
IB_TYPES = {200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ETH_TYPES = {
    1: "1000base-t",
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-osfp",
    800: "800gbase-x-osfp",
}
# Column order of the interface and cable CSVs (NetBox InterfaceImportForm, CableImportForm).
INTERFACE_FIELDS = ("device", "name", "type", "mgmt_only", "description")
CABLE_FIELDS = (
    "side_a_device",
    "side_a_type",
    "side_a_name",
    "side_b_device",
    "side_b_type",
    "side_b_name",
    "type",
    "status",
    "length",
    "length_unit",
    "label",
    "description",
)


class Link(NamedTuple):
    """One cable between two interfaces; ``fabric`` and ``link_class`` name the design's
    :class:`~clusterforge.design.cabling.links.LinkClass` it belongs to."""

    a_device: str
    a_port: str
    b_device: str
    b_port: str
    cable_type: str
    length_m: float
    interface_type: str
    fabric: str = "compute"
    link_class: str = ""
    a_description: str = ""


def interface_type(design: Design) -> str:
    table = IB_TYPES if design.fabric.fabric == "infiniband" else ETH_TYPES
    return table.get(int(design.fabric.nic_gbit_per_s), "other")


def rack_device_names(design: Design) -> dict[tuple[str, str], str]:
    """(rack, device) -> NetBox device name.  Per-rack items (PDUs, patch panels, CDUs)
    repeat their name in every rack, so those are prefixed with the rack name."""
    counts: dict[str, int] = {}
    for rack in design.racks:
        for d in rack.devices:
            counts[d.name] = counts.get(d.name, 0) + 1
    return {
        (rack.name, d.name): checked_name(
            f"{rack.name}-{d.name}" if counts[d.name] > 1 else d.name, "device name"
        )
        for rack in design.racks
        for d in rack.devices
    }


def fiber_media(design: Design, gbit_per_s: float | None = None) -> tuple[Medium, ...]:
    """The media the cabling stage picks from: the design catalog's data-link media by
    reach, only those specified for ``gbit_per_s`` when given."""
    return tuple(design_fiber_media(design.catalog, gbit_per_s))


def media_for(lengths: np.ndarray, media: Sequence[Medium]) -> tuple[list[str], list[float]]:
    """NetBox cable type and length (m, to 0.1 m) of each run, by the cabling stage's rule."""
    picks = pick_media(lengths, list(media))
    types = [m.netbox_type for m in media]
    runs, which = np.unique(lengths, return_inverse=True)  # few distinct rack distances
    rounded = [round(x, 1) for x in runs.tolist()]
    return [types[i] for i in picks.tolist()], [rounded[i] for i in which.tolist()]


class Ports:
    """Hands out the next free port of each switch: ``p1, p2, ...``."""

    def __init__(self) -> None:
        self._used: dict[str, int] = {}
        self._names: list[str] = []  # "p1", "p2", ... made once, shared by every switch

    def take(self, switch: str) -> str:
        n = self._used[switch] = self._used.get(switch, 0) + 1
        while len(self._names) < n:
            self._names.append(f"p{len(self._names) + 1}")
        return self._names[n - 1]


def switch_names(design: Design) -> list[str]:
    """Host name of every compute-fabric switch, index = switch id."""
    c = design.fabric.connectivity
    return [checked_name(c.switch_name(s), "switch name") for s in range(c.num_switches)]


def _rail_descriptions(design: Design) -> list[str]:
    planes = design.fabric.connectivity.num_planes
    return [
        f"rail {i}, plane {i % planes}" if planes > 1 else f"rail {i}"
        for i in range(design.fabric.nics_per_node)
    ]


def occurrences(ids: np.ndarray) -> np.ndarray:
    """1-based running count of each value in ``ids``: ``[5, 7, 5] -> [1, 1, 2]``.  Port
    ``p<k>`` of a switch is its k-th appearance in the order links are laid."""
    order = np.argsort(ids, kind="stable")
    ranked = ids[order]
    first = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])  # start of each value's run
    run_start = np.repeat(first, np.diff(np.r_[first, ids.size]))
    counts = np.empty(ids.size, dtype=np.int64)
    counts[order] = np.arange(ids.size) - run_start + 1
    return counts


def _node_links(design: Design, switches: list[str], ports: list[str]) -> Iterator[Link]:
    c = design.fabric.connectivity
    layout = design.layout
    node, nic, leaf = c.node_links()
    runs = run_lengths_m(layout, layout.node_rack[node], layout.switch_rack[leaf])
    cables, lengths = media_for(runs, fiber_media(design, design.fabric.nic_gbit_per_s))
    names = [checked_name(n, "node name") for n in design.compute.node_names]
    hcas, rails, kind = hca_names(design), _rail_descriptions(design), interface_type(design)
    for n, i, sw, port, cable, length in zip(
        node.tolist(), nic.tolist(), leaf.tolist(), ports, cables, lengths, strict=True
    ):
        yield Link(
            names[n], hcas[i], switches[sw], port, cable, length, kind,
            "compute", "node-leaf", rails[i],
        )  # fmt: skip


_Bundles = tuple[np.ndarray, np.ndarray, np.ndarray]  # switch a, switch b, tier: one per cable


def _switch_links(
    design: Design, bundles: _Bundles, switches: list[str], ports: list[str]
) -> Iterator[Link]:
    """One link per cable of each switch-to-switch bundle; ``ports`` alternates a, b."""
    layout = design.layout
    a, b, tier = bundles
    runs = run_lengths_m(layout, layout.switch_rack[a], layout.switch_rack[b])
    cables, lengths = media_for(runs, fiber_media(design, design.fabric.nic_gbit_per_s))
    kind = interface_type(design)
    classes = [TIER_NAMES[t][0] for t in tier.tolist()]
    for sa, sb, port_a, port_b, cable, length, link_class in zip(
        a.tolist(), b.tolist(), ports[::2], ports[1::2], cables, lengths, classes, strict=True
    ):
        yield Link(
            switches[sa], port_a, switches[sb], port_b, cable, length, kind,
            "compute", link_class, "",
        )  # fmt: skip


def compute_links(design: Design) -> Iterator[Link]:
    """Every cable of the compute fabric, node links first.  Switch ports are numbered in
    that order: node links, then each switch-to-switch cable's a end before its b end."""
    c = design.fabric.connectivity
    switches = switch_names(design)
    _, _, leaf = c.node_links()
    a, b, count, tier = c.switch_links()
    cables: _Bundles = (np.repeat(a, count), np.repeat(b, count), np.repeat(tier, count))
    ends = np.concatenate([leaf, np.column_stack(cables[:2]).ravel()]).astype(np.int64)
    numbers = occurrences(ends).tolist()
    names = [f"p{k}" for k in range(1 + max(numbers, default=0))]
    ports = [names[k] for k in numbers]
    yield from _node_links(design, switches, ports[: leaf.size])
    yield from _switch_links(design, cables, switches, ports[leaf.size :])


def interface_rows(links: Iterable[Link]) -> Iterator[tuple[str, ...]]:
    """One interface per cable end (columns of :data:`INTERFACE_FIELDS`); an interface is
    declared where its cable is laid."""
    for link in links:
        mgmt_only = "true" if link.fabric == "out-of-band" else "false"
        description = link.a_description or f"to {link.b_device}"
        yield (link.a_device, link.a_port, link.interface_type, mgmt_only, description)
        yield (link.b_device, link.b_port, link.interface_type, "false", f"to {link.a_device}")


def cable_rows(links: Iterable[Link]) -> Iterator[tuple[str, ...]]:
    """One data cable per link, columns of :data:`CABLE_FIELDS`."""
    lengths: dict[float, str] = {}  # few distinct runs: format each once
    classes: dict[tuple[str, str], str] = {}
    for link in links:
        length = lengths.get(link.length_m) or lengths.setdefault(
            link.length_m, f"{link.length_m:g}"
        )
        key = (link.fabric, link.link_class)
        description = classes.get(key) or classes.setdefault(key, " ".join(key).strip())
        yield (
            link.a_device, "dcim.interface", link.a_port,
            link.b_device, "dcim.interface", link.b_port,
            link.cable_type, STATUS, length, "m",
            f"{link.a_device}:{link.a_port}", description,
        )  # fmt: skip
