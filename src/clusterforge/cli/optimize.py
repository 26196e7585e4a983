"""``clusterforge optimize``: from a job, its limits and an objective to the Pareto front of
cost against time to train, or (``--compare``) named alternatives side by side."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

__all__ = ["OptimizeOptions", "command", "run"]


@dataclass(frozen=True)
class OptimizeOptions:
    """What ``optimize`` was asked for."""

    spec: Path
    compare: bool
    as_json: bool
    output: Path | None
    plot: Path | None
    workers: int | None
    scheduler: str | None


def run(opts: OptimizeOptions) -> int:
    """Search (or compare), write the specs and the chart, print the table or the JSON."""
    from clusterforge.assess.optimize import (
        DaskEngine,
        compare,
        default_engine,
        load_optimize_spec,
        optimize,
    )
    from clusterforge.report.files import (
        check_output_folder,
        check_picture_path,
        write_atomically,
        write_picture,
    )
    from clusterforge.report.optimize import (
        comparison_json,
        front_json,
        front_picture,
        point_spec_yaml,
        print_comparison,
        print_front,
    )
    from clusterforge.report.terminal import make_console

    fmt = None if opts.plot is None else check_picture_path(opts.plot)
    if opts.output is not None:
        check_output_folder(opts.output)
    spec = load_optimize_spec(opts.spec)
    engine = DaskEngine(opts.scheduler) if opts.scheduler else default_engine(opts.workers)
    try:
        if opts.compare:
            comparison = compare(spec, engine)
            if opts.as_json:
                click.echo(comparison_json(comparison), nl=False)
            else:
                print_comparison(comparison, make_console())
            return 0
        result = optimize(spec, engine)
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()
    if opts.output is not None:
        files = {f"front-{i}.yaml": point_spec_yaml(p) for i, p in enumerate(result.front, 1)}
        write_atomically(opts.output, {**files, "front.json": front_json(result)})
    if opts.plot is not None and fmt is not None:
        write_picture(opts.plot, front_picture(result, fmt))
    if opts.as_json:
        click.echo(front_json(result), nl=False)
    else:
        print_front(result, make_console())
    return 0


@click.command(name="optimize")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--compare", is_flag=True, help="Compare the spec's named alternatives instead.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for front.json and one front-N.yaml spec per front point (plan reads them).",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write a chart of the front (.svg, .png or .pdf).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=1024),
    default=None,
    help="Local worker processes (default: the machine's CPUs; 1: this process).",
)
@click.option(
    "--scheduler",
    default=None,
    help="Run on a Dask cluster: its scheduler address (tcp://host:8786).",
)
def command(
    spec: Path,
    compare: bool,
    as_json: bool,
    output: Path | None,
    plot: Path | None,
    workers: int | None,
    scheduler: str | None,
) -> int:
    """Search the clusters in SPEC (YAML) for the best design under its limits."""
    return run(OptimizeOptions(spec, compare, as_json, output, plot, workers, scheduler))
