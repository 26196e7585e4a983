"""The report opened by a real browser (headless Chromium): its scripts run without errors,
every section shows its pictures and the rack elevations, with no network at all; and the
report printed to PDF by Chromium holds every section, every table and every rack."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
from pathlib import Path

import pytest

from clusterforge.assess import QUICK, AssessOptions, assess
from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.design.facility.hall import hall_of
from clusterforge.report.html import build_report, model, render_html
from clusterforge.report.html.pdf import print_pdf
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.web.browser import chromium_or_skip, selenium_chromium

pytestmark = pytest.mark.system

SECTIONS = ("summary", "findings", "floor", "racks", "fabric", "cabling", "power", "busbw",
            "performance", "goodput", "bom", "tco")  # fmt: skip
# a table longer than this is built by the page's script; the print must build it too
SHORT_LAZY_ROWS = 40


def _keep(path: Path) -> None:
    """Copy a screenshot or PDF to $CLUSTERFORGE_TEST_ARTIFACTS when set (CI keeps it)."""
    if folder := os.environ.get("CLUSTERFORGE_TEST_ARTIFACTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(folder) / path.name)


@pytest.fixture(scope="module")
def design():
    return plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))


@pytest.fixture(scope="module")
def report(design):
    return build_report(assess(design, AssessOptions(top_plans=5, goodput_runs=50, busbw=True)))


@pytest.fixture(scope="module")
def page(report, tmp_path_factory):
    """The colo report's page, its tables of every rack (76 rows) built by the page's script
    as a long table's are."""
    path = tmp_path_factory.mktemp("report") / "design.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model, "LAZY_ROWS", SHORT_LAZY_ROWS)
        path.write_text(render_html(report), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    chrome = selenium_chromium(width=1400)
    chrome.set_page_load_timeout(300)
    yield chrome
    chrome.quit()


# per section: its heading, its pictures and how many of them were laid out with a size
_SECTION_JS = """
return Array.from(document.querySelectorAll("main section[id]")).map(function (s) {
  var svgs = Array.from(s.querySelectorAll("figure svg"));
  var drawn = svgs.filter(function (g) { var b = g.getBoundingClientRect();
                                         return b.width > 200 && b.height > 50; });
  return [s.id, s.querySelector("h2").textContent, s.querySelectorAll("figure").length,
          drawn.length];
});
"""


def test_every_section_renders_in_chromium_without_console_errors(
    design, report, page, browser, tmp_path
):
    browser.get(page.as_uri())  # returns after the load event: every inline script has run
    assert browser.get_log("browser") == []  # no script errors, no warnings
    shown = {sid: (title, figures, drawn) for sid, title, figures, drawn in
             browser.execute_script(_SECTION_JS)}  # fmt: skip
    assert list(shown) == list(SECTIONS)
    for section in report.sections:
        title, figures, drawn = shown[section.id]
        assert title == section.title
        assert figures == drawn == len(section.figures), section.id  # every picture laid out
    shot = tmp_path / "report-colo-512.png"
    browser.save_screenshot(str(shot))
    _keep(shot)


def test_the_printed_pdf_holds_every_section_table_and_rack(design, report, page, tmp_path):
    pypdf = pytest.importorskip("pypdf", reason="pypdf reads the PDF's text (test extra)")
    chromium_or_skip()
    pdf = print_pdf(page, tmp_path / "design.pdf")
    _keep(pdf)
    pages = [p.extract_text() for p in pypdf.PdfReader(pdf).pages]
    text = "\n".join(pages)
    # a section per page at least, each section's title; the title and "page n of N" in
    # the margins of every page
    assert len(pages) > len(report.sections)
    for section in report.sections:
        assert section.title in text, section.id
    for n, words in enumerate(pages, 1):
        assert f"page {n} of {len(pages)}" in words
        assert report.title.split(":")[0] in words
    # every collapsed table printed open and filled: the floor, racks and power tables (built
    # by the script) name every rack
    assert page.read_text().count('class="table-rows"') >= 3
    for rack in design.racks:
        assert text.count(rack.name) >= 3, rack.name


def test_report_pdf_command_writes_both_files_readable_by_all(tmp_path, capsys):
    pypdf = pytest.importorskip("pypdf", reason="pypdf reads the PDF's text (test extra)")
    chromium_or_skip()
    out = tmp_path / "lab.html"
    old = os.umask(0o022)
    try:
        args = ["report", str(EXAMPLES / "lab-8-gpu.yaml"), "-o", str(out), "--no-studies"]
        assert main([*args, "--pdf"]) == 0
    finally:
        os.umask(old)
    pdf = tmp_path / "lab.pdf"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.html", "lab.pdf"]
    for path in (out, pdf):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644  # as every other output
    assert "Bill of materials" in "".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    assert f"wrote {pdf}" in capsys.readouterr().out


@pytest.mark.slow
def test_the_100k_gpu_report_opens_whole_without_errors(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    design = plan(load_spec(EXAMPLES / "colossus-100k-h100.yaml"))
    page = tmp_path / "colossus.html"
    options = AssessOptions(top_plans=2, goodput_runs=50, busbw=True)
    page.write_text(render_html(build_report(assess(design, options))))
    assert page.stat().st_size < 10e6
    browser.get(page.as_uri())  # returns after the load event: every inline script has run
    assert browser.get_log("browser") == []  # no script errors, no warnings
    shown = browser.execute_script(_SECTION_JS)
    assert [sid for sid, *_ in shown] == list(SECTIONS)
    for sid, title, figures, drawn in shown:
        assert title and figures == drawn, sid
    # one rack of each layout, drawn as in racks.svg, with U numbers
    racks = browser.find_elements(By.CSS_SELECTOR, "section#racks svg g[id^='rack-r']")
    assert 1 <= len(racks) <= 200
    # the rack table (thousands of rows) is built when opened, every rack in it
    details = browser.find_element(By.CSS_SELECTOR, "section#racks details")
    assert details.find_elements(By.CSS_SELECTOR, "tbody tr") == []
    details.find_element(By.TAG_NAME, "summary").click()
    # the browser fires "toggle" as a queued task after the click returns (HTML Living
    # Standard, "details notification task steps"): wait for the handler to fill the table
    WebDriverWait(browser, 60).until(
        lambda b: details.find_elements(By.CSS_SELECTOR, "tbody tr"), "rack table never built"
    )
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
