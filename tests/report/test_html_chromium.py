"""The report opened by a real browser (headless Chromium): its scripts run without errors
and draw every chart and the rack elevations, with no network at all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clusterforge.design import plan
from clusterforge.report.html import ReportOptions, build_report, render_html
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.web.browser import chromium_or_skip, open_page

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
    page.write_text(render_html(build_report(design, ReportOptions(goodput_runs=50))))
    run = open_page(page.as_uri(), screenshot=tmp_path / "report-colo-512.png")
    assert run.console == []  # no script errors, no warnings
    num_charts = page.read_text().count("Plotly.newPlot")
    assert run.dom.count('class="main-svg"') >= num_charts >= 9  # plotly drew every chart
    assert run.dom.count('class="rack"') == sum(1 for r in design.racks if r.row == 1)
    assert run.screenshot is not None and run.screenshot.stat().st_size > 10_000
    _keep(run.screenshot)
