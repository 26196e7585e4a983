"""``clusterforge serve``: the local planner web app (edit the spec, see the design)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from clusterforge.errors import AdapterError
from clusterforge.spec import load_spec

__all__ = ["ServeOptions", "command", "run"]

INSTALL_HINT = "pip install 'clusterforge[ui]'"


@dataclass(frozen=True)
class ServeOptions:
    """What ``serve`` was asked for."""

    spec: Path | None
    host: str
    port: int
    allow_hosts: tuple[str, ...] = ()


def run(opts: ServeOptions) -> int:
    """Plan the spec once, then serve the planner until interrupted."""
    try:
        import uvicorn

        from clusterforge.web.app import create_app
        from clusterforge.web.guard import host_names
    except ImportError as exc:
        raise AdapterError(f"serve needs {exc.name}; install it with {INSTALL_HINT}") from None
    app = create_app(load_spec(opts.spec), host_names(opts.host, opts.allow_hosts))
    click.echo(f"clusterforge planner on http://{opts.host}:{opts.port}/ (Ctrl-C stops it)")
    uvicorn.run(app, host=opts.host, port=opts.port, log_level="warning")
    return 0


@click.command(name="serve")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; the default serves this machine only.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another host name the planner may be opened under (repeat for several); requests "
    "for any other name are refused, which stops DNS-rebinding pages from reading it.",
)
def command(spec: Path | None, port: int, host: str, allow_hosts: tuple[str, ...]) -> int:
    """Serve a local planner for SPEC (YAML; default: the built-in 512 x H100 design): the
    spec as a form, the report re-rendered on each change, a JSON API and downloads."""
    return run(ServeOptions(spec=spec, host=host, port=port, allow_hosts=allow_hosts))
