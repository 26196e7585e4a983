"""Money in the terminal summary, design.json and the HTML report: the build total's parts
(the residual on its own line), the payback month and the present value, one money format
everywhere, differences of percentages in percentage points, and the bandwidth chart's size
axis in the table's binary units."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from clusterforge.assess import QUICK, assess
from clusterforge.design import plan
from clusterforge.report.files import design_json
from clusterforge.report.format import money, pct, size_label
from clusterforge.report.terminal import design_tables, make_console
from tests.conftest import make_spec


@pytest.fixture(scope="module")
def design():
    """A self-built site (its building is capex, 80 % of it residual after 4 of 20 years)."""
    return plan(make_spec(num_gpus=256, facility={"colo_usd_per_kw_month": 0}))


@pytest.fixture(scope="module")
def terminal(design) -> str:
    console = make_console()
    with console.capture() as captured:
        console.print(design_tables(design))
    return captured.get()


def _line(text: str, key: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(key))


def test_terminal_shows_the_residual_subtracted_from_the_build_total(design, terminal):
    c = design.cost
    residual = _line(terminal, "residual value")
    assert f"-{money(c.residual_usd)}" in residual
    assert money(c.building_residual_usd) in residual and money(c.hardware_residual_usd) in residual
    build = _line(terminal, f"build, {c.years:g} years")
    assert money(c.build_total_usd) in build
    assert "capex + 4 x opex - residual" in build


def test_terminal_shows_payback_and_present_value(design, terminal):
    c = design.cost
    assert c.payback_months is not None
    assert f"month {c.payback_months}" in _line(terminal, "payback")
    npv = _line(terminal, f"NPV at {pct(c.discount_rate)}")
    assert money(abs(c.npv_usd)) in npv
    assert "building" in _line(terminal, "opex per year")


def test_json_carries_the_residual_parts_payback_and_npv(design):
    cost = json.loads(design_json(design))["cost"]
    assert cost["residual_usd"] == pytest.approx(
        cost["building_residual_usd"] + cost["hardware_residual_usd"]
    )
    assert cost["payback_months"] == design.cost.payback_months
    assert cost["npv_usd"] == pytest.approx(design.cost.npv_usd)
    assert cost["discount_rate"] == design.spec.economics.discount_rate
    assert cost["opex_by_category_per_year_usd"]["building"] > 0


def test_one_money_format_in_the_terminal(design, terminal):
    # no "$1,234.56M": amounts past a thousand million are written in billions, as in the
    # HTML report, and every amount has the shape money() gives it
    assert not re.search(r"\$\d{1,3}(,\d{3})+\.\d+M", terminal)
    assert money(design.cost.capex_usd) in _line(terminal, "capex total")
    for category, usd in design.cost.capex_by_category_usd.items():
        assert _line(terminal, f"capex {category} ").split()[-1] == money(usd)
    for amount in re.findall(r"\$\d{1,3}(?:,\d{3})*(?:\.\d+)?[MB]?", terminal):
        assert re.fullmatch(r"\$\d{1,3}\.\d\d[MB]|\$\d{1,3}(,\d{3})*(\.\d\d)?", amount), amount


@pytest.fixture(scope="module")
def tco(design):
    from clusterforge.report.html.money import tco_section

    return tco_section(design, assess(design, QUICK).economics)


def test_html_table_shows_the_residual_and_its_parts(design, tco):
    rows = dict(tco.tables[0].rows)
    c = design.cost
    assert rows["residual value"] == f"-{money(c.residual_usd)}"
    assert rows["  residual: building"] == money(c.building_residual_usd)
    assert rows["  residual: hardware"] == money(c.hardware_residual_usd)
    assert rows["payback"] == f"month {c.payback_months}"
    assert money(abs(c.npv_usd)) in rows[f"NPV at {pct(c.discount_rate)}"]


def test_html_lead_uses_the_charts_rent_and_the_terminals_money(design, tco, terminal):
    from clusterforge.report.html.money import tco_curves

    c = design.cost
    _, _, rent = tco_curves(design)
    assert rent[-1] * 1e6 == pytest.approx(c.rent_total_usd)  # the chart's rent line
    assert f"{c.rent_basis} rent {money(c.rent_total_usd)}" in tco.lead
    assert f"rent ({c.rent_basis})" in tco.figures[0].html
    # the break-even utilization compares with on-demand rent, and says so
    assert (
        f"Against on-demand rent (used hours only), building breaks even at "
        f"{pct(c.break_even_utilization)} utilization" in tco.lead
    )
    assert money(c.build_total_usd) in tco.lead and money(c.build_total_usd) in terminal
    # the same break-even utilization in both views
    assert pct(c.break_even_utilization) in _line(terminal, "verdict")


def test_html_payback_is_where_the_chart_curves_cross(design):
    from clusterforge.report.html.money import tco_curves

    c = design.cost
    years, build, rent = tco_curves(design)
    month = c.payback_months
    assert month is not None
    at = {round(y * 12, 6): (b, r) for y, b, r in zip(years, build, rent, strict=True)}
    if month < c.years * 12:
        b, r = at[month]
        assert b < r
        before = at.get(month - 1)
        if before is not None:
            assert before[0] >= before[1]


def test_differences_of_percentages_are_in_percentage_points():
    from clusterforge.report.html.compare import ROWS, _pair_row

    row = next(r for r in ROWS if r.label == "break-even utilization")
    delta = _pair_row(row, 0.40, 0.55)
    assert delta.delta == "+15.0 pp"
    assert "%" not in delta.delta


def test_bandwidth_chart_and_table_share_binary_units():
    from clusterforge.report.html.studies import busbw_section

    sizes = [2.0**k for k in range(10, 34, 2)]  # 1 KiB to 4 GiB
    results = tuple(
        SimpleNamespace(size_bytes=s, algorithm="ring", protocol="simple", time_s=1e-3,
                        algbw_gbyte_per_s=1.0, busbw_gbyte_per_s=2.0, num_ranks=64)
        for s in sizes
    )  # fmt: skip
    section = busbw_section([SimpleNamespace(name="a", results=results)])
    chart = section.figures[0].html
    for label in ("1 KiB", "1 MiB", "1 GiB"):
        assert f">{label}</text>" in chart  # tick labels written out, no SI "1G"/"1B"
    table = section.tables[0]
    assert table.headers[0] == "size"
    assert [row[0] for row in table.rows] == [size_label(s) for s in sizes]
