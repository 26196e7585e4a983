"""busbw chart: valid SVG, one polyline per design, points ordered by message size."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from clusterforge.cli.main import main
from clusterforge.report.plots import Series, busbw_chart_svg
from tests.conftest import EXAMPLES

NS = {"svg": "http://www.w3.org/2000/svg"}


def test_one_polyline_per_series_with_higher_bandwidth_drawn_higher():
    sizes = [2**20, 2**24, 2**30]
    svg = busbw_chart_svg("t", [Series("a", sizes, [1, 10, 20]), Series("b", sizes, [1, 20, 40])])
    lines = ET.fromstring(svg).findall(".//svg:polyline", NS)
    assert [line.get("data-label") for line in lines] == ["a", "b"]
    ya = [float(p.split(",")[1]) for p in lines[0].get("points", "").split()]
    yb = [float(p.split(",")[1]) for p in lines[1].get("points", "").split()]
    assert yb[-1] < ya[-1]  # SVG y grows downwards: b's 40 GB/s sits above a's 20
    xs = [float(p.split(",")[0]) for p in lines[0].get("points", "").split()]
    assert xs == sorted(xs)


def test_simulate_writes_the_chart(tmp_path, capsys):
    out = tmp_path / "chart.svg"
    a, b = EXAMPLES / "seed-design-a.yaml", EXAMPLES / "seed-design-b.yaml"
    code = main(
        ["simulate", str(a), "--vs", str(b), "--size", "64MiB", "--json", "--plot", str(out)]
    )
    assert code == 0
    labels = [p.get("data-label") for p in ET.parse(out).getroot().findall(".//svg:polyline", NS)]
    assert labels == ["seed-design-a", "seed-design-b"]


def test_tco_chart_ends_at_the_cost_model_totals():
    from clusterforge.design import plan
    from clusterforge.report.files import tco_svg
    from clusterforge.spec import default_spec

    design = plan(default_spec())
    svg = tco_svg(design)
    assert f"build: ${design.cost.build_total_usd / 1e6:,.1f}M" in svg
    assert f"rent: ${design.cost.rent_total_usd / 1e6:,.1f}M" in svg
    lines = {p.get("data-label"): p for p in ET.fromstring(svg).findall(".//svg:polyline", NS)}
    build_y = [float(p.split(",")[1]) for p in lines["build"].get("points", "").split()]
    rent_y = [float(p.split(",")[1]) for p in lines["rent"].get("points", "").split()]
    assert build_y[0] < rent_y[0]  # capex up front: building starts above renting's zero
    assert build_y[-1] > build_y[-2]  # resale value at the end lowers the build total
