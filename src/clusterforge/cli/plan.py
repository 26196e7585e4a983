"""``clusterforge plan``: from a spec to a complete design, printed and written to files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from clusterforge.design import Design, plan
from clusterforge.errors import ClusterforgeError
from clusterforge.report.files import design_files, write_atomically
from clusterforge.report.terminal import print_design, print_expected_performance
from clusterforge.spec import load_spec

__all__ = ["command", "expected_performance"]


def expected_performance(design: Design) -> dict[str, Any]:
    """The perf model's prediction for the spec's own workload, as plain JSON data.

    A design is still useful when the workload cannot be predicted (e.g. an inconsistent
    plan for this model), so the reason is returned instead of raised.
    """
    from clusterforge.perf import predict_workload

    try:
        p = predict_workload(design)
    except ClusterforgeError as exc:
        return {"available": False, "reason": str(exc)}
    tokens = design.require_workload("a prediction")[0].tokens_b * 1e9
    return {
        "available": True,
        "model": p.model_id,
        "plan": f"TP {p.plan.tp} x PP {p.plan.pp} x CP {p.plan.cp} x DP {p.plan.dp}"
        + (f" (EP {p.plan.ep})" if p.plan.ep > 1 else ""),
        "step_time_s": p.step_time_s,
        "tokens_per_s": p.tokens_per_s,
        "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "mfu": p.mfu,
        "hfu": p.hfu,
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "fits": p.fits,
        "tokens_to_train": tokens,
        "time_to_train_days": p.time_to_train_s(tokens) / 86400,
    }


@click.command(name="plan")
@click.argument("spec", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for design.json, bom.csv, racks.csv, cabling.csv, findings.md, racks.svg, tco.svg.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole design as JSON on stdout.")
def command(spec: Path | None, output: Path | None, as_json: bool) -> int:
    """Plan the cluster in SPEC (YAML); without SPEC, the built-in 512 x H100 colo design."""
    design = plan(load_spec(spec))
    perf = expected_performance(design)
    data = design.model_dump(mode="json") | {"expected_performance": perf}
    design_text = json.dumps(data, indent=2) + "\n"
    written: list[Path] = []
    if output is not None:
        texts = {name: render(design) for name, render in design_files(design).items()}
        texts["design.json"] = design_text
        written = write_atomically(output, texts)
    if as_json:
        click.echo(design_text, nl=False)
        return 0
    console = Console()
    print_design(design, console)
    print_expected_performance(perf, console)
    if written:
        console.print(f"[green]wrote[/] {', '.join(str(p) for p in written)}")
    return 0
