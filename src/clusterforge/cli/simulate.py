"""``clusterforge simulate``: nccl-tests-style tables from the flow-level simulator."""

from __future__ import annotations

import json
from pathlib import Path

import click

from clusterforge.assess import (
    ALGORITHMS,
    COLLECTIVES,
    COMMUNICATORS,
    DEFAULT_SWEEP,
    PLACEMENTS,
    PROTOCOLS,
    ROUTINGS,
    AlgorithmChoice,
    Collective,
    Communicators,
    Placement,
    ProtocolChoice,
    Routing,
    StudyRequest,
    load_calibration,
    parse_size,
    parse_sweep,
)
from clusterforge.report.files import check_picture_path
from clusterforge.report.json_document import json_document
from clusterforge.report.simulate import render_studies, run_with_progress, study_json, write_plot
from clusterforge.report.terminal import make_console

__all__ = ["command", "parse_size"]


@click.command("simulate")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--collective", default="all_reduce", show_default=True, type=click.Choice(COLLECTIVES)
)
@click.option(
    "--size", "size_text", default=None, help="One message size (nccl-tests 'size'), e.g. 1GiB"
)
@click.option(
    "--sweep",
    "sweep_text",
    default=None,
    help="MIN:MAX, doubling, e.g. 8B:16GiB (default 1MiB:16GiB)",
)
@click.option("--gpus", type=int, default=None, help="GPUs in the job (default: all)")
@click.option(
    "--groups",
    "kind",
    default="all",
    show_default=True,
    type=click.Choice(COMMUNICATORS),
    help="Communicators: one over all GPUs, or every group of one kind of the spec's job at "
    "once (dpcp: DP x CP, the ZeRO/FSDP group; ep: expert parallel)",
)
@click.option("--placement", default="packed", show_default=True, type=click.Choice(PLACEMENTS))
@click.option(
    "--routing",
    default="adaptive",
    show_default=True,
    type=click.Choice(ROUTINGS),
    help="ecmp (hashed), adaptive (ideal spraying); valiant / ugal: non-minimal dragonfly routing",
)
@click.option(
    "--qps", default=1, show_default=True, type=int, help="Queue pairs per connection (ECMP), 1-128"
)
@click.option(
    "--algorithm",
    default="auto",
    show_default=True,
    type=click.Choice(ALGORITHMS),
    help="auto: NCCL's tuner choice",
)
@click.option(
    "--protocol",
    default="auto",
    show_default=True,
    type=click.Choice(PROTOCOLS),
    help="auto: NCCL's tuner choice",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the fragmented placement")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables")
@click.option(
    "--vs",
    "other",
    default=None,
    type=click.Path(dir_okay=False),
    help="A second spec: same traffic on both designs, side by side",
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write busbw against message size as a chart (.svg, .png or .pdf)",
)
@click.option(
    "--calibration",
    "calibration_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="The cluster's measured collectives (clusterforge accept's report.json): inter-node "
    "results run at the measured / simulated bus bandwidth",
)
def command(
    spec: str | None,
    collective: Collective,
    size_text: str | None,
    sweep_text: str | None,
    gpus: int | None,
    kind: Communicators,
    placement: Placement,
    routing: Routing,
    qps: int,
    algorithm: AlgorithmChoice,
    protocol: ProtocolChoice,
    seed: int,
    as_json: bool,
    other: str | None,
    plot_path: str | None,
    calibration_path: str | None,
) -> None:
    """Simulate COLLECTIVE on the fabric designed from SPEC (default: the built-in spec)."""
    if size_text and sweep_text:
        raise click.UsageError("give --size or --sweep, not both")
    sizes = (
        (parse_size(size_text),) if size_text
        else parse_sweep(sweep_text) if sweep_text else DEFAULT_SWEEP
    )  # fmt: skip
    request = StudyRequest(
        specs=(spec, other) if other else (spec,),
        collective=collective,
        sizes=sizes,
        group_kind=kind,
        placement=placement,
        num_gpus=gpus,
        seed=seed,
        routing=routing,
        num_qps=qps,
        algorithm=algorithm,
        protocol=protocol,
    )
    if plot_path is not None:
        check_picture_path(Path(plot_path))  # before the simulation, not after
    calibration = load_calibration(Path(calibration_path)) if calibration_path else None
    console = make_console()
    studies = run_with_progress(request, None if as_json else console, calibration)
    write_plot(plot_path, studies)
    if as_json:
        # one study's fields at the top (as before); two side by side as "studies"
        payload = [study_json(s) for s in studies]
        data = {"studies": payload} if other else payload[0]
        click.echo(json.dumps(json_document("simulate", data), indent=2))
        return
    render_studies(studies, console)
