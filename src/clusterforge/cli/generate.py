"""``clusterforge generate [SPEC] -o OUT [--only slurm,kubernetes,monitoring,inventory]``."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from clusterforge.design import plan
from clusterforge.generate import parse_targets, render, write_files
from clusterforge.spec import load_spec

__all__ = ["command"]


@click.command(name="generate")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Output folder; each target becomes a sub-folder (slurm/, kubernetes/, ...).",
)
@click.option(
    "--only",
    default=None,
    metavar="TARGETS",
    help="Comma-separated targets: slurm, kubernetes, monitoring, inventory (default: all).",
)
def command(spec: Path | None, out_dir: Path, only: str | None) -> None:
    """Write Slurm, Kubernetes, monitoring and inventory files for SPEC (default: built-in)."""
    targets = parse_targets(only)
    design = plan(load_spec(spec))
    files = write_files(render(design, targets), out_dir)
    Console().print(
        f"wrote {len(files)} files for {design.spec.name!r} into {out_dir}/ ({', '.join(targets)})"
    )
