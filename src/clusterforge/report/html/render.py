"""Assemble and render the HTML report of one design, or of two side by side.

:func:`build_report` gathers the sections (reading the design, running the simulator, the
performance model and the goodput Monte Carlo); :func:`render_html` places them into the
Jinja2 template with ``StrictUndefined``, the charts (inline SVG) and the page's own script
inlined so the file needs no network.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from clusterforge.assess import Assessment, ExpectedPerformance, GoodputOutlook
from clusterforge.report.expected import plan_name
from clusterforge.report.html import facts, money, studies
from clusterforge.report.html.model import Metric, Section, css_string, num, pct
from clusterforge.userfiles import check_output_file, write_file

__all__ = ["Report", "build_report", "check_page_path", "page_assets", "render_html",
           "template_env", "write_page"]  # fmt: skip


@dataclass(frozen=True)
class Report:
    """Everything the report page shows, formatted."""

    title: str
    subtitle: str
    metrics: tuple[Metric, ...]
    sections: tuple[Section, ...]

    @property
    def print_title(self) -> str:
        """The title as a CSS string, for the printed pages' top margin."""
        return css_string(self.title)


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
    """The page's inlined assets: its stylesheet and its script (lazy tables, print)."""
    folder = resources.files("clusterforge.report.html") / "templates"
    return {
        "css": (folder / "report.css").read_text(encoding="utf-8"),
        "script": (folder / "report.js").read_text(encoding="utf-8"),
    }


def build_report(assessment: Assessment) -> Report:
    """The report of one design: its facts, then each study the assessment holds."""
    design = assessment.design
    sections = [
        facts.findings_section(design),
        facts.floor_section(design),
        facts.racks_section(design),
        facts.fabric_section(design),
        facts.cabling_section(design),
        facts.power_section(design),
    ]
    sections += _studies(assessment)
    sections += [money.bom_section(design), money.tco_section(design, assessment.economics)]
    spec = design.spec
    return Report(
        title=f"{spec.name}: {num(design.compute.num_training_gpus)} x {design.compute.gpu.name}",
        subtitle=f"cluster design report by clusterforge; {len(design.findings)} finding(s)",
        metrics=facts.summary_metrics(design) + _expected_metrics(assessment),
        sections=tuple(sections),
    )


def _studies(assessment: Assessment) -> list[Section]:
    sections = []
    if assessment.busbw is not None:
        sections.append(studies.busbw_section([assessment.busbw]))
    if assessment.performance is not None:
        sections.append(studies.performance_section(assessment.performance, assessment.top_plans))
    if assessment.goodput is not None:
        sections.append(studies.goodput_section(assessment.goodput))
    return sections


def _expected_metrics(assessment: Assessment) -> tuple[Metric, ...]:
    perf = assessment.performance
    if not isinstance(perf, ExpectedPerformance):
        return ()
    p = perf.prediction
    metrics = (
        Metric("MFU (spec's plan)", pct(p.mfu), plan_name(p.plan)),
        Metric("time to train", f"{num(perf.time_to_train_days, 1)} days",
               f"{num(perf.tokens_to_train / 1e9)} B tokens, no failures"),
    )  # fmt: skip
    goodput = assessment.goodput
    if not isinstance(goodput, GoodputOutlook):
        return metrics
    exp = goodput.report.expected
    return (
        *metrics,
        Metric("with failures", f"{num(goodput.expected_days, 1)} days",
               f"P90 {num(goodput.p90_days, 1)} days; ETTR {pct(exp.ettr)}, "
               f"{num(exp.interruptions_per_day, 2)} interruptions a day"),
    )  # fmt: skip


def render_html(report: Report) -> str:
    """The report as one self-contained HTML page."""
    return template_env().get_template("report.html.j2").render(report=report, **page_assets())


def check_page_path(path: Path) -> None:
    """A :class:`SpecError` when ``path`` cannot take a page: its folder is missing, it is a
    folder itself or a special file (checked before seconds of planning, not after)."""
    check_output_file(path, "report output")


def write_page(path: Path, html: str) -> Path:
    """Write ``html`` to ``path`` whole or not at all (see :mod:`clusterforge.userfiles`:
    a link's target is written, ``/dev/null`` in place, a disk never)."""
    return write_file(path, html, "report output")
