"""The report opened by a real browser (headless Chromium): its scripts run without errors
and draw every chart and the rack elevations, with no network at all."""

from __future__ import annotations

import itertools
import os
import re
import shutil
from pathlib import Path

import pytest

from clusterforge.assess import QUICK, AssessOptions, assess
from clusterforge.design import plan
from clusterforge.design.facility.hall import hall_of
from clusterforge.report.html import build_report, render_html
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.web.browser import chromium_or_skip, open_page, selenium_chromium

pytest.importorskip("plotly", reason="the HTML report needs the ui extra (plotly)")
pytestmark = pytest.mark.system


def _keep(path: Path) -> None:
    """Copy a screenshot to $CLUSTERFORGE_TEST_ARTIFACTS when set (CI keeps it)."""
    if folder := os.environ.get("CLUSTERFORGE_TEST_ARTIFACTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)


def test_chromium_renders_the_report_without_errors(tmp_path):
    chromium_or_skip()
    design = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    page = tmp_path / "design.html"
    page.write_text(
        render_html(
            build_report(assess(design, AssessOptions(top_plans=5, goodput_runs=50, busbw=True)))
        )
    )
    run = open_page(page.as_uri(), screenshot=tmp_path / "report-colo-512.png")
    assert run.console == []  # no script errors, no warnings
    num_charts = page.read_text().count("Plotly.newPlot")
    assert run.dom.count('class="main-svg"') >= num_charts >= 7  # plotly drew every chart
    for section in ("racks", "floor", "fabric"):  # matplotlib's pictures, inlined
        assert re.search(rf'<section id="{section}">.*?<svg', run.dom, flags=re.S), section
    drawn_racks = set(re.findall(r'<g id="rack-(?!line-)([^"]+)"', run.dom))
    assert drawn_racks == {r.name for r in design.racks}  # the racks.svg drawing, every rack
    assert run.screenshot is not None and run.screenshot.stat().st_size > 10_000
    _keep(run.screenshot)


SECTIONS = ("summary", "findings", "floor", "racks", "fabric", "cabling", "power", "busbw",
            "performance", "goodput", "bom", "tco")  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    chrome = selenium_chromium(width=1400)
    chrome.set_page_load_timeout(300)
    yield chrome
    chrome.quit()


@pytest.mark.slow
def test_the_100k_gpu_report_opens_whole_without_errors(tmp_path, browser):
    from selenium.webdriver.common.by import By

    design = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    page = tmp_path / "colossus.html"
    options = AssessOptions(top_plans=2, goodput_runs=50, busbw=True)
    page.write_text(render_html(build_report(assess(design, options))))
    assert page.stat().st_size < 10e6
    browser.get(page.as_uri())  # returns after the load event: every inline script has run
    assert browser.get_log("browser") == []  # no script errors, no warnings
    for section in SECTIONS:
        heading = browser.find_element(By.CSS_SELECTOR, f"section#{section} h2")
        assert heading.text, section
    num_charts = page.read_text().count("Plotly.newPlot")
    drawn = browser.execute_script("return document.querySelectorAll('.main-svg').length")
    assert drawn >= num_charts >= 7
    for section in ("racks", "floor", "fabric"):  # matplotlib's pictures, inlined
        assert browser.find_elements(By.CSS_SELECTOR, f"section#{section} figure svg"), section
    # one rack of each layout, drawn as in racks.svg, with U numbers
    racks = browser.find_elements(By.CSS_SELECTOR, "section#racks svg g[id^='rack-r']")
    assert 1 <= len(racks) <= 200
    # the rack table (thousands of rows) is built when opened, every rack in it
    details = browser.find_element(By.CSS_SELECTOR, "section#racks details")
    assert details.find_elements(By.CSS_SELECTOR, "tbody tr") == []
    details.find_element(By.TAG_NAME, "summary").click()
    rows = details.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == len(design.racks)
    assert rows[0].find_elements(By.TAG_NAME, "td")[0].text == design.racks[0].name
    shot = tmp_path / "report-colossus-100k.png"
    browser.save_screenshot(str(shot))
    _keep(shot)


# --- the pictures, measured where the reader sees them ---------------------------------------

_RAIL_STROKES = """
const strokes = {};
document.querySelectorAll("section#fabric svg g[id^='link-node-']").forEach((g) => {
  const rail = g.id.match(/-rail-(\\d+)$/);
  const path = g.querySelector("path");
  if (rail && path) { (strokes[rail[1]] ||= new Set()).add(getComputedStyle(path).stroke); }
});
return Object.fromEntries(Object.entries(strokes).map(([k, v]) => [k, [...v]]));
"""
_STACK = """
const rack = arguments[0];
return [...document.querySelectorAll(`section#racks svg g[id^='device-${rack}-']`)].map((g) => {
  const box = g.getBoundingClientRect();
  return [g.id.slice(`device-${rack}-`.length), box.bottom];
});
"""
_HALL = """
const box = document.querySelector("section#floor svg g#hall path").getBoundingClientRect();
return [box.width, box.height];
"""


def _tiers(design) -> set[str]:
    c = design.fabric.connectivity
    tiers = {"router" if c.kind == "dragonfly" else "leaf"} if c.num_leaves else set()
    return tiers | ({"spine"} if c.num_spines else set()) | ({"core"} if c.num_cores else set())


def _stack_runs(devices: list[list]) -> list[tuple[str, int]]:
    """Runs of device kinds from the rack's bottom up (largest screen y first)."""
    kinds = []
    for name, _ in sorted(devices, key=lambda d: -d[1]):
        kind = ("shelf" if name.startswith("shelf-") else "nvlink" if name.startswith("nvlink-")
                else "tray" if name.startswith("gpu-") else None)  # fmt: skip
        if kind:
            kinds.append(kind)
    return [(k, len(list(g))) for k, g in itertools.groupby(kinds)]


@pytest.mark.parametrize(
    "example",
    [pytest.param(p.name, marks=pytest.mark.slow) if p.name.startswith("colossus") else p.name
     for p in sorted(EXAMPLES.glob("*.yaml"))],
)  # fmt: skip
def test_the_pictures_read_right_in_chromium(tmp_path, browser, example):
    """Per example: no console message; the fabric diagram has a box for every switch tier and
    one distinct colour per rail; a GB200 NVL72 rack stands as the vendor builds it (NVIDIA
    DGX GB200 User Guide, "Hardware": shelves, 8 trays, 9 switch trays, 10 trays, shelves);
    the floor drawn on screen has the hall's aspect ratio."""
    from selenium.webdriver.common.by import By

    design = plan(load_spec(EXAMPLES / example))
    page = tmp_path / "report.html"
    page.write_text(render_html(build_report(assess(design, QUICK))))
    browser.get(page.as_uri())
    assert browser.get_log("browser") == []
    for tier in _tiers(design):
        found = browser.find_elements(By.CSS_SELECTOR, f"section#fabric svg g[id^='box-{tier}-']")
        assert found, f"{example}: no {tier} in the fabric diagram"
    c = design.fabric.connectivity
    if c.rail_optimized:
        strokes = browser.execute_script(_RAIL_STROKES)
        assert sorted(map(int, strokes)) == list(range(1, c.nics_per_node + 1))
        assert all(len(s) == 1 for s in strokes.values())
        assert len({s[0] for s in strokes.values()}) == c.nics_per_node
    if design.compute.node.rack_scale_nodes:
        rack = next(r for r in design.racks if r.role == "gpu")
        runs = _stack_runs(browser.execute_script(_STACK, rack.name))
        assert runs == [("shelf", 4), ("tray", 8), ("nvlink", 9), ("tray", 10), ("shelf", 4)]
    width, height = browser.execute_script(_HALL)
    hall = hall_of(design.racks, design.spec.facility)
    assert width / height == pytest.approx(hall.aspect_ratio, rel=0.03)
    shot = tmp_path / f"pictures-{example}.png"
    browser.save_screenshot(str(shot))
    _keep(shot)
