"""``clusterforge report``: a design as one self-contained HTML page, or two side by side;
given an optimize spec (one with ``job:`` or ``constraints:``), the page of its search."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from clusterforge.assess import QUICK, REPORT, assess
from clusterforge.design import plan
from clusterforge.errors import SpecError
from clusterforge.spec import ClusterSpec, default_spec, parse_spec
from clusterforge.spec.optimize import OptimizeSpec, parse_optimize_spec
from clusterforge.spec.safe_yaml import excerpt, load_yaml_text, read_spec_text

__all__ = ["OPTIMIZE_KEYS", "ReportCommandOptions", "command", "read_report_spec", "run"]

# top-level keys only an optimize spec has (a cluster spec names its job ``workload``)
OPTIMIZE_KEYS = ("job", "constraints")


@dataclass(frozen=True)
class ReportCommandOptions:
    """What ``report`` was asked for."""

    spec: Path | None
    other: Path | None
    output: Path
    studies: bool
    pdf: bool = False
    workers: int | None = None

    @property
    def pdf_path(self) -> Path:
        """The PDF beside the page: the page's name with .pdf."""
        return self.output.with_suffix(".pdf")


def read_report_spec(path: Path | None) -> ClusterSpec | OptimizeSpec:
    """The spec at ``path``: an optimize spec when its top level has one of
    :data:`OPTIMIZE_KEYS`, else a cluster spec (None: the built-in default)."""
    if path is None:
        return default_spec()
    source = excerpt(str(path), 120).strip("'\"")
    data: Any = load_yaml_text(read_spec_text(path), source)
    if isinstance(data, dict) and any(key in data for key in OPTIMIZE_KEYS):
        return parse_optimize_spec(data, source=source)
    return parse_spec(data, source=source)


def _optimize_page(spec: OptimizeSpec, workers: int | None) -> str:
    """The page of an optimize search, run on ``workers`` processes (None: the CPUs)."""
    from clusterforge.assess.optimize import default_engine, optimize
    from clusterforge.report.html import render_html
    from clusterforge.report.html.optimize import build_front_report

    engine = default_engine(workers)
    try:
        result = optimize(spec, engine)
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()
    return render_html(build_front_report(result))


def run(opts: ReportCommandOptions) -> int:
    """Plan the spec (and the other one), render the page, write it whole or not at all; with
    ``pdf``, print it to a PDF beside it."""
    from clusterforge.report.html import (
        build_comparison,
        build_report,
        check_page_path,
        render_comparison,
        render_html,
        write_page,
    )
    from clusterforge.report.html.pdf import find_chromium, print_pdf

    check_page_path(opts.output)
    if opts.pdf:  # before seconds of planning: say at once what is missing
        find_chromium()
        check_page_path(opts.pdf_path)
    options = REPORT if opts.studies else QUICK
    spec = read_report_spec(opts.spec)
    if isinstance(spec, OptimizeSpec):
        if opts.other is not None:
            raise SpecError(
                f"--vs: {excerpt(str(opts.spec), 120)} is an optimize spec (it has "
                f"{' or '.join(OPTIMIZE_KEYS)}); --vs compares two cluster specs: drop --vs, "
                "or give two cluster specs"
            )
        html = _optimize_page(spec, opts.workers)
    elif opts.other is None:
        html = render_html(build_report(assess(plan(spec), options)))
    else:
        # side by side: the headline figures and bandwidth, not each one's plan search
        pair = replace(options, goodput_runs=0, top_plans=0, break_even=False)
        other = read_report_spec(opts.other)
        if not isinstance(other, ClusterSpec):
            raise SpecError(
                f"--vs: {excerpt(str(opts.other), 120)} is an optimize spec; --vs takes a "
                "cluster spec (plan one of its front points' specs)"
            )
        html = render_comparison(
            build_comparison(assess(plan(spec), pair), assess(plan(other), pair))
        )
    path = write_page(opts.output, html)
    click.echo(f"wrote {path} ({len(html.encode()) / 1e6:.1f} MB)")
    if opts.pdf:
        pdf = print_pdf(path, opts.pdf_path)
        click.echo(f"wrote {pdf} ({pdf.stat().st_size / 1e6:.1f} MB)")
    return 0


@click.command(name="report")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--vs",
    "other",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A second spec: both designs side by side, with the differences.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("design.html"),
    show_default=True,
    help="The HTML file to write (its folder must exist).",
)
@click.option(
    "--no-studies",
    "no_studies",
    is_flag=True,
    help="Leave out the simulated bandwidth, performance and goodput (faster).",
)
@click.option(
    "--pdf",
    is_flag=True,
    help="Also print the page to a paginated A4 PDF beside it (same name, .pdf), with "
    "every table and rack shown; needs Chromium.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=1024),
    default=None,
    help="For an optimize spec: local worker processes of the search (default: the "
    "machine's CPUs; 1: this process).",
)
def command(
    spec: Path | None,
    other: Path | None,
    output: Path,
    no_studies: bool,
    pdf: bool,
    workers: int | None,
) -> int:
    """Write the design of SPEC (YAML) as one HTML page that opens offline; without SPEC, the
    built-in 512 x H100 colo design. An optimize spec (with job: or constraints:) gives the
    page of its search: the front's chart and table, the winner and why, each point's spec."""
    opts = ReportCommandOptions(spec=spec, other=other, output=output, studies=not no_studies,
                                pdf=pdf, workers=workers)  # fmt: skip
    return run(opts)
