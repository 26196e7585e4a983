"""Ports and cables of the compute fabric, for the NetBox interface and cable CSVs.

Every node HCA is named as NCCL and the dashboards name it (``mlx5_<rail>``); switch ports are
numbered ``p1, p2, ...`` in the order links are laid: node links first (down ports), then the
switch-to-switch bundles (up ports on the lower switch, down ports on the upper one).  Each
link's length and medium are those the design's cabling stage picks for its rack pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from clusterforge.catalog import Medium, load_catalog
from clusterforge.design import Design
from clusterforge.design.cabling import TIER_NAMES, pick_media, run_lengths_m
from clusterforge.generate.common import checked_name
from clusterforge.generate.launch import hca_names

__all__ = [
    "ETH_TYPES",
    "IB_TYPES",
    "Link",
    "Ports",
    "cable_rows",
    "compute_links",
    "fiber_media",
    "interface_rows",
    "interface_type",
    "rack_device_names",
]

# NetBox interface type slugs (dcim/choices.py; design.md §5.1 lists the 400/800G ones).
IB_TYPES = {200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ETH_TYPES = {
    1: "1000base-t",
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-osfp",
    800: "800gbase-x-osfp",
}


@dataclass(frozen=True)
class Link:
    """One cable between two interfaces; ``fabric`` and ``link_class`` name the design's
    :class:`~clusterforge.design.cabling.LinkClass` it belongs to."""

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


@cache
def fiber_media() -> tuple[Medium, ...]:
    """Every medium but copper Ethernet, by reach: what the cabling stage picks from."""
    media = (m for m in load_catalog().media if m.id != "cat6")
    return tuple(sorted(media, key=lambda m: m.max_reach_m))


def media_for(lengths: np.ndarray, media: tuple[Medium, ...]) -> list[tuple[str, float]]:
    """(NetBox cable type, length in m) of each run, by the cabling stage's media rule."""
    picks = pick_media(lengths, list(media))
    return [(media[i].netbox_type, round(float(x), 1)) for i, x in zip(picks, lengths, strict=True)]


class Ports:
    """Hands out the next free port of each switch (``p1, p2, ...``, or another prefix)."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, str], int] = {}

    def take(self, switch: str, prefix: str = "p") -> str:
        n = self._next.get((switch, prefix), 0) + 1
        self._next[(switch, prefix)] = n
        return f"{prefix}{n}"


def _node_links(design: Design, ports: Ports) -> list[Link]:
    c = design.fabric.connectivity
    layout = design.layout
    node, nic, leaf = c.node_links()
    media = media_for(
        run_lengths_m(layout, layout.node_rack[node], layout.switch_rack[leaf]), fiber_media()
    )
    names = [checked_name(n, "node name") for n in design.compute.node_names]
    hcas = hca_names(design)
    kind = interface_type(design)
    planes = c.num_planes
    links = []
    for n, i, sw, (cable, length) in zip(
        node.tolist(), nic.tolist(), leaf.tolist(), media, strict=True
    ):
        switch = checked_name(c.switch_name(sw), "switch name")
        links.append(
            Link(
                names[n],
                hcas[i],
                switch,
                ports.take(switch),
                cable,
                length,
                kind,
                link_class="node-leaf",
                a_description=f"rail {i}, plane {i % planes}" if planes > 1 else f"rail {i}",
            )
        )
    return links


def _switch_links(design: Design, ports: Ports) -> list[Link]:
    c = design.fabric.connectivity
    layout = design.layout
    a, b, count, tier = c.switch_links()
    media = media_for(
        run_lengths_m(layout, layout.switch_rack[a], layout.switch_rack[b]), fiber_media()
    )
    kind = interface_type(design)
    links = []
    for sa, sb, k, t, (cable, length) in zip(
        a.tolist(), b.tolist(), count.tolist(), tier.tolist(), media, strict=True
    ):
        name_a, name_b = c.switch_name(sa), c.switch_name(sb)
        link_class = TIER_NAMES[int(t)][0]
        for _ in range(k):
            links.append(
                Link(
                    name_a,
                    ports.take(name_a),
                    name_b,
                    ports.take(name_b),
                    cable,
                    length,
                    kind,
                    link_class=link_class,
                )
            )
    return links


def compute_links(design: Design) -> list[Link]:
    """Every cable of the compute fabric, node links first."""
    ports = Ports()
    return _node_links(design, ports) + _switch_links(design, ports)


def interface_rows(links: list[Link]) -> list[dict[str, Any]]:
    """One interface per cable end; an interface is declared where its cable is laid."""
    rows = []
    for link in links:
        rows.append(
            {
                "device": link.a_device,
                "name": link.a_port,
                "type": link.interface_type,
                "mgmt_only": "true" if link.fabric == "out-of-band" else "false",
                "description": link.a_description or f"to {link.b_device}",
            }
        )
        rows.append(
            {
                "device": link.b_device,
                "name": link.b_port,
                "type": link.interface_type,
                "mgmt_only": "false",
                "description": f"to {link.a_device}",
            }
        )
    return rows


def cable_rows(links: list[Link]) -> list[dict[str, Any]]:
    return [
        {
            "side_a_device": link.a_device,
            "side_a_type": "dcim.interface",
            "side_a_name": link.a_port,
            "side_b_device": link.b_device,
            "side_b_type": "dcim.interface",
            "side_b_name": link.b_port,
            "type": link.cable_type,
            "status": "planned",
            "length": f"{link.length_m:g}",
            "length_unit": "m",
            "label": f"{link.a_device}:{link.a_port}",
            "description": f"{link.fabric} {link.link_class}".strip(),
        }
        for link in links
    ]
