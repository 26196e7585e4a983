"""``clusterforge plan``: from a spec to a complete design, printed and written to files."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from clusterforge.design import plan
from clusterforge.errors import ClusterforgeError
from clusterforge.report.files import design_json, write_design
from clusterforge.report.terminal import print_design
from clusterforge.spec import load_spec

__all__ = ["command"]


def _expected_performance(design: object) -> dict[str, object] | None:
    """The perf model's prediction for the spec's workload, when that model is installed."""
    try:
        from clusterforge.perf import predict_workload  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        prediction = predict_workload(design)
    except ClusterforgeError as exc:
        return {"unavailable": str(exc)}
    return (
        prediction.model_dump(mode="json")
        if hasattr(prediction, "model_dump")
        else dict(prediction)
    )


@click.command(name="plan")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for design.json, bom.csv, racks.csv, cabling.csv, findings.md.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole design as JSON on stdout.")
def command(spec: Path | None, output: Path | None, as_json: bool) -> int:
    """Plan the cluster in SPEC (YAML); without SPEC, the built-in 512 x H100 colo design."""
    design = plan(load_spec(spec))
    if output is not None:
        written = write_design(design, output)
    if as_json:
        click.echo(design_json(design), nl=False)
        return 0
    console = Console()
    print_design(design, console)
    perf = _expected_performance(design)
    if perf:
        console.print_json(json.dumps(perf))
    if output is not None:
        console.print(f"[green]wrote[/] {', '.join(str(p) for p in written)}")
    return 0
