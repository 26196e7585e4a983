"""Bill of materials, capex, opex and build-versus-rent TCO (design.md §6.5-6.6).

::

    build_total = capex + years × (colo $/kW-mo × 12 × contracted kW
                                   + average IT kW × PUE × 8,760 h × $/kWh
                                   + staff + maintenance) − residual value
    rent_total  = used GPU-hours × $/GPU-h × (1 − discount)
    used GPU-hours = training GPUs × 8,760 × years × utilization
    effective build $/GPU-h = build_total / used GPU-hours

Renting is priced per *used* GPU-hour (the capacity one would otherwise rent), so the
break-even utilization is where both totals meet: ``u* = build_total / (GPUs·8,760·years·price)``.
Spare nodes are bought, powered and cabled but not counted as training GPU-hours.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

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
    "CostDesign",
    "Parts",
    "PowerSummary",
    "bill_of_materials",
    "cost_design",
    "power_summary",
]

HOURS_PER_YEAR = 8760.0


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


class CostDesign(BaseModel):
    model_config = ConfigDict(frozen=True)
    capex_usd: float
    capex_by_category_usd: dict[str, float]
    capex_per_gpu_usd: float
    opex_per_year_usd: float
    opex_by_category_per_year_usd: dict[str, float]
    residual_usd: float
    years: float
    build_total_usd: float
    rent_total_usd: float
    used_gpu_hours: float
    effective_build_usd_per_gpu_hour: float
    cloud_usd_per_gpu_hour: float
    break_even_utilization: float = Field(
        description="Utilization where build and rent cost the same"
    )
    build_wins: bool
    savings_usd: float = Field(
        description="rent_total - build_total (negative: renting is cheaper)"
    )
    break_even_gpus: int | None = Field(None, description="Smallest GPU count where building wins")


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
    num_mgmt_servers: int


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
    lines.append(
        _line(
            "management", server.id, server.name, num_mgmt_servers, server.price_usd, server.source
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


def cost_design(
    spec: ClusterSpec, compute: ComputeDesign, bom: list[BomLine], power: PowerSummary
) -> CostDesign:
    """Capex, opex and the build-versus-rent comparison over ``economics.years``."""
    e, f = spec.economics, spec.facility
    by_cat: dict[str, float] = defaultdict(float)
    for line in bom:
        by_cat[line.category] += line.extended_usd
    capex = sum(by_cat.values())
    hardware = capex - by_cat.get("installation", 0.0)
    opex = {
        "colocation": f.colo_usd_per_kw_month * 12 * power.it_max_kw,
        "energy": power.it_average_kw * f.pue * HOURS_PER_YEAR * f.usd_per_kwh,
        "staff": e.num_staff * e.staff_usd_per_year,
        "maintenance": e.maintenance_fraction_per_year * hardware,
    }
    opex_year = sum(opex.values())
    residual = e.residual_fraction * hardware
    build = capex + e.years * opex_year - residual
    gpus = compute.num_training_gpus
    used_hours = gpus * HOURS_PER_YEAR * e.years * e.utilization
    rent_price = e.cloud_usd_per_gpu_hour * (1 - e.rent_discount)
    rent = used_hours * rent_price
    return CostDesign(
        capex_usd=capex,
        capex_by_category_usd=dict(by_cat),
        capex_per_gpu_usd=capex / gpus,
        opex_per_year_usd=opex_year,
        opex_by_category_per_year_usd=opex,
        residual_usd=residual,
        years=e.years,
        build_total_usd=build,
        rent_total_usd=rent,
        used_gpu_hours=used_hours,
        effective_build_usd_per_gpu_hour=build / used_hours,
        cloud_usd_per_gpu_hour=rent_price,
        break_even_utilization=build / (gpus * HOURS_PER_YEAR * e.years * rent_price),
        build_wins=build < rent,
        savings_usd=rent - build,
    )
