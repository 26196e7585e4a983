"""``clusterforge check``: run the node health checks, print them, optionally drain/cordon.

Exit status: 0 healthy (warnings allowed), 1 unhealthy, 2 could not check (a read failed or
hung, or ``--node`` is not one of the design's nodes).  The work is
:func:`clusterforge.ops.oneshot.run_check`; this module parses options and renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import click
from rich.console import Console
from rich.text import Text

from clusterforge.cli.node_options import source_options
from clusterforge.cli.params import FiniteFloatRange
from clusterforge.ops.expect import UnknownNodeError
from clusterforge.ops.oneshot import run_check
from clusterforge.ops.options import ActionKind, CheckOptions, SourceOptions, StateFile
from clusterforge.report.health import check_json, print_alert, print_check

__all__ = ["command", "parse_state_file"]


def parse_state_file(value: str) -> StateFile:
    """'auto', 'none' (or empty: no state file) or a path."""
    if value.lower() in ("none", ""):
        return None
    return "auto" if value == "auto" else Path(value)


def _could_not_check(exc: UnknownNodeError) -> int:
    line = Text("could not check: ", style="bold red") + Text(
        f"{exc}: pass --node with the design's name of this node"
    )
    Console(stderr=True).print(line, highlight=False, soft_wrap=True)
    return 2


@click.command("check")
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--action",
    type=click.Choice(get_args(ActionKind)),
    default="none",
    show_default=True,
    help="Drain/cordon an unhealthy node; resume it when healthy.",
)
@click.option(
    "--max-drain-fraction",
    type=FiniteFloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Circuit breaker: never let clusterforge drain more than this share of nodes.",
)
@click.option(
    "--state-file",
    default="auto",
    show_default=True,
    envvar="CLUSTERFORGE_CHECK_STATE_FILE",
    help="JSON file keeping the counters of the previous run, so rising counters are judged "
    "by their increase; 'auto': /var/lib/clusterforge/check-state-NODE.json when writable; "
    "'none': no state (every run is a baseline).",
)
@click.option("--verbose", "-v", is_flag=True, help="Show every result, not only the problems.")
def command(
    source: SourceOptions,
    as_json: bool,
    action: ActionKind,
    max_drain_fraction: float,
    state_file: str,
    verbose: bool,
) -> int:
    """Run the node health checks (GPUs, NICs, host); exit 0 healthy, 1 unhealthy, 2 unknown."""
    options = CheckOptions(
        source=source,
        state_file=parse_state_file(state_file),
        action=action,
        max_drain_fraction=max_drain_fraction,
    )
    try:
        outcome = run_check(options)
    except UnknownNodeError as exc:
        return _could_not_check(exc)
    print_alert(outcome, Console(stderr=True))
    if as_json:
        click.echo(check_json(outcome))
    else:
        print_check(outcome, Console(), verbose=verbose)
    return outcome.report.exit_code
