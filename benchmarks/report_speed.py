"""Speed and size of the HTML report and of the planner's re-render.

Run by hand: ``python benchmarks/report_speed.py [--examples colo-512-h100 colossus-100k-h100]
[--repeat 3] [--chromium] [--planner colo-512-h100]``. For each example spec it prints the
seconds to plan, to build the report without and with the studies (netsim busbw sweep, perf plan
search, goodput Monte Carlo), to render the page, the page's size in MB and its number of
table rows in the HTML; then the planner's time for one form change on the ``--planner``
example (validate, plan, render: what ``serve`` does on each change, in-process, no socket),
best of ``--repeat``.

With ``--chromium`` it also opens each page in headless Chromium: a fresh ``--dump-dom``
process (process start included), and a browser driven by Selenium whose load event (every
inline script run, every chart drawn) it times from the page's navigation timing, on the first
load in a new browser (plotly.js compiled from scratch, as a reader opening the file meets it)
and at best of ``--repeat`` loads more; with the page's elements and console errors. A blank
page and a page holding only plotly.js are timed first: what any report costs at least. A busy
machine stretches every browser figure: read them against those two. Targets: the planner
re-renders the 512-GPU example in under 1 s; the 100,000-GPU page opens in under 5 s and stays
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
from pathlib import Path
from typing import Any

from clusterforge.assess import QUICK, REPORT, assess
from clusterforge.design import plan
from clusterforge.report.html import build_report, render_html
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


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
    return driver


def _load_event_s(driver: Any, page: Path) -> float:
    driver.get(page.as_uri())  # returns after the load event: every inline script has run
    return float(driver.execute_script(
        "var t = performance.timing; return (t.loadEventEnd - t.navigationStart) / 1000;"
    ))  # fmt: skip


def selenium_load(page: Path, repeat: int) -> tuple[float, float, int, int]:
    """Headless Chromium driven by Selenium loading ``page``, from navigation to the end of
    the load event: the first load in a new browser (plotly.js compiled from scratch, as a
    reader opening the file meets it) and the best of ``repeat`` loads more; the page's
    elements and its console errors and warnings."""
    driver = _driver()
    try:
        first_s = _load_event_s(driver, page)
        again_s = []
        for _ in range(repeat):
            driver.get("about:blank")
            again_s.append(_load_event_s(driver, page))
        elements = driver.execute_script("return document.getElementsByTagName('*').length")
        errors = [m for m in driver.get_log("browser") if m["level"] in ("SEVERE", "WARNING")]
        return first_s, min(again_s), int(elements), len(errors)
    finally:
        driver.quit()


def baselines(folder: Path, repeat: int) -> None:
    """A blank page and a page holding plotly.js alone: what any report costs at least."""
    from clusterforge.report.html.render import page_assets

    blank, plotly = folder / "blank.html", folder / "plotly-only.html"
    blank.write_text("<!DOCTYPE html><title>blank</title>")
    plotly.write_text(
        f"<!DOCTYPE html><title>plotly.js</title><script>{page_assets()['plotly_js']}</script>"
    )
    for name, page in (("blank page", blank), ("plotly.js alone", plotly)):
        first_s, again_s, _, _ = selenium_load(page, repeat)
        print(f"chromium, {name}: fresh process {chromium_load_s(page):.2f} s, load event "
              f"first {first_s:.2f} s, again {again_s:.2f} s", flush=True)  # fmt: skip


def report_figures(name: str, repeat: int, folder: Path, chromium: bool) -> None:
    spec = load_spec(EXAMPLES / f"{name}.yaml")
    plan_s, design = best_of(repeat, lambda: plan(spec))
    quick_s, _ = best_of(repeat, lambda: build_report(assess(design, QUICK)))
    full_s, report = best_of(1, lambda: build_report(assess(design, REPORT)))
    render_s, html = best_of(repeat, lambda: render_html(report))
    page = folder / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    line = (
        f"{name:24s} plan {plan_s:6.2f} s  report quick {quick_s:6.2f} s  with studies "
        f"{full_s:6.2f} s  render {render_s:5.2f} s  size {len(html.encode()) / 1e6:5.2f} MB  "
        f"<tr> {html.count('<tr>'):,}"
    )
    if chromium:
        first_s, again_s, elements, errors = selenium_load(page, repeat)
        line += (
            f"\n{'':24s} chromium: fresh process {chromium_load_s(page):.2f} s, load event "
            f"first {first_s:.2f} s (target < 5 s), again {again_s:.2f} s; {elements:,} "
            f"elements, {errors} console errors"
        )
    print(line, flush=True)


def planner_change_s(name: str, repeat: int) -> float:
    """One form change through the planner app, in-process: best of ``repeat`` seconds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from clusterforge.web.app import create_app
    from clusterforge.web.form import form_sections

    spec = load_spec(EXAMPLES / f"{name}.yaml")
    values = {f.path: "" if f.value is None else f.value
              for s in form_sections(spec) for f in s.fields}  # fmt: skip
    enabled = {"workload": spec.workload is not None}
    with TestClient(create_app(spec)) as client:
        kw = iter(range(20, 20 + 10 * repeat, 10))

        def change() -> None:
            values["facility.max_rack_kw"] = str(next(kw))
            assert client.post("/api/form", json={"values": values, "enabled": enabled}).json()[
                "ok"
            ]
            client.get("/report.html")

        return best_of(repeat, change)[0]


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
    change_s = planner_change_s(args.planner, args.repeat)
    print(f"planner, one form change on {args.planner}: {change_s:.2f} s (target < 1 s)")


if __name__ == "__main__":
    main()
