"""Rack elevations as an SVG picture: one column per rack, devices drawn at their U."""

from __future__ import annotations

from xml.sax.saxutils import escape

from clusterforge.design import Design
from clusterforge.design.racks import Rack

__all__ = ["MAX_RACKS_DRAWN", "elevation_svg"]

MAX_RACKS_DRAWN = 48
U_PX = 9
RACK_W = 120
GAP = 18
TOP = 50
COLORS = {
    "node": "#4c78a8",
    "switch": "#f58518",
    "storage": "#54a24b",
    "server": "#b279a2",
    "cdu": "#72b7b2",
    "patch-panel": "#bab0ac",
}


def _title(rack: Rack) -> str:
    """Rack name, with its NVLink domain when the rack is one rack-scale system."""
    if rack.nvlink_domain is None:
        return rack.name
    return f"{rack.name} (NVLink {rack.nvlink_domain + 1})"


def _rack_svg(x: int, rack_u: int, r: Rack) -> list[str]:
    height = rack_u * U_PX
    middle = x + RACK_W / 2
    parts = [
        f'<rect x="{x}" y="{TOP}" width="{RACK_W}" height="{height}" fill="#f4f4f4" '
        'stroke="#333"/>',
        f'<text x="{middle}" y="{TOP - 22}" text-anchor="middle" font-weight="bold">'
        f"{escape(_title(r))}</text>",
        f'<text x="{middle}" y="{TOP - 8}" text-anchor="middle">{r.max_kw:.1f} kW '
        f"{escape(r.cooling.method)}</text>",
    ]
    for dev in r.devices:
        if dev.u_height == 0:
            continue
        top_u = dev.u_position + dev.u_height - 1
        y = TOP + (rack_u - top_u) * U_PX
        h = dev.u_height * U_PX
        color = COLORS.get(dev.kind, "#999")
        parts.append(
            f'<rect class="device" data-name="{escape(dev.name)}" x="{x + 2}" y="{y + 0.5}" '
            f'width="{RACK_W - 4}" height="{h - 1}" fill="{color}" stroke="#222">'
            f"<title>{escape(dev.name)} ({escape(dev.model)}), U{dev.u_position}, {dev.max_kw:.1f} kW</title></rect>"
        )
        if h >= 2 * U_PX:
            parts.append(
                f'<text x="{x + 6}" y="{y + min(h, 18) - 4}" fill="white">{escape(dev.name)}</text>'
            )
    return parts


def elevation_svg(design: Design, max_racks: int = MAX_RACKS_DRAWN) -> str:
    """SVG of the first ``max_racks`` racks in floor order (GPU, network and core racks)."""
    rack_u = design.spec.facility.rack_u
    racks = design.racks[:max_racks]
    width = len(racks) * (RACK_W + GAP) + GAP
    height = TOP + rack_u * U_PX + 40
    body: list[str] = []
    for i, rack in enumerate(racks):
        body += _rack_svg(GAP + i * (RACK_W + GAP), rack_u, rack)
    shown = (
        f"{len(racks)} of {len(design.racks)} racks"
        if len(design.racks) > len(racks)
        else f"{len(racks)} racks"
    )
    body.append(
        f'<text x="{GAP}" y="{height - 12}">{escape(design.spec.name)}: {shown}, front view</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
