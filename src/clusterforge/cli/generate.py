"""``clusterforge generate [SPEC] -o/--output OUT [--only slurm,kubernetes,monitoring,inventory]``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from clusterforge.design import plan
from clusterforge.generate.bundle import Progress as Steps
from clusterforge.generate.bundle import generate, parse_targets
from clusterforge.generate.notices import generation_warnings
from clusterforge.spec import load_spec

__all__ = ["command"]


@click.command(name="generate")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Output folder; each target becomes a sub-folder (slurm/, kubernetes/, ...).",
)
# --out was this option's long name; every command now says --output, and scripts that
# wrote --out keep working (hidden from --help)
@click.option("--out", "out_alias", type=click.Path(file_okay=False, path_type=Path),
              default=None, hidden=True)  # fmt: skip
@click.option(
    "--only",
    default=None,
    metavar="TARGETS",
    help="Comma-separated targets: slurm, kubernetes, monitoring, inventory (default: all).",
)
def command(
    spec: Path | None, out_dir: Path | None, out_alias: Path | None, only: str | None
) -> None:
    """Write Slurm, Kubernetes, monitoring and inventory files for SPEC (default: built-in)."""
    out_dir = out_dir or out_alias
    if out_dir is None:
        raise click.UsageError("Missing option '-o' / '--output' (the output folder).")
    targets = parse_targets(only)
    with _progress_bar() as steps:
        steps("planning", done=0, total=None)
        design = plan(load_spec(spec))
        files = generate(design, out_dir, targets, progress=steps)
    Console().print(
        f"wrote {len(files)} files for {design.spec.name!r} into {out_dir}/ ({', '.join(targets)})"
    )
    for warning in generation_warnings(design, targets):
        Console(stderr=True).print(f"warning: {warning}", markup=False, highlight=False)


@contextmanager
def _progress_bar() -> Iterator[Steps]:
    """A progress bar on stderr (drawn only on a terminal), removed when the command ends."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    bar = Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    task = bar.add_task("starting", total=None)

    def steps(what: str, *, done: int, total: int | None) -> None:
        bar.update(task, description=what, completed=done, total=total)

    with bar:
        yield steps
