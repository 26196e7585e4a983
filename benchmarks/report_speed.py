"""Speed and size of the HTML report and of the planner's re-render.

Run by hand: ``python benchmarks/report_speed.py [--examples colo-512-h100 colossus-100k-h100]
[--repeat 3] [--chromium]``. For each example spec it prints the seconds to plan, to build the
report without and with the studies (netsim busbw sweep, perf plan search, goodput Monte Carlo),
to render the page, and the page's size in MB; then the planner's time for one form change on
the first example (validate, plan, render: what ``serve`` does on each change, in-process, no
socket), best of ``--repeat``. With ``--chromium`` it also times headless Chromium loading each
page (process start included: compare with a blank page, printed first). Targets: the planner
re-renders the 512-GPU example in under 1 s; the 100,000-GPU page stays under 10 MB.
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

from clusterforge.design import plan
from clusterforge.report.html import ReportOptions, build_report, render_html
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


def report_figures(name: str, repeat: int, folder: Path, chromium: bool) -> None:
    spec = load_spec(EXAMPLES / f"{name}.yaml")
    plan_s, design = best_of(repeat, lambda: plan(spec))
    quick_s, _ = best_of(repeat, lambda: build_report(design, ReportOptions(studies=False)))
    full_s, report = best_of(1, lambda: build_report(design))
    render_s, html = best_of(repeat, lambda: render_html(report))
    page = folder / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    line = (
        f"{name:24s} plan {plan_s:6.2f} s  report quick {quick_s:6.2f} s  with studies "
        f"{full_s:6.2f} s  render {render_s:5.2f} s  size {len(html.encode()) / 1e6:5.2f} MB"
    )
    if chromium:
        line += f"  chromium {chromium_load_s(page):6.2f} s"
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.chromium:
            blank = folder / "blank.html"
            blank.write_text("<!DOCTYPE html><title>blank</title>")
            print(f"chromium, blank page: {chromium_load_s(blank):.2f} s")
        for name in args.examples:
            report_figures(name, args.repeat, folder, args.chromium)
    change_s = planner_change_s(args.examples[0], args.repeat)
    print(f"planner, one form change on {args.examples[0]}: {change_s:.2f} s (target < 1 s)")


if __name__ == "__main__":
    main()
