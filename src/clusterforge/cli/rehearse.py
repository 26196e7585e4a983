"""``clusterforge rehearse``: bring the design up as an emulated cluster and run the drills.

Exit 0: no drill failed; 1: a drill failed; 2: this machine cannot run the emulated cluster
(no root, no slurm-wlm or munge).  The work is :func:`clusterforge.rehearse.run.rehearse`.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click
from rich.console import Console
from rich.markup import escape

from clusterforge.cli.params import FiniteFloatRange

__all__ = ["command"]


def _drills(text: str) -> tuple[str, ...]:
    from clusterforge.errors import SpecError
    from clusterforge.rehearse.model import DRILLS

    drills = tuple(d for d in text.split(",") if d)
    unknown = sorted(set(drills) - set(DRILLS))
    if unknown or not drills:
        raise SpecError(
            f"drills: unknown {', '.join(unknown) or '(none)'}; choose from {', '.join(DRILLS)}"
        )
    return tuple(d for d in DRILLS if d in drills)  # always in the order that builds up


@click.command(name="rehearse")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--nodes",
    "num_nodes",
    type=click.IntRange(2, 16),
    default=4,
    show_default=True,
    help="Emulated compute nodes (the design is resized to this many).",
)
@click.option(
    "--drills",
    default="bring-up,accept,lossy-link,xid,prometheus,nic-flap,slow-node",
    show_default=True,
    help="Which drills to run.",
)
@click.option(
    "--burn-s",
    type=FiniteFloatRange(0.5, 3600),
    default=2.0,
    show_default=True,
    help="Acceptance burn-in per node.",
)
@click.option(
    "--alert-for-s",
    type=click.IntRange(1, 3600),
    default=15,
    show_default=True,
    help="The generated rules' longer 'for:' durations are shortened to this in the rehearsal.",
)
@click.option("--keep", is_flag=True, help="Leave the cluster running and print how to reach it.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def command(
    spec: Path,
    num_nodes: int,
    drills: str,
    burn_s: float,
    alert_for_s: int,
    keep: bool,
    as_json: bool,
) -> int:
    """Plan SPEC, generate its files, run them as an emulated cluster and drill it."""
    from clusterforge.rehearse.cluster import missing_requirements
    from clusterforge.rehearse.model import DrillName, RehearseOptions
    from clusterforge.rehearse.run import rehearse
    from clusterforge.report.rehearse import print_rehearse, rehearse_json

    options = RehearseOptions(
        spec=spec, num_nodes=num_nodes, keep=keep, burn_s=burn_s, alert_for_s=alert_for_s,
        drills=cast(tuple[DrillName, ...], _drills(drills)),
    )  # fmt: skip
    err = Console(stderr=True)
    if missing := missing_requirements(options.drills):
        err.print(f"[bold red]cannot rehearse here:[/] needs {escape('; '.join(missing))}")
        return 2
    with err.status("rehearsing") as status:
        report = rehearse(options, lambda msg: status.update(f"[dim]rehearse:[/] {escape(msg)}"))
    if as_json:
        click.echo(rehearse_json(report))
    else:
        print_rehearse(report, Console())
    return report.exit_code
