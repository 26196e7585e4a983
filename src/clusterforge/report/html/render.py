"""Assemble and render the HTML report of one design, or of two side by side.

:func:`build_report` gathers the sections (reading the design, running the simulator, the
performance model and the goodput Monte Carlo); :func:`render_html` places them into the
Jinja2 template with ``StrictUndefined``, plotly.js and the page's own script inlined so the
file needs no network.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from clusterforge.errors import SpecError
from clusterforge.report.html import facts, money, studies
from clusterforge.report.html.charts import plotly_js
from clusterforge.report.html.model import Metric, Section, num, pct, script_safe

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = ["Report", "ReportOptions", "build_report",
    "check_page_path", "page_assets", "render_html", "template_env",
           "write_page"]  # fmt: skip


@dataclass(frozen=True)
class ReportOptions:
    """What a report runs beyond reading the design: the models cost seconds, so a live
    preview may leave them out (``studies=False``)."""

    studies: bool = True
    top_plans: int = 5
    goodput_runs: int = 200


@dataclass(frozen=True)
class Report:
    """Everything the report page shows, formatted."""

    title: str
    subtitle: str
    metrics: tuple[Metric, ...]
    sections: tuple[Section, ...]
    elevation_json: str


@functools.cache
def template_env() -> jinja2.Environment:
    """The report's Jinja2 environment: templates from package data, autoescaped, strict."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterforge.report.html", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def page_assets() -> dict[str, str]:
    """The page's inlined assets: stylesheet, elevation viewer and plotly.js."""
    folder = resources.files("clusterforge.report.html") / "templates"
    return {
        "css": (folder / "report.css").read_text(encoding="utf-8"),
        "script": (folder / "report.js").read_text(encoding="utf-8"),
        "plotly_js": plotly_js(),
    }


def build_report(design: Design, options: ReportOptions | None = None) -> Report:
    """The report of one design."""
    options = options or ReportOptions()
    sections = [
        facts.findings_section(design),
        facts.floor_section(design),
        facts.racks_section(design),
        facts.fabric_section(design),
        facts.cabling_section(design),
        facts.power_section(design),
    ]
    metrics = facts.summary_metrics(design)
    if options.studies:
        study_sections, study_metrics = _studies(design, options)
        sections += study_sections
        metrics += study_metrics
    sections += [money.bom_section(design), money.tco_section(design)]
    spec = design.spec
    return Report(
        title=f"{spec.name}: {num(design.compute.num_training_gpus)} x {design.compute.gpu.name}",
        subtitle=f"cluster design report by clusterforge; {len(design.findings)} finding(s)",
        metrics=metrics,
        sections=tuple(sections),
        elevation_json=script_safe(facts.elevation_data(design)),
    )


def _studies(design: Design, options: ReportOptions) -> tuple[list[Section], tuple[Metric, ...]]:
    from clusterforge.report.expected import expected_performance

    expected = expected_performance(design)
    plans = studies.top_plans(design, options.top_plans) if expected["available"] else []
    sections = [
        studies.busbw_section([studies.busbw_curve(design)]),
        studies.performance_section(expected, plans),
        studies.goodput_section(
            design,
            options.goodput_runs,
            ideal_days=expected["time_to_train_days"] if expected["available"] else None,
        ),
    ]
    return sections, _expected_metrics(expected)


def _expected_metrics(expected: dict[str, Any]) -> tuple[Metric, ...]:
    if not expected["available"]:
        return ()
    metrics = (
        Metric("MFU (spec's plan)", pct(expected["mfu"]), expected["plan"]),
        Metric("time to train", f"{num(expected['time_to_train_days'], 1)} days",
               f"{num(expected['tokens_to_train'] / 1e9)} B tokens, no failures"),
    )  # fmt: skip
    goodput = expected.get("goodput") or {}
    if not goodput.get("available"):
        return metrics
    return (
        *metrics,
        Metric("with failures", f"{num(goodput['expected_days'], 1)} days",
               f"P90 {num(goodput['p90_days'], 1)} days; ETTR {pct(goodput['ettr'])}, "
               f"{num(goodput['interruptions_per_day'], 2)} interruptions a day"),
    )  # fmt: skip


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    return template_env().get_template("report.html.j2").render(report=report, **page_assets())


def check_page_path(path: Path) -> None:
    """A :class:`SpecError` when ``path`` cannot take a page: its folder is missing, or it is
    a folder itself (checked before seconds of planning, not after)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise SpecError(f"output {str(path)[:200]!r}: folder {str(folder)[:200]!r} does not exist")
    if path.is_dir():
        raise SpecError(f"output {str(path)[:200]!r} is a folder; give a file name")


def write_page(path: Path, html: str) -> Path:
    """Write ``html`` to ``path`` whole or not at all (a temporary file in the same folder,
    renamed into place); a :class:`SpecError` when the folder is missing or not writable."""
    check_page_path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, staging = tempfile.mkstemp(prefix=".clusterforge-", suffix=".html", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(html)
        os.replace(staging, path)
    except OSError as exc:
        raise SpecError(f"cannot write {str(path)[:200]!r}: {exc.strerror}") from None
    return path
