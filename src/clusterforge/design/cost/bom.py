"""Bill of materials and power summary: what is bought and what it draws.

Node prices include their NICs. The totals feed the cost of ownership in
:mod:`clusterforge.design.cost.tco`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog
from clusterforge.design.cabling.links import LinkClass
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.layout import Layout
from clusterforge.design.storage import StorageDesign
from clusterforge.spec import ClusterSpec

__all__ = [
    "BomLine",
    "Parts",
    "PowerSummary",
    "bill_of_materials",
    "power_summary",
]


class BomLine(BaseModel):
    model_config = ConfigDict(frozen=True)
    category: str
    item: str
    description: str
    quantity: float
    unit_usd: float
    extended_usd: float
    source: str


class PowerSummary(BaseModel):
    model_config = ConfigDict(frozen=True)
    it_max_kw: float = Field(description="Sum of every rack's max power")
    it_average_kw: float = Field(description="Typical node draw + switch typical + storage + mgmt")
    facility_kw: float = Field(description="it_max_kw x PUE")
    facility_average_kw: float
    optics_w: float = Field(description="Transceiver power (already inside node/switch max)")


def _line(
    *, category: str, item: str, description: str, quantity: float, unit_usd: float, source: str
) -> BomLine:
    return BomLine(
        category=category,
        item=item,
        description=description,
        quantity=quantity,
        unit_usd=unit_usd,
        extended_usd=quantity * unit_usd,
        source=source,
    )


class _PricedRow(Protocol):
    """A catalog row with a price: node, switch, storage block or facility item."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def price_usd(self) -> float: ...
    @property
    def source(self) -> str: ...


def _row_line(category: str, row: _PricedRow, *, quantity: float, note: str = "") -> BomLine:
    """A BOM line for ``quantity`` of a catalog row at its catalog price."""
    return _line(
        category=category,
        item=row.id,
        description=f"{row.name}{note}",
        quantity=quantity,
        unit_usd=row.price_usd,
        source=row.source,
    )


@dataclass(frozen=True)
class Parts:
    """Everything sized before costing: the inputs of the BOM and the power summary."""

    spec: ClusterSpec
    compute: ComputeDesign
    fabric: FabricDesign
    support: list[SupportFabric]
    storage: StorageDesign
    layout: Layout
    cabling: list[LinkClass]
    catalog: Catalog
    management: dict[str, int] = field(default_factory=dict)  # role -> servers

    @property
    def num_mgmt_servers(self) -> int:
        return sum(self.management.values())


def bill_of_materials(parts: Parts) -> list[BomLine]:
    """Every purchasable item with unit and extended cost; node prices include their NICs."""
    p = parts
    lines = [
        _row_line("compute", p.compute.node, quantity=p.compute.num_nodes),
        _row_line(
            "network", p.fabric.switch, quantity=p.fabric.num_switches, note=" (compute fabric)"
        ),
    ]
    lines += [
        _row_line("network", fab.switch, quantity=fab.num_switches, note=f" ({fab.name} fabric)")
        for fab in p.support
    ]
    lines += _media_lines(p.cabling, p.catalog)
    lines.append(_row_line("storage", p.storage.block, quantity=p.storage.num_blocks))
    roles = ", ".join(f"{n} {role}" for role, n in p.management.items() if n)
    server = p.catalog.facility["mgmt-server"]
    lines.append(_row_line("management", server, quantity=p.num_mgmt_servers, note=f": {roles}"))
    if p.spec.management.bmc_access == "bastion":  # the one way into the out-of-band network
        lines.append(_row_line("management", p.catalog.facility["bastion-vpn"], quantity=1))
    lines += _facility_lines(p.layout, p.catalog)
    hardware_usd = sum(line.extended_usd for line in lines)
    share = p.spec.economics.install_fraction
    lines.append(
        _line(
            category="installation",
            item="install",
            description="Integration, installation and burn-in",
            quantity=1,
            unit_usd=hardware_usd * share,
            source=f"economics.install_fraction = {share:g} of hardware",
        )
    )
    return [line for line in lines if line.quantity > 0]


