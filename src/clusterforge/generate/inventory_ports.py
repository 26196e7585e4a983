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
from clusterforge.design.cabling import pick_media, run_lengths_m
from clusterforge.generate.common import checked_name
from clusterforge.generate.launch import hca_names

__all__ = ["Link", "cable_rows", "compute_links", "interface_rows", "interface_type"]

# NetBox interface type slugs (dcim/choices.py; design.md §5.1 lists the 400/800G ones).
_IB_TYPES = {200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
_ETH_TYPES = {
    100: "100gbase-x-qsfp28",
    200: "200gbase-x-qsfp56",
    400: "400gbase-x-osfp",
    800: "800gbase-x-osfp",
}


@dataclass(frozen=True)
class Link:
    a_device: str
    a_port: str
    b_device: str
    b_port: str
    cable_type: str
    length_m: float


def interface_type(design: Design) -> str:
    table = _IB_TYPES if design.fabric.fabric == "infiniband" else _ETH_TYPES
    return table.get(int(design.fabric.nic_gbit_per_s), "other")


@cache
def _fiber_media() -> tuple[Medium, ...]:
    media = (m for m in load_catalog().media if m.id != "cat6")
    return tuple(sorted(media, key=lambda m: m.max_reach_m))


def _media(lengths: np.ndarray) -> list[tuple[str, float]]:
    media = _fiber_media()
    picks = pick_media(lengths, list(media))
    return [(media[i].netbox_type, round(float(x), 1)) for i, x in zip(picks, lengths, strict=True)]


class _Ports:
    """Hands out the next free port of each switch."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def take(self, switch: str) -> str:
        n = self._next.get(switch, 0) + 1
        self._next[switch] = n
        return f"p{n}"


def _node_links(design: Design, ports: _Ports) -> list[Link]:
    c = design.fabric.connectivity
    layout = design.layout
    node, nic, leaf = c.node_links()
    media = _media(run_lengths_m(layout, layout.node_rack[node], layout.switch_rack[leaf]))
    names = [checked_name(n, "node name") for n in design.compute.node_names]
    hcas = hca_names(design)
    links = []
    for n, i, sw, (kind, length) in zip(
        node.tolist(), nic.tolist(), leaf.tolist(), media, strict=True
    ):
        switch = checked_name(c.switch_name(sw), "switch name")
        links.append(Link(names[n], hcas[i], switch, ports.take(switch), kind, length))
    return links


def _switch_links(design: Design, ports: _Ports) -> list[Link]:
    c = design.fabric.connectivity
    layout = design.layout
    a, b, count, _ = c.switch_links()
    media = _media(run_lengths_m(layout, layout.switch_rack[a], layout.switch_rack[b]))
    links = []
    for sa, sb, k, (kind, length) in zip(
        a.tolist(), b.tolist(), count.tolist(), media, strict=True
    ):
        name_a, name_b = c.switch_name(sa), c.switch_name(sb)
        for _ in range(k):
            links.append(Link(name_a, ports.take(name_a), name_b, ports.take(name_b), kind, length))
    return links


def compute_links(design: Design) -> list[Link]:
    """Every cable of the compute fabric, node links first."""
    ports = _Ports()
    return _node_links(design, ports) + _switch_links(design, ports)


def interface_rows(design: Design) -> list[dict[str, Any]]:
    kind = interface_type(design)
    hca_rail = {name: rail for rail, name in enumerate(hca_names(design))}
    rows = []
    for link in compute_links(design):
        rail = (
            hca_rail[link.a_port]
            if link.a_port in hca_rail and link.a_device.startswith("gpu")
            else None
        )
        rows.append(
            {
                "device": link.a_device,
                "name": link.a_port,
                "type": kind,
                "description": f"rail {rail}" if rail is not None else f"to {link.b_device}",
            }
        )
        rows.append(
            {
                "device": link.b_device,
                "name": link.b_port,
                "type": kind,
                "description": f"to {link.a_device}",
            }
        )
    return rows


def cable_rows(design: Design) -> list[dict[str, Any]]:
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
        }
        for link in compute_links(design)
    ]
