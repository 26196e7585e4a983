"""``clusterforge plan``: from a spec to a complete design, printed and written to files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from clusterforge.assess import assess
from clusterforge.design import plan
from clusterforge.report.files import check_output_folder, plan_files, plan_json, write_atomically
from clusterforge.report.terminal import make_console, print_plan
from clusterforge.spec import load_spec

__all__ = ["PlanOptions", "command", "run"]


@dataclass(frozen=True)
class PlanOptions:
    """What ``plan`` was asked for."""

    spec: Path | None
    output: Path | None
    as_json: bool


def run(opts: PlanOptions) -> int:
    """Plan the spec, write the files (all or nothing), print the summary or the JSON."""
    if opts.output is not None:
        check_output_folder(opts.output)  # fail before planning, not after
    assessment = assess(plan(load_spec(opts.spec)))
    written: list[Path] = []
    if opts.output is not None:
        written = write_atomically(opts.output, plan_files(assessment))
    if opts.as_json:
        click.echo(plan_json(assessment), nl=False)
        return 0
    print_plan(assessment, written, make_console())
    return 0


@click.command(name="plan")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for design.json, bom.csv, racks.csv, cabling.csv, findings.md, racks.svg, "
    "floor.svg, fabric.svg, fabric.drawio, fabric.dot, tco.svg (created if missing; its parent "
    "must exist).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole design as JSON on stdout.")
def command(spec: Path | None, output: Path | None, as_json: bool) -> int:
    """Plan the cluster in SPEC (YAML); without SPEC, the built-in 512 x H100 colo design."""
    return run(PlanOptions(spec=spec, output=output, as_json=as_json))