def _media_lines(cabling: list[LinkClass], catalog: Catalog) -> list[BomLine]:
    """One line per ordering part number: its count summed over every link class, at its own
    catalog price (optics for transceivers, cabling for cables and fibres)."""
    quantities: dict[str, int] = defaultdict(int)
    unpriced: dict[tuple[str, float], int] = defaultdict(int)
    reasons: dict[tuple[str, float], str] = {}
    for link_class in cabling:
        for m in link_class.media:
            for count in m.parts:
                quantities[count.part] += count.quantity
            if m.missing_parts:
                key = (m.medium, link_class.gbit_per_s)
                unpriced[key] += m.num_links
                reasons[key] = m.missing_parts
    lines = [
        _line(
            category="optics",
            item=f"unpriced-{medium}-{speed:g}G",
            description=f"{medium} links at {speed:g} Gb/s with no catalog part: not priced",
            quantity=n,
            unit_usd=0.0,
            source=reasons[(medium, speed)],
        )
        for (medium, speed), n in sorted(unpriced.items())
    ]
    for part_id in sorted(quantities):
        part = catalog.parts[part_id]
        lines.append(
            _line(
                category="optics" if part.kind == "transceiver" else "cabling",
                item=part.id,
                description=part.name,
                quantity=quantities[part_id],
                unit_usd=part.price_usd,
                source=f"price {part.price_date}: {part.price_source}; part: {part.source}",
            )
        )
    return lines


def _facility_lines(layout: Layout, catalog: Catalog) -> list[BomLine]:
    f = catalog.facility
    counts = {
        "rack-48u": len(layout.racks),
        "rack-cdu": sum(1 for r in layout.racks for d in r.devices if d.kind == "cdu"),
        "rdhx": sum(1 for r in layout.racks if r.cooling.method == "rear-door"),
    }
    lines = [_row_line("facility", f[item], quantity=n) for item, n in counts.items()]
    return lines + _power_path_lines(layout, catalog)


def _power_path_lines(layout: Layout, catalog: Catalog) -> list[BomLine]:
    """Per circuit of each rack's power path: its rack-end device (a PDU, or a power shelf that
    comes with the rack-scale system: listed at $0, priced in the node) and what is bought
    upstream of it (a busway tap-off box)."""
    circuits: dict[str, int] = defaultdict(int)
    for r in layout.racks:
        circuits[r.circuit.power_path] += r.circuit.num_whips
    lines = []
    for path_id, n in circuits.items():
        path = catalog.power_paths[path_id]
        end = catalog.facility[path.circuit_device]
        if path.circuit_device_included:
            note = ", one per circuit (comes with the rack-scale system, priced in its trays)"
            lines.append(
                _line(
                    category="facility",
                    item=end.id,
                    description=f"{end.name}{note}",
                    quantity=n,
                    unit_usd=0.0,
                    source=end.source,
                )
            )
        else:
            lines.append(_row_line("facility", end, quantity=n, note=", one per circuit"))
        lines += [
            _row_line("facility", catalog.facility[item], quantity=n, note=", one per circuit")
            for item in path.circuit_items
        ]
    return lines


def power_summary(parts: Parts) -> PowerSummary:
    """Maximum (racks) and average (typical draw) IT power, facility power, optics power."""
    p = parts
    spec, compute, fabric, support = p.spec, p.compute, p.fabric, p.support
    storage, layout, cabling, catalog = p.storage, p.layout, p.cabling, p.catalog
    num_mgmt_servers = p.num_mgmt_servers
    it_max = sum(r.max_kw for r in layout.racks)
    node = compute.node
    cap_share = layout.density.node_max_kw / node.max_kw
    typical_nodes = compute.num_nodes * node.typical_kw * min(1.0, cap_share)
    if node.rack_overhead_kw:
        typical_nodes += node.rack_overhead_kw * compute.num_nodes / node.rack_scale_nodes
    switches = fabric.num_switches * fabric.switch.typical_w / 1000
    switches += sum(f.num_switches * f.switch.typical_w / 1000 for f in support)
    other = storage.num_blocks * storage.block.power_kw
    other += num_mgmt_servers * catalog.facility["mgmt-server"].power_kw
    average = typical_nodes + switches + other
    return PowerSummary(
        it_max_kw=it_max,
        it_average_kw=average,
        facility_kw=it_max * spec.facility.pue,
        facility_average_kw=average * spec.facility.pue,
        optics_w=sum(m.optics_power_w for c in cabling for m in c.media),
    )
