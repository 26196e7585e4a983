"""Report sections about money: the bill of materials and building against renting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.report.format import npv_text, payback_text
from clusterforge.report.html import charts
from clusterforge.report.html.charts import inline_svg
from clusterforge.report.html.model import Figure, Section, money, num, pct, table
from clusterforge.report.plots import tco_chart, tco_curves

if TYPE_CHECKING:
    from clusterforge.assess import Economics
    from clusterforge.design import Design

__all__ = ["bom_section", "tco_curves", "tco_section"]


def bom_section(design: Design) -> Section:
    """Capex by category (a bar chart) and every BOM line."""
    by_category = design.cost.capex_by_category_usd
    figure = charts.bar_chart(
        "capex by category",
        labels=list(by_category),
        series=[("capex ($M)", [v / 1e6 for v in by_category.values()])],
        y_title="$M",
    )
    lines = table(
        ("category", "item", "description", "quantity", "unit", "extended", "source"),
        design.bom,
        lambda b: (b.category, b.item, b.description, f"{b.quantity:,g}", money(b.unit_usd),
                   money(b.extended_usd), b.source),
        numeric=(False, False, False, True, True, True, False),
    )  # fmt: skip
    cost = design.cost
    lead = (
        f"capex {money(cost.capex_usd)} ({money(cost.capex_per_gpu_usd)} per GPU) in "
        f"{len(design.bom)} lines; opex {money(cost.opex_per_year_usd)} per year."
    )
    return Section("bom", "Bill of materials", lead, (Figure(figure, "capex"),), (lines,))


def tco_section(design: Design, economics: Economics) -> Section:
    """Build against rent over the ownership period, with the break-even figures. The lead
    sentence and the chart compare with the same rent, the verdict's offer, and say which."""
    c = design.cost
    rent_label = f"{c.rent_basis} rent"
    figure = inline_svg(tco_chart(design))
    rows = table(
        ("quantity", "value"),
        _tco_rows(design, economics),
        lambda row: row,
        numeric=(False, True),
    )
    verdict = "building wins" if c.build_wins else "renting wins"
    lead = (
        f"Over {c.years:g} years {verdict} against {rent_label} (the chart's rent line): build "
        f"{money(c.build_total_usd)} against {rent_label} {money(c.rent_total_usd)}; payback "
        f"{payback_text(c)}; net present value at {pct(c.discount_rate)}: {npv_text(c)}. "
        f"Against on-demand rent (used hours only), building breaks even at "
        f"{pct(c.break_even_utilization)} utilization."
    )
    return Section("tco", "Build vs rent", lead, (Figure(figure, "build vs rent"),), (rows,))


def _tco_rows(design: Design, economics: Economics) -> list[tuple[str, str]]:
    c = design.cost
    rows = [
        ("capex", money(c.capex_usd)),
        ("opex per year", money(c.opex_per_year_usd)),
        *((f"  opex: {k}", money(v)) for k, v in c.opex_by_category_per_year_usd.items() if v),
        ("residual value", f"-{money(c.residual_usd)}"),
        ("  residual: building", money(c.building_residual_usd)),
        ("  residual: hardware", money(c.hardware_residual_usd)),
        ("build total", money(c.build_total_usd)),
        (f"rent total ({c.rent_basis})", money(c.rent_total_usd)),
        ("payback", f"month {c.payback_months}" if c.payback_months else "none in the period"),
        (f"NPV at {pct(c.discount_rate)}", money(c.npv_usd)),
        ("used GPU-hours", num(c.used_gpu_hours)),
        ("effective build $/GPU-hour", money(c.effective_build_usd_per_gpu_hour)),
        (f"cloud $/GPU-hour ({c.rent_basis})", money(c.cloud_usd_per_gpu_hour)),
        ("break-even utilization (on-demand)", pct(c.break_even_utilization)),
    ]
    if economics.break_even_gpus is not None:
        rows.append(("break-even size (GPUs)", num(economics.break_even_gpus)))
    return rows
