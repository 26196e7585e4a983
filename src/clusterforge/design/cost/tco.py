"""Build-versus-rent total cost of ownership over ``economics.years``.

::

    build_total = capex + years × opex_per_year − residual
      capex     = bill of materials (hardware + installation) + self-built data centre
      opex      = colo $/kW-month × 12 × contracted kW + average IT kW × PUE × 8,760 h × $/kWh
                  + staff + maintenance share of hardware + building operation (self-built)
      residual  = residual share × hardware + building × (1 − years / building life)
    rent, for the same training GPUs, in one of two offers:
      reserved  = GPUs × 8,760 h × billed years × contract $/GPU-h × (1 − discount)
                  billed years = whole contract terms covering the ownership period
      on-demand = GPUs × 8,760 h × years × utilization × list $/GPU-h × (1 − discount)

A reserved contract bills every hour of its term whether the GPUs are busy or not; on-demand
bills only the hours used, at a higher list price. ``economics.rent_basis`` names the offer
the verdict compares against ("cheaper": whichever costs less at this utilization); both
totals are always reported. Rent prices left unset in the spec come from the GPU's catalog row
(dated, with sources).

A self-built site (``facility.colo_usd_per_kw_month: 0``) pays for its building instead of
rent: ``economics.datacenter_usd_per_mw`` per MW of critical IT load (Cushman & Wakefield,
Data Center Development Cost Guide 2025), depreciated straight-line over
``economics.datacenter_life_years``; the undepreciated share is residual value. Running the
building (facility maintenance, security, site staff) costs
``economics.datacenter_opex_usd_per_kw_year`` per kW of critical IT load, which a colocation
contract's $/kW-month already covers.

Over time, building costs the capex at once and its opex evenly through the period, and the
residual comes back at the end; rent is paid evenly through the period. The payback month is
the first month after which the cumulative build cost stays below the cumulative rent of the
verdict's offer. The net present value discounts both at ``economics.discount_rate`` per year,
the level streams as continuous flows (a stream of A per year over T years is worth
A × (1 − (1 + r)^−T) / ln(1 + r) today, A × T at r = 0):

    npv = present rent − (capex + present opex − residual × (1 + r)^−T)

Positive: building is worth that much more than renting, in today's dollars.
Spare nodes are bought, powered and cabled but not counted as training GPU-hours.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Gpu
from clusterforge.design.cost.bom import BomLine, PowerSummary
from clusterforge.spec import ClusterSpec, EconomicsSpec

__all__ = [
    "HOURS_PER_YEAR",
    "MONTHS_PER_YEAR",
    "CostDesign",
    "PresentValues",
    "RentOffers",
    "cost_design",
    "payback_month",
    "present_values",
    "rent_offers",
]

HOURS_PER_YEAR = 8760.0
MONTHS_PER_YEAR = 12
RentOffer = Literal["reserved", "on-demand"]


class RentOffers(BaseModel):
    """Both rental offers for the training GPUs over the ownership period."""

    model_config = ConfigDict(frozen=True)
    reserved_usd_per_gpu_hour: float = Field(description="Contract price after discount")
    reserved_term_years: float
    reserved_billed_years: float = Field(description="Whole terms covering the period")
    reserved_total_usd: float
    on_demand_usd_per_gpu_hour: float = Field(description="List price after discount")
    on_demand_total_usd: float
    price_date: str = Field(description="Month of the catalog anchors (or 'spec')")
    basis: RentOffer = Field(description="The offer the verdict compares against")

    @property
    def total_usd(self) -> float:
        return self.reserved_total_usd if self.basis == "reserved" else self.on_demand_total_usd

    @property
    def usd_per_gpu_hour(self) -> float:
        if self.basis == "reserved":
            return self.reserved_usd_per_gpu_hour
        return self.on_demand_usd_per_gpu_hour


class CostDesign(BaseModel):
    model_config = ConfigDict(frozen=True)
    capex_usd: float
    capex_by_category_usd: dict[str, float]
    capex_per_gpu_usd: float
    datacenter_capex_usd: float = Field(description="Self-built building (0 in colocation)")
    opex_per_year_usd: float
    opex_by_category_per_year_usd: dict[str, float]
    residual_usd: float = Field(description="Value left at the end, subtracted from the build")
    building_residual_usd: float = Field(description="Undepreciated share of the building")
    hardware_residual_usd: float = Field(description="Resale share of the hardware")
    years: float
    build_total_usd: float = Field(description="capex + years × opex − residual")
    rent: RentOffers
    rent_basis: RentOffer = Field(description="The rental offer the verdict uses")
    rent_total_usd: float = Field(description="Rent of the offer the verdict uses")
    used_gpu_hours: float
    effective_build_usd_per_gpu_hour: float = Field(description="build_total / used GPU-hours")
    cloud_usd_per_gpu_hour: float = Field(description="Price of the offer the verdict uses")
    break_even_utilization: float = Field(
        description="Utilization above which building beats paying on-demand for used hours"
    )
    build_wins: bool
    savings_usd: float = Field(
        description="rent_total - build_total (negative: renting is cheaper)"
    )
    payback_months: int | None = Field(
        description="First month after which cumulative build cost stays below cumulative "
        "rent of the verdict's offer; None when it never does within the period"
    )
    discount_rate: float = Field(description="Yearly rate of the present values")
    build_present_usd: float = Field(description="Build total in today's dollars")
    rent_present_usd: float = Field(description="Rent of the verdict's offer in today's dollars")
    npv_usd: float = Field(
        description="rent_present - build_present: what building saves in today's dollars "
        "(negative: renting is cheaper)"
    )


class PresentValues(BaseModel):
    """Build and rent in today's dollars (module docstring)."""

    model_config = ConfigDict(frozen=True)
    build_usd: float
    rent_usd: float

    @property
    def npv_usd(self) -> float:
        return self.rent_usd - self.build_usd


