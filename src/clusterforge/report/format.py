"""How numbers read in every view: the terminal summary, the HTML report, the picture files.

One function per kind of quantity, so that the same value is written the same way wherever
it appears ("$5.65B" in the terminal and in the report, never "$5,651.39M" in one of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.catalog.power_limit import rate_share_at_limit

if TYPE_CHECKING:
    from clusterforge.design.cost.tco import CostDesign
    from clusterforge.design.result import Design

__all__ = [
    "counted",
    "kw",
    "money",
    "money_delta",
    "npv_text",
    "num",
    "payback_text",
    "pct",
    "power_limit_text",
    "pp",
    "size_label",
]

_BINARY_UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def money(usd: float) -> str:
    """Dollars for people: $1.23B from a thousand million, $1.23M from a million, whole
    dollars from $100 ($12,345), cents below ($2.35, a price per GPU-hour)."""
    sign = "-" if usd < 0 else ""
    size = abs(usd)
    if size == 0:
        return "$0"
    if size >= 1e9:
        return f"{sign}${size / 1e9:,.2f}B"
    if size >= 1e6:
        return f"{sign}${size / 1e6:,.2f}M"
    if size >= 100:
        return f"{sign}${size:,.0f}"
    return f"{sign}${size:,.2f}"


def money_delta(usd: float) -> str:
    """A change in dollars, signed: +$3.49M, -$120,000, +$0.00."""
    return ("-" if usd < 0 else "+") + money(abs(usd))


def counted(count: int, noun: str, plural: str = "") -> str:
    """A count and its noun, singular for one: "1 node", "68 nodes", "2 switches" (with
    ``plural`` where adding "s" is wrong)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def num(value: float, digits: int = 0) -> str:
    """A number with thousands separated: 12,345 or 12,345.6."""
    return f"{value:,.{digits}f}"


def pct(fraction: float) -> str:
    """A fraction as a percentage with one decimal: 0.123 -> 12.3%."""
    return f"{fraction:.1%}"


def pp(difference: float) -> str:
    """A difference of two fractions in percentage points, signed: 0.55 - 0.40 -> +15.0 pp
    (a change from 40 % to 55 % is 15 points, or 37.5 % of the first value)."""
    return f"{difference * 100:+.1f} pp"


def kw(value_kw: float) -> str:
    """Kilowatts, megawatts from 1,000 kW."""
    if abs(value_kw) >= 1000:
        return f"{value_kw / 1000:,.2f} MW"
    return f"{value_kw:,.1f} kW"


def size_label(size_bytes: float) -> str:
    """A message size in binary units, as nccl-tests sweeps them: 1 KiB, 64 MiB, 8 GiB."""
    for unit, scale in _BINARY_UNITS:
        if size_bytes >= scale:
            return f"{size_bytes / scale:g} {unit}"
    return f"{size_bytes:g} B"


def payback_text(cost: CostDesign) -> str:
    """When cumulative build cost falls below cumulative rent of the verdict's offer."""
    basis = f"{cost.rent_basis} rent"
    if cost.payback_months is None:
        return f"never within {cost.years:g} years: building costs more than {basis}"
    end = " (the residual at the end tips it)" if cost.payback_months >= cost.years * 12 else ""
    return f"month {cost.payback_months}: cumulative build falls below cumulative {basis}{end}"


def npv_text(cost: CostDesign) -> str:
    """The net present value of building instead of renting, in words."""
    gain = "saves" if cost.npv_usd >= 0 else "costs"
    return (
        f"building {gain} {money(abs(cost.npv_usd))} against {cost.rent_basis} rent in today's "
        f"dollars (build {money(cost.build_present_usd)}, rent {money(cost.rent_present_usd)})"
    )


def power_limit_text(design: Design) -> str:
    """``600 W of 700 W TDP per GPU (the spec's gpu_power_limit_w), 90 % of its matmul rate``,
    or ``none``: the limit every GPU runs at, why, and what it leaves of the compute rate."""
    limit_w, gpu = design.gpu_power_limit_w, design.compute.gpu
    if limit_w is None:
        return "none"
    cap = design.layout_density.power_cap
    why = (
        f"to fit {design.layout_density.limit_kw:g} kW per rack"
        if cap is not None
        else "the spec's gpu_power_limit_w"
    )
    share = rate_share_at_limit(limit_w, gpu.tdp_w)
    return (
        f"{limit_w:.0f} W of {gpu.tdp_w:.0f} W TDP per GPU ({why}), {pct(share)} of its matmul rate"
    )
