"""``clusterforge exporter``: serve the health checks as Prometheus metrics.

The work is :func:`clusterforge.ops.serve.start_exporter`; this module parses options,
prints where it listens and waits for Ctrl-C.
"""

from __future__ import annotations

import threading

import click
from rich.console import Console
from rich.text import Text

from clusterforge.cli.node_options import source_options
from clusterforge.cli.params import FiniteFloatRange
from clusterforge.ops.options import ExporterOptions, SourceOptions
from clusterforge.ops.serve import start_exporter

__all__ = ["command"]


@click.command("exporter")
@source_options
@click.option(
    "--port", type=click.IntRange(1, 65535), default=9410, show_default=True, help="HTTP port."
)
@click.option("--address", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option(
    "--interval-s",
    type=FiniteFloatRange(1, 86400),
    default=60.0,
    show_default=True,
    help="Seconds between check runs (scrapes read the last result).",
)
def command(source: SourceOptions, port: int, address: str, interval_s: float) -> int:
    """Serve check results and NIC counters on http://ADDRESS:PORT/metrics."""
    options = ExporterOptions(source=source, address=address, port=port, interval_s=interval_s)
    running = start_exporter(options)
    line = (
        f"clusterforge exporter for {running.node} on {running.url} (checks every {interval_s:g} s)"
    )
    Console(stderr=True).print(Text(line), highlight=False)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        running.close()
    return 0