def _stream_years(years: float, rate: float) -> float:
    """Today's value of $1 a year paid evenly over ``years``: (1 − (1 + r)^−T) / ln(1 + r)."""
    if rate == 0:
        return years
    return (1.0 - math.pow(1.0 + rate, -years)) / math.log1p(rate)


def present_values(
    *,
    capex_usd: float,
    opex_per_year_usd: float,
    residual_usd: float,
    rent_total_usd: float,
    years: float,
    discount_rate: float,
) -> PresentValues:
    """Build and rent over ``years`` discounted at ``discount_rate`` per year: capex today,
    opex and rent as even streams, the residual at the end."""
    stream = _stream_years(years, discount_rate)
    end = math.pow(1.0 + discount_rate, -years)
    return PresentValues(
        build_usd=capex_usd + opex_per_year_usd * stream - residual_usd * end,
        rent_usd=rent_total_usd / years * stream,
    )


def payback_month(
    *,
    capex_usd: float,
    opex_per_year_usd: float,
    residual_usd: float,
    rent_total_usd: float,
    years: float,
) -> int | None:
    """First month after which cumulative build (capex, then opex) stays below cumulative rent
    (paid evenly); the last month when only the residual at the end tips it; None when
    building never costs less within the period."""
    rent_per_year = rent_total_usd / years
    if rent_per_year > opex_per_year_usd:
        crossing_years = capex_usd / (rent_per_year - opex_per_year_usd)
        if crossing_years < years:
            return math.floor(crossing_years * MONTHS_PER_YEAR) + 1
    if capex_usd + opex_per_year_usd * years - residual_usd < rent_total_usd:
        return math.ceil(years * MONTHS_PER_YEAR - 1e-9)
    return None


def rent_offers(e: EconomicsSpec, gpu: Gpu, num_gpus: int) -> RentOffers:
    """Reserved and on-demand rent for ``num_gpus`` over ``e.years`` (formulas above)."""
    keep = 1.0 - e.rent_discount
    reserved = (e.cloud_usd_per_gpu_hour or gpu.rent_reserved_usd_per_gpu_hour) * keep
    on_demand = (e.on_demand_usd_per_gpu_hour or gpu.rent_on_demand_usd_per_gpu_hour) * keep
    # A contract cannot end mid-term: the period is covered by whole terms (1e-9 absorbs
    # float noise such as 4.0 / 0.4 = 10.000000000000002).
    billed_years = math.ceil(e.years / e.reserved_term_years - 1e-9) * e.reserved_term_years
    reserved_total = num_gpus * HOURS_PER_YEAR * billed_years * reserved
    on_demand_total = num_gpus * HOURS_PER_YEAR * e.years * e.utilization * on_demand
    basis: RentOffer
    match e.rent_basis:
        case "cheaper":
            basis = "reserved" if reserved_total <= on_demand_total else "on-demand"
        case "reserved" | "on-demand" as chosen:
            basis = chosen
    from_spec = e.cloud_usd_per_gpu_hour is not None and e.on_demand_usd_per_gpu_hour is not None
    return RentOffers(
        reserved_usd_per_gpu_hour=reserved,
        reserved_term_years=e.reserved_term_years,
        reserved_billed_years=billed_years,
        reserved_total_usd=reserved_total,
        on_demand_usd_per_gpu_hour=on_demand,
        on_demand_total_usd=on_demand_total,
        price_date="spec" if from_spec else gpu.rent_price_date,
        basis=basis,
    )


