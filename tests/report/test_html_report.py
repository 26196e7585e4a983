"""The HTML report: every section present, the design's own numbers shown, one file that
needs no network, and the comparison of two designs with their differences."""

from __future__ import annotations

import re

import pytest

from clusterforge.assess import QUICK, AssessOptions, GoodputOutlook, assess
from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.report.html import (
    build_comparison,
    build_report,
    render_comparison,
    render_html,
)
from clusterforge.report.html.model import money, num, pct
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES

SECTIONS = ("findings", "floor", "racks", "fabric", "cabling", "power", "busbw",
            "performance", "goodput", "bom", "tco")  # fmt: skip


@pytest.fixture(scope="module")
def design():
    return plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))


@pytest.fixture(scope="module")
def assessment(design):
    return assess(design, AssessOptions(top_plans=3, goodput_runs=50, busbw=True))


@pytest.fixture(scope="module")
def html(assessment):
    return render_html(build_report(assessment))


def test_every_section_is_present_in_order_after_the_summary(html):
    positions = [html.index(f'<section id="{s}">') for s in ("summary", *SECTIONS)]
    assert positions == sorted(positions)


def test_the_design_numbers_are_shown(design, html):
    assert f"{design.compute.num_training_gpus:,}" in html
    assert money(design.cost.capex_usd) in html
    assert f"{len(design.racks)} racks" in html
    assert f"{num(design.fabric.num_switches)} x {design.fabric.switch.name}" in html
    for finding in design.findings:
        assert finding.id in html


def test_the_predicted_mfu_is_the_expected_performance(assessment, html):
    assert f"MFU {pct(assessment.performance.prediction.mfu)}" in html


def test_the_summary_gives_the_time_to_train_with_failures(assessment, html):
    summary = html.split('id="findings"')[0]
    assert "no failures" in summary and "with failures" in summary
    goodput = assessment.goodput
    assert isinstance(goodput, GoodputOutlook)
    assert goodput.expected_days > assessment.performance.time_to_train_days
    assert f"{goodput.expected_days:,.1f} days" in summary


def test_the_page_loads_nothing_from_the_network(html):
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=", html)
    # the only URLs are the SVG and XLink namespace names, which are never fetched
    urls = set(re.findall(r"[a-z]+://[^\s\"'<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def test_charts_are_inline_svg_with_ids_unique_on_the_page(html):
    assert html.count("<svg ") >= 9
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    for ref in set(re.findall(r'(?:href="#|url\(#)([^")]+)', html)):
        assert ref in ids  # every reference inside a picture finds its own picture's part


def test_racks_section_is_the_racks_svg_drawing_with_u_numbers_and_legend(design, html):
    """One renderer for rack elevations: the page inlines the racks.svg drawing (every rack
    a group, U numbers on the side, a legend with a colour per switch role)."""
    section = re.search(r'<section id="racks">(.*?)</section>', html, flags=re.S).group(1)
    svg = re.search(r"<svg.*?</svg>", section, flags=re.S).group(0)
    assert "<?xml" not in section and "<!DOCTYPE" not in section
    drawn = set(re.findall(r'<g id="rack-(?!line-)([^"]+)"', svg))
    assert drawn == {r.name for r in design.racks}
    for label in ("U1", "U42", "leaf switch", "spine switch", "node"):
        assert f">{label}<" in svg, label


def test_user_text_is_escaped(design):
    named = design.model_copy(
        update={"spec": design.spec.model_copy(update={"name": "<script>alert(1)</script>"})}
    )
    page = render_html(build_report(assess(named, QUICK)))
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_report_without_studies_leaves_the_models_out(design):
    page = render_html(build_report(assess(design, QUICK)))
    assert '<section id="tco">' in page
    assert '<section id="performance">' not in page


def test_a_spec_without_workload_says_why_there_is_no_prediction(tmp_path):
    spec = tmp_path / "fabric.yaml"
    spec.write_text("name: fabric-only\nnum_gpus: 64\nnode: dgx-h100\n")
    report = build_report(assess(plan(load_spec(spec)), AssessOptions(goodput_runs=20)))
    performance = next(s for s in report.sections if s.id == "performance")
    assert "workload" in performance.lead and not performance.figures


def test_comparison_shows_both_designs_and_the_differences():
    a = plan(load_spec(EXAMPLES / "seed-design-a.yaml"))
    b = plan(load_spec(EXAMPLES / "seed-design-b.yaml"))
    comparison = build_comparison(assess(a, QUICK), assess(b, QUICK))
    racks = next(r for r in comparison.rows if r.label == "racks")
    assert (racks.a, racks.b) == (num(len(a.racks)), num(len(b.racks)))
    assert racks.delta.startswith(f"+{len(b.racks) - len(a.racks)}")
    assert racks.verdict == "worse"
    page = render_comparison(comparison)
    assert "seed-design-a" in page and "seed-design-b" in page
    assert "single-switch-link-aggregation" in page  # design A's finding, the why


def test_report_command_writes_one_file(tmp_path, capsys):
    out = tmp_path / "design.html"
    spec = str(EXAMPLES / "lab-8-gpu.yaml")
    assert main(["report", spec, "-o", str(out), "--no-studies"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["design.html"]  # no staging left
    assert "wrote" in capsys.readouterr().out


def test_report_command_fails_on_a_missing_folder(tmp_path, capsys):
    assert main(["report", "-o", str(tmp_path / "no" / "x.html"), "--no-studies"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_pdf_without_chromium_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no Chromium on this PATH
    out = tmp_path / "design.html"
    assert main(["report", str(EXAMPLES / "lab-8-gpu.yaml"), "-o", str(out), "--pdf"]) == 1
    err = capsys.readouterr().err
    assert "Chromium" in err and "apt-get install chromium" in err
    assert not out.exists()  # refused before planning, nothing half written


def test_one_scalable_unit_is_shown_rail_by_rail(design):
    from clusterforge.report.html.facts import rail_table

    rails = rail_table(design)
    assert len(rails.headers) == 1 + design.fabric.nics_per_node
    assert len(rails.rows) == design.fabric.connectivity.nodes_per_leaf_group
    first = rails.rows[0][1:]
    assert len(set(first)) == design.fabric.nics_per_node  # each NIC on its own rail's leaf
    assert all(row[1:] == first for row in rails.rows)  # the same rail leaves for the SU


@pytest.mark.slow
def test_the_100k_gpu_report_stays_under_10_mb():
    design = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    page = render_html(build_report(assess(design, QUICK)))
    assert len(page.encode()) < 10e6
