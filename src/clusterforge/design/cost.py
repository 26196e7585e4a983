"""Bill of materials and power summary: what is bought and what it draws.

Node prices include their NICs. The totals feed the cost of ownership in
:mod:`clusterforge.design.tco`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog
from clusterforge.design.cabling import LinkClass
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.layout import Layout
from clusterforge.design.network import FabricDesign, SupportFabric
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


def _line(category: str, item: str, desc: str, qty: float, unit: float, source: str) -> BomLine:
    return BomLine(
        category=category,
        item=item,
        description=desc,
        quantity=qty,
        unit_usd=unit,
        extended_usd=qty * unit,
        source=source,
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
    spec, compute, fabric, support = p.spec, p.compute, p.fabric, p.support
    storage, layout, cabling, catalog = p.storage, p.layout, p.cabling, p.catalog
    num_mgmt_servers = p.num_mgmt_servers
    node, sw = compute.node, fabric.switch
    lines = [
        _line("compute", node.id, node.name, compute.num_nodes, node.price_usd, node.source),
        _line(
            "network",
            sw.id,
            f"{sw.name} (compute fabric)",
            fabric.num_switches,
            sw.price_usd,
            sw.source,
        ),
    ]
    for fab in support:
        lines.append(
            _line(
                "network",
                fab.switch.id,
                f"{fab.switch.name} ({fab.name} fabric)",
                fab.num_switches,
                fab.switch.price_usd,
                fab.switch.source,
            )
        )
    lines += _media_lines(cabling, catalog)
    block = storage.block
    lines.append(
        _line("storage", block.id, block.name, storage.num_blocks, block.price_usd, block.source)
    )
    server = catalog.facility["mgmt-server"]
    roles = ", ".join(f"{n} {role}" for role, n in p.management.items() if n)
    lines.append(
        _line(
            "management",
            server.id,
            f"{server.name}: {roles}",
            num_mgmt_servers,
            server.price_usd,
            server.source,
        )
    )
    lines += _facility_lines(layout, catalog)
    hardware = sum(line.extended_usd for line in lines)
    lines.append(
        _line(
            "installation",
            "install",
            "Integration, installation and burn-in",
            1,
            hardware * spec.economics.install_fraction,
            f"economics.install_fraction = {spec.economics.install_fraction:g} of hardware",
        )
    )
    return [line for line in lines if line.quantity > 0]


def _media_lines(cabling: list[LinkClass], catalog: Catalog) -> list[BomLine]:
    optics_usd: dict[str, float] = defaultdict(float)
    modules: dict[str, int] = defaultdict(int)
    cables: dict[str, int] = defaultdict(int)
    for link_class in cabling:
        for m in link_class.media:
            medium = catalog.media[m.medium]
            optics_usd[m.medium] += m.cost_usd - m.num_links * medium.cable_price_usd
            modules[m.medium] += m.num_transceivers
            cables[m.medium] += m.num_links
    lines = []
    for medium_id in sorted(cables):
        medium = catalog.media[medium_id]
        if modules[medium_id]:
            per_module = optics_usd[medium_id] / modules[medium_id]
            lines.append(
                _line(
                    "optics",
                    f"{medium_id}-transceiver",
                    f"{medium.name}: transceiver modules",
                    modules[medium_id],
                    per_module,
                    medium.source,
                )
            )
        lines.append(
            _line(
                "cabling",
                f"{medium_id}-cable",
                f"{medium.name}: cables",
                cables[medium_id],
                medium.cable_price_usd,
                medium.source,
            )
        )
    return lines


def _facility_lines(layout: Layout, catalog: Catalog) -> list[BomLine]:
    racks = len(layout.racks)
    pdus = sum(r.circuit.num_whips for r in layout.racks)
    cdus = sum(1 for r in layout.racks for d in r.devices if d.kind == "cdu")
    rdhx = sum(1 for r in layout.racks if r.cooling.method == "rear-door")
    f = catalog.facility
    return [
        _line(
            "facility",
            "rack-48u",
            f["rack-48u"].name,
            racks,
            f["rack-48u"].price_usd,
            f["rack-48u"].source,
        ),
        _line(
            "facility",
            "pdu-3ph",
            f["pdu-3ph"].name,
            pdus,
            f["pdu-3ph"].price_usd,
            f["pdu-3ph"].source,
        ),
        _line(
            "facility",
            "rack-cdu",
            f["rack-cdu"].name,
            cdus,
            f["rack-cdu"].price_usd,
            f["rack-cdu"].source,
        ),
        _line("facility", "rdhx", f["rdhx"].name, rdhx, f["rdhx"].price_usd, f["rdhx"].source),
    ]


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
