"""Speed and size of the HTML report and of the planner's re-render.

Run by hand: ``python benchmarks/report_speed.py [--examples colo-512-h100 colossus-100k-h100]
[--repeat 3] [--chromium] [--planner colo-512-h100]``. For each example spec it prints the
seconds to plan, to build the report without and with the studies (netsim busbw sweep, perf plan
search, goodput Monte Carlo), to render the page, the page's size in MB and its number of
table rows in the HTML, best of ``--repeat``; the report is built with no picture kept from an
earlier build (as the CLI builds it). Then the planner's time for each of a few form changes on
the ``--planner`` example (validate, plan, render: what ``serve`` does on each change, in-process, no socket) and
how many pictures each drew: the planner keeps drawn pictures by what they show
(:mod:`clusterforge.report.picture_cache`), so a change redraws only the pictures it alters.

With ``--chromium`` it also opens each page in headless Chromium: a fresh ``--dump-dom``
process (process start included), and a browser driven by Selenium whose load event (every
inline script run) and its first contentful paint it times from the page's navigation and paint
timing, on the first load in a new browser (as a reader opening the file meets it) and at best
of ``--repeat`` loads more; with the page's elements and console errors. A blank page is timed
first: what any page costs at least. A busy machine stretches every browser figure: read them
against it. Targets: a typical report (the 512-GPU example) under 1 MB and painted in under
1 s; the planner re-renders it in under 1 s; the 100,000-GPU page opens in under 5 s and stays
under 10 MB.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.assess import QUICK, REPORT, Assessment, assess
from clusterforge.design import plan
from clusterforge.report.figure_file import PICTURES
from clusterforge.report.html import Report, build_report, render_html
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def cold_report(assessment: Assessment) -> Report:
    """The report as the CLI builds it, once in a process: every picture drawn, none kept
    from an earlier build."""
    PICTURES.clear()
    return build_report(assessment)


def best_of(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs, seconds, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def chromium_load_s(page: Path) -> float:
    """Seconds for headless Chromium to load ``page`` and dump its DOM (after the load event)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    assert binary, "chromium is not installed"
    start = time.perf_counter()
    subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True, timeout=300, check=True,
    )  # fmt: skip
    return time.perf_counter() - start


def _driver() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    driver.set_page_load_timeout(300)
    driver.set_script_timeout(10)
    return driver


# Seconds from navigation to the first contentful paint (Paint Timing, W3C; waited for, as a
# fast page may paint after its load event) and to the end of the load event (Navigation
# Timing).
_TIMES_JS = """
var done = arguments[arguments.length - 1];
var t = performance.timing;
var load = (t.loadEventEnd - t.navigationStart) / 1000;
var answer = function (paint) { done([paint, load]); };
new PerformanceObserver(function (list) {
  var fcp = list.getEntriesByName("first-contentful-paint");
  if (fcp.length) { answer(fcp[0].startTime / 1000); }
}).observe({type: "paint", buffered: true});
setTimeout(function () { answer(-1); }, 5000);
"""


def _load_s(driver: Any, page: Path) -> tuple[float, float]:
    """(first contentful paint, load event end), seconds from navigation."""
    driver.get(page.as_uri())  # returns after the load event: every inline script has run
    paint_s, load_s = driver.execute_async_script(_TIMES_JS)
    return float(paint_s), float(load_s)


@dataclass(frozen=True)
class BrowserLoad:
    """One page in headless Chromium: first paint and load event on the first load in a new
    browser and at best of the repeats, its elements and console errors and warnings."""

    first_paint_s: float
    first_load_s: float
    again_paint_s: float
    again_load_s: float
    num_elements: int
    num_errors: int


def selenium_load(page: Path, repeat: int) -> BrowserLoad:
    """Headless Chromium driven by Selenium loading ``page``: the first load in a new browser
    (every script compiled from scratch, as a reader opening the file meets it) and the best
    of ``repeat`` loads more."""
    driver = _driver()
    try:
        first = _load_s(driver, page)
        again = []
        for _ in range(repeat):
            driver.get("about:blank")
            again.append(_load_s(driver, page))
        elements = driver.execute_script("return document.getElementsByTagName('*').length")
        errors = [m for m in driver.get_log("browser") if m["level"] in ("SEVERE", "WARNING")]
        best = min(again)
        return BrowserLoad(first[0], first[1], best[0], best[1], int(elements), len(errors))
    finally:
        driver.quit()


