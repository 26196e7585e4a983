"""Entry point: ``clusterforge COMMAND``.

Each sub-command lives in its own module ``clusterforge.cli.<name>`` exposing a click
``command``; they are imported lazily so that ``clusterforge plan`` does not import the
Kubernetes client.  User errors (:class:`ClusterforgeError`) become one red line and exit 1.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click
from rich.console import Console
from rich.text import Text

from clusterforge.errors import ClusterforgeError

__all__ = ["cli", "main"]

# command name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": (
        "clusterforge.cli.plan",
        "Design a cluster from a spec: fabric, racks, power, BOM, TCO.",
    ),
    "simulate": ("clusterforge.cli.simulate", "Simulate collectives on the designed fabric."),
    "predict": ("clusterforge.cli.predict", "Predict training step time, MFU and memory."),
    "generate": (
        "clusterforge.cli.generate",
        "Write Slurm, Kubernetes, monitoring, inventory files.",
    ),
    "accept": (
        "clusterforge.cli.accept",
        "Acceptance and burn-in through Slurm, Kubernetes or locally.",
    ),
    "goodput": (
        "clusterforge.cli.goodput",
        "Failures, checkpoints, spares and the real time to train.",
    ),
    "optimize": (
        "clusterforge.cli.optimize",
        "Search clusters for the best design under a budget or deadline: the Pareto front.",
    ),
    "check": ("clusterforge.cli.check", "Run node health checks; optionally drain/cordon."),
    "exporter": ("clusterforge.cli.exporter", "Serve health-check metrics for Prometheus."),
    "diagnose": ("clusterforge.cli.diagnose", "Why is my job slow: verdicts from Prometheus."),
    "report": ("clusterforge.cli.report", "Write the design as one self-contained HTML page."),
    "serve": ("clusterforge.cli.serve", "A local web planner: edit the spec, see the design."),
    "rehearse": (
        "clusterforge.cli.rehearse",
        "Bring the design up as an emulated Slurm cluster and run failure drills.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (module, _) in COMMANDS.items() if _module_exists(module)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not _module_exists(COMMANDS[cmd_name][0]):
            return None
        module = importlib.import_module(COMMANDS[cmd_name][0])
        command: click.Command = module.command
        return command


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup)
@click.version_option(package_name="clusterforge")
def cli() -> None:
    """clusterforge: GPU clusters for AI training, from requirement to operation."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors print one red line and return 1."""
    try:
        result = cli.main(args=argv, prog_name="clusterforge", standalone_mode=False)
    except ClusterforgeError as exc:
        # The message quotes user text (names, keys, patterns): print it as plain text, never
        # as rich markup, so "[/]" in a spec is shown and not interpreted.
        line = Text("error: ", style="bold red") + Text(str(exc))
        Console(stderr=True).print(line, highlight=False, soft_wrap=True)
        return 1
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        return 130
    # A command may return its own exit code (``check``: 0 healthy, 1 unhealthy, 2 unknown).
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
