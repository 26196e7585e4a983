"""``clusterforge report``: a design as one self-contained HTML page, or two side by side."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import click

from clusterforge.assess import QUICK, REPORT, assess
from clusterforge.design import plan
from clusterforge.spec import load_spec

__all__ = ["ReportCommandOptions", "command", "run"]


@dataclass(frozen=True)
class ReportCommandOptions:
    """What ``report`` was asked for."""

    spec: Path | None
    other: Path | None
    output: Path
    studies: bool
    pdf: bool = False

    @property
    def pdf_path(self) -> Path:
        """The PDF beside the page: the page's name with .pdf."""
        return self.output.with_suffix(".pdf")


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
    design = plan(load_spec(opts.spec))
    if opts.other is None:
        html = render_html(build_report(assess(design, options)))
    else:
        # side by side: the headline figures and bandwidth, not each one's plan search
        pair = replace(options, goodput_runs=0, top_plans=0, break_even=False)
        other = plan(load_spec(opts.other))
        html = render_comparison(build_comparison(assess(design, pair), assess(other, pair)))
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
def command(
    spec: Path | None, other: Path | None, output: Path, no_studies: bool, pdf: bool
) -> int:
    """Write the design of SPEC (YAML) as one HTML page that opens offline; without SPEC, the
    built-in 512 x H100 colo design."""
    opts = ReportCommandOptions(spec=spec, other=other, output=output, studies=not no_studies,
                                pdf=pdf)  # fmt: skip
    return run(opts)