def baselines(folder: Path, repeat: int) -> None:
    """A blank page: what any page costs at least on this machine."""
    blank = folder / "blank.html"
    blank.write_text("<!DOCTYPE html><title>blank</title><p>blank</p>")
    load = selenium_load(blank, repeat)
    print(f"chromium, blank page: fresh process {chromium_load_s(blank):.2f} s, first paint "
          f"{_seconds(load.first_paint_s)}, load event first {load.first_load_s:.2f} s, again "
          f"{load.again_load_s:.2f} s", flush=True)  # fmt: skip


def _seconds(value: float) -> str:
    """Seconds, or "not recorded" where Chromium kept no paint entry (-1)."""
    return f"{value:.2f} s" if value >= 0 else "not recorded"


def report_figures(name: str, repeat: int, folder: Path, chromium: bool) -> None:
    spec = load_spec(EXAMPLES / f"{name}.yaml")
    plan_s, design = best_of(repeat, lambda: plan(spec))
    quick_s, _ = best_of(repeat, lambda: cold_report(assess(design, QUICK)))
    full_s, report = best_of(1, lambda: cold_report(assess(design, REPORT)))
    render_s, html = best_of(repeat, lambda: render_html(report))
    page = folder / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    line = (
        f"{name:24s} plan {plan_s:6.2f} s  report quick {quick_s:6.2f} s  with studies "
        f"{full_s:6.2f} s  render {render_s:5.2f} s  size {len(html.encode()) / 1e6:5.2f} MB  "
        f"<tr> {html.count('<tr>'):,}"
    )
    if chromium:
        load = selenium_load(page, repeat)
        line += (
            f"\n{'':24s} chromium: fresh process {chromium_load_s(page):.2f} s, first paint "
            f"{_seconds(load.first_paint_s)} (target < 1 s), again "
            f"{_seconds(load.again_paint_s)}; load "
            f"event first {load.first_load_s:.2f} s, again {load.again_load_s:.2f} s; "
            f"{load.num_elements:,} elements, {load.num_errors} console errors"
        )
    print(line, flush=True)


# Form changes the planner meets, each from the state the one before left: a rack power that
# repacks the racks (every design picture and the power charts change), a staff cost (only the
# build-vs-rent chart changes), then the first rack power again (every picture drawn before).
PLANNER_CHANGES = (
    ("facility.max_rack_kw", "30"),
    ("facility.max_rack_kw", "20"),
    ("economics.staff_usd_per_year", "300000"),
    ("economics.staff_usd_per_year", "350000"),
    ("facility.max_rack_kw", "30"),
)


def planner_changes(name: str) -> list[tuple[str, float, int]]:
    """Form changes (:data:`PLANNER_CHANGES`) through the planner app, in-process: for each,
    the field and value, the seconds to post it and fetch the report, and the pictures drawn
    (not found in :data:`~clusterforge.report.figure_file.PICTURES`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from clusterforge.web.app import create_app
    from clusterforge.web.form import form_sections

    spec = load_spec(EXAMPLES / f"{name}.yaml")
    values = {f.path: "" if f.value is None else f.value
              for s in form_sections(spec) for f in s.fields}  # fmt: skip
    enabled = {"workload": spec.workload is not None}
    figures = []
    with TestClient(create_app(spec), base_url="http://127.0.0.1") as client:
        for path, value in PLANNER_CHANGES:
            values[path] = value
            misses = PICTURES.misses
            start = time.perf_counter()
            answer = client.post("/api/form", json={"values": values, "enabled": enabled})
            assert answer.json()["ok"]
            client.get("/report.html")
            seconds = time.perf_counter() - start
            figures.append((f"{path}={value}", seconds, PICTURES.misses - misses))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=["colo-512-h100", "colossus-100k-h100"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chromium", action="store_true")
    parser.add_argument("--planner", default="colo-512-h100", help="example for the form change")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.chromium:
            baselines(folder, args.repeat)
        for name in args.examples:
            report_figures(name, args.repeat, folder, args.chromium)
    print(f"planner, form changes on {args.planner} (target < 1 s each):")
    for change, seconds, drawn in planner_changes(args.planner):
        print(f"  {change:36s} {seconds:5.2f} s  {drawn} picture(s) drawn")


if __name__ == "__main__":
    main()