def _capex_by_category(
    spec: ClusterSpec, bom: list[BomLine], power: PowerSummary
) -> dict[str, float]:
    by_cat: dict[str, float] = defaultdict(float)
    for line in bom:
        by_cat[line.category] += line.extended_usd
    if spec.facility.colo_usd_per_kw_month == 0:
        by_cat["datacenter"] = spec.economics.datacenter_usd_per_mw * power.it_max_kw / 1000
    return dict(by_cat)


def _opex(spec: ClusterSpec, power: PowerSummary, hardware_usd: float) -> dict[str, float]:
    e, f = spec.economics, spec.facility
    opex = {
        "colocation": f.colo_usd_per_kw_month * 12 * power.it_max_kw,
        "energy": power.it_average_kw * f.pue * HOURS_PER_YEAR * f.usd_per_kwh,
        "staff": e.num_staff * e.staff_usd_per_year,
        "maintenance": e.maintenance_fraction_per_year * hardware_usd,
    }
    if f.colo_usd_per_kw_month == 0:  # self-built: the colo rent no longer runs the building
        opex["building"] = e.datacenter_opex_usd_per_kw_year * power.it_max_kw
    return opex


def cost_design(
    spec: ClusterSpec, *, gpu: Gpu, num_training_gpus: int, bom: list[BomLine], power: PowerSummary
) -> CostDesign:
    """Capex, opex and the build-versus-rent comparison over ``economics.years``."""
    e = spec.economics
    by_cat = _capex_by_category(spec, bom, power)
    capex = sum(by_cat.values())
    building = by_cat.get("datacenter", 0.0)
    hardware = capex - by_cat.get("installation", 0.0) - building
    opex = _opex(spec, power, hardware)
    opex_year = sum(opex.values())
    building_left = max(0.0, 1.0 - e.years / e.datacenter_life_years)
    building_residual = building * building_left
    hardware_residual = e.residual_fraction * hardware
    residual = building_residual + hardware_residual
    build = capex + e.years * opex_year - residual
    gpus = num_training_gpus
    used_hours = gpus * HOURS_PER_YEAR * e.years * e.utilization
    rent = rent_offers(e, gpu, gpus)
    flows = {"capex_usd": capex, "opex_per_year_usd": opex_year, "residual_usd": residual,
             "rent_total_usd": rent.total_usd, "years": e.years}  # fmt: skip
    present = present_values(**flows, discount_rate=e.discount_rate)
    return CostDesign(
        capex_usd=capex,
        capex_by_category_usd=by_cat,
        capex_per_gpu_usd=capex / gpus,
        datacenter_capex_usd=building,
        opex_per_year_usd=opex_year,
        opex_by_category_per_year_usd=opex,
        residual_usd=residual,
        building_residual_usd=building_residual,
        hardware_residual_usd=hardware_residual,
        years=e.years,
        build_total_usd=build,
        rent=rent,
        rent_basis=rent.basis,
        rent_total_usd=rent.total_usd,
        used_gpu_hours=used_hours,
        effective_build_usd_per_gpu_hour=build / used_hours,
        cloud_usd_per_gpu_hour=rent.usd_per_gpu_hour,
        break_even_utilization=build
        / (gpus * HOURS_PER_YEAR * e.years * rent.on_demand_usd_per_gpu_hour),
        build_wins=build < rent.total_usd,
        savings_usd=rent.total_usd - build,
        payback_months=payback_month(**flows),
        discount_rate=e.discount_rate,
        build_present_usd=present.build_usd,
        rent_present_usd=present.rent_usd,
        npv_usd=present.npv_usd,
    )
