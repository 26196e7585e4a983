"""``clusterforge accept``: acceptance and burn-in through the cluster's own scheduler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast, get_args

import click
from rich.console import Console
from rich.markup import escape

from clusterforge.accept.request import Via
from clusterforge.accept.suite import Localize
from clusterforge.cli.params import FiniteFloatRange
from clusterforge.errors import AcceptError, SpecError
from clusterforge.report.json_document import json_document

__all__ = ["command"]


def _request(spec: Path | None, opts: dict[str, Any]) -> Any:
    from clusterforge.accept import TESTS, AcceptOptions
    from clusterforge.accept.request import AcceptRequest, parse_size
    from clusterforge.accept.suite import FabricOptions

    tests = tuple(t for t in opts["tests"].split(",") if t)
    unknown = sorted(set(tests) - set(TESTS))
    if unknown:
        raise SpecError(f"tests: unknown {', '.join(unknown)}; choose from {', '.join(TESTS)}")
    suite = AcceptOptions(
        nodes=tuple(n for n in opts["nodes"].split(",") if n),
        tests=cast(Any, tests),
        cpu=opts["cpu"],
        burn_s=opts["burn_s"],
        max_bytes=parse_size(opts["max_size"]),
        storage_path=opts["storage_path"],
        storage_p999_ms=opts["storage_p999_ms"],
        localize=opts["localize"],
        serial_nodes=opts["serial_nodes"],
        repeats=opts["repeats"],
        fabric=FabricOptions(seconds=opts["fabric_s"], max_loss=opts["max_loss_percent"] / 100),
    )
    work = opts["output"] or Path("clusterforge-accept")
    return AcceptRequest(spec, opts["via"], work, suite, opts["image"])


@click.command(name="accept")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--via", type=click.Choice(get_args(Via)), default="slurm", show_default=True)
@click.option(
    "--nodes", default="", help="Comma-separated nodes (default: the design's training nodes)."
)
@click.option(
    "--tests",
    default="node,fabric,nccl,net,storage",
    show_default=True,
    help="Any of node,fabric,nccl,net,storage,dcgm.",
)
@click.option(
    "--fabric-s",
    type=FiniteFloatRange(1, 3600),
    default=10.0,
    show_default=True,
    help="Fabric rounds: seconds of ib_write_bw per round.",
)
@click.option(
    "--max-loss-percent",
    type=FiniteFloatRange(0, 100),
    default=0.1,
    show_default=True,
    help="Fabric rounds: a port losing more than this share of its packets fails.",
)
@click.option(
    "--cpu",
    is_flag=True,
    help="CPU stand-in (gloo, numpy GEMM): judge nodes against their peers only.",
)
@click.option("--burn-s", type=FiniteFloatRange(0.1, 86400), default=10.0, show_default=True)
@click.option("--max-size", default="1GiB", show_default=True, help="Largest collective size.")
@click.option("--storage-path", default="/tmp", show_default=True)
@click.option("--storage-p999-ms", type=FiniteFloatRange(min=0.001), default=1.0, show_default=True)
@click.option(
    "--localize", type=click.Choice(get_args(Localize)), default="auto", show_default=True
)
@click.option(
    "--serial-nodes",
    is_flag=True,
    help="Per-node tests one node at a time (emulated nodes on one machine).",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 10),
    default=2,
    show_default=True,
    help="Localization: best of this many runs per group.",
)
@click.option(
    "--image",
    default="clusterforge-accept:latest",
    show_default=True,
    help="Kubernetes: worker image.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for report.json and the raw logs (default ./clusterforge-accept).",
)
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--drain-failed", is_flag=True, help="Drain (Slurm) or cordon (Kubernetes) failed nodes."
)
def command(spec: Path | None, as_json: bool, drain_failed: bool, **opts: Any) -> int:
    """Accept the cluster built from SPEC: per-node, fabric, network and storage tests.

    Exit 0: every test passed; 1: some failed; 2: the suite could not run."""
    from clusterforge.accept.request import accept_spec
    from clusterforge.accept.request import drain_failed as drain
    from clusterforge.report.accept import print_accept

    request = _request(spec, opts)
    err = Console(stderr=True)
    try:
        report = accept_spec(request, lambda msg: err.print(f"[dim]accept:[/] {msg}"))
    except AcceptError as exc:
        err.print(f"[bold red]could not run:[/] {escape(str(exc))}", highlight=False)
        return 2
    if as_json:
        click.echo(json.dumps(json_document("accept", report.as_dict()), indent=2))
    else:
        print_accept(report, Console())
    if drain_failed:
        for node in drain(report, request.via):
            err.print(f"drained {node}")
    return report.exit_code
