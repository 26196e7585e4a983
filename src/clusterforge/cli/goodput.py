"""``clusterforge goodput``: failures, checkpoints, spares and the real time to train."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from clusterforge.cli.params import FiniteFloatRange
from clusterforge.report.json_document import json_document

__all__ = ["GoodputOptions", "command"]

MAX_RUNS = 100_000


@dataclass(frozen=True)
class GoodputOptions:
    spec: Path | None
    days: float | None
    runs: int
    seed: int
    as_json: bool
    plot: Path | None


def run(options: GoodputOptions) -> int:
    """Plan the spec, model the goodput of its job, render it."""
    from clusterforge.assess import goodput_study
    from clusterforge.design import plan
    from clusterforge.report.files import check_picture_path, write_picture
    from clusterforge.report.goodput import histogram_picture, print_goodput
    from clusterforge.spec import load_spec

    fmt = None if options.plot is None else check_picture_path(options.plot)
    design = plan(load_spec(options.spec))
    report = goodput_study(design, runs=options.runs, seed=options.seed, days=options.days)
    if options.plot is not None and fmt is not None:
        write_picture(options.plot, histogram_picture(report, fmt))
    if options.as_json:
        click.echo(json.dumps(json_document("goodput", report.as_dict()), indent=2))
    else:
        print_goodput(report, Console())
    return 0


@click.command(name="goodput")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--days",
    type=FiniteFloatRange(min=0.001, max=3650),
    default=None,
    help="Failure-free training days (default: the workload's tokens at the predicted rate).",
)
@click.option(
    "--runs",
    type=click.IntRange(min=1, max=MAX_RUNS),
    default=1000,
    show_default=True,
    help="Simulated lives of the job.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write a histogram of the time to train (.svg, .png or .pdf).",
)
def command(
    spec: Path | None, days: float | None, runs: int, seed: int, as_json: bool, plot: Path | None
) -> int:
    """Goodput of the job in SPEC: interruptions, checkpoints, restarts, spares, ETTR."""
    return run(GoodputOptions(spec, days, runs, seed, as_json, plot))
