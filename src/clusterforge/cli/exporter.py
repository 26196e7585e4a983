"""``clusterforge exporter``: serve the health checks as Prometheus metrics.

The work is :func:`clusterforge.ops.serve.start_exporter`; this module parses options,
prints where it listens and waits for Ctrl-C (SIGINT) or SIGTERM (``systemctl stop``).

Both signals only set an event, from before the exporter starts until it is closed: a
signal that comes while it is still starting, or while the banner is printed, stops it the
same orderly way (exit 0) instead of raising in the middle of the start.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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
    with _stop_on_signals() as stop:
        running = start_exporter(options)
        try:
            line = (
                f"clusterforge exporter for {running.node} on {running.url} "
                f"(checks every {interval_s:g} s)"
            )
            Console(stderr=True).print(Text(line), highlight=False)
            while not stop.wait(0.5):
                pass
        finally:
            running.close()
    return 0


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event SIGINT and SIGTERM set while the block runs; their handlers are restored."""
    stop = threading.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
