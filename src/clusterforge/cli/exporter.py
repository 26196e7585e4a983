"""``clusterforge exporter``: serve the health checks as Prometheus metrics."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from clusterforge.cli.check import build_check_fn, source_options
from clusterforge.ops.exporter import Exporter

__all__ = ["command"]


@click.command("exporter")
@source_options
@click.option(
    "--port", type=click.IntRange(1, 65535), default=9410, show_default=True, help="HTTP port."
)
@click.option("--address", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option(
    "--interval-s",
    type=click.FloatRange(1, 86400),
    default=60.0,
    show_default=True,
    help="Seconds between check runs (scrapes read the last result).",
)
def command(port: int, address: str, interval_s: float, **opts: Any) -> int:
    """Serve check results and NIC counters on http://ADDRESS:PORT/metrics."""
    node, check = build_check_fn(opts)
    exporter = Exporter(check, interval_s=interval_s)
    exporter.refresh()
    try:
        exporter.serve(port, address)
    except OSError as exc:
        from clusterforge.errors import AdapterError

        raise AdapterError(
            f"cannot listen on {address}:{port}: {exc.strerror}; pick another --port"
        ) from None
    Console(stderr=True).print(
        f"clusterforge exporter for {node} on http://{address}:{port}/metrics "
        f"(checks every {interval_s:g} s)",
        highlight=False,
    )
    try:
        exporter.run_forever()
    except KeyboardInterrupt:
        exporter.stop()
    return 0
