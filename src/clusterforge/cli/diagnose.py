"""``clusterforge diagnose``: why is my job slow?  Verdicts from Prometheus.

Exit status: 0 diagnosed, 1 bad input, 2 could not diagnose (Prometheus unreachable or
without series for the job).  The work is :func:`clusterforge.diagnose.run_diagnose`.
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from clusterforge.cli.params import FiniteFloat
from clusterforge.diagnose import (
    DiagnoseRequest,
    JobSelector,
    NoSeriesError,
    PrometheusUnreachableError,
    expand_hostlist,
    run_diagnose,
    thresholds_from,
)
from clusterforge.report.diagnose import diagnose_json, print_diagnose
from clusterforge.report.terminal import make_console

__all__ = ["command", "parse_request"]


def parse_request(
    *,
    prometheus: str,
    job: str | None,
    nodes: str | None,
    since: str,
    expect: Path | None,
    tokens_query: str | None,
    at: float | None,
    threshold: tuple[str, ...] = (),
) -> DiagnoseRequest:
    """Options into the request; exactly one of ``--job`` and ``--nodes``."""
    if (job is None) == (nodes is None):
        raise click.UsageError("give exactly one of --job and --nodes")
    pairs = [item.partition("=") for item in threshold]
    if any(not sep for _, sep, _ in pairs):
        raise click.UsageError("--threshold takes NAME=VALUE, e.g. memory_bound_dram_min=0.7")
    selector = (
        JobSelector(job=job) if job is not None else JobSelector(nodes=expand_hostlist(nodes or ""))
    )
    return DiagnoseRequest(
        prometheus_url=prometheus,
        selector=selector,
        window=since,
        at_s=at,
        tokens_query=tokens_query,
        expect_spec=expect,
        thresholds=thresholds_from({name: value for name, _, value in pairs}),
    )


def _could_not(exc: Exception) -> int:
    line = Text("could not diagnose: ", style="bold red") + Text(str(exc))
    Console(stderr=True).print(line, highlight=False, soft_wrap=True)
    return 2


@click.command("diagnose")
@click.option(
    "--prometheus", required=True, help="Prometheus base URL, e.g. http://127.0.0.1:9090."
)
@click.option("--job", help="Slurm job id (dcgm-exporter's hpc_job label).")
@click.option("--nodes", help="Slurm host list, e.g. gpu-00[01-64].")
@click.option("--since", default="30m", show_default=True, help="Window to average over.")
@click.option(
    "--expect",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Spec whose predicted throughput the job is compared with.",
)
@click.option("--tokens-query", help="PromQL giving the job's tokens/s, if it exports one.")
@click.option("--at", type=FiniteFloat, help="Evaluate at this Unix time instead of now.")
@click.option(
    "--threshold",
    multiple=True,
    metavar="NAME=VALUE",
    help="Change a rule's threshold, e.g. memory_bound_dram_min=0.7 (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as JSON.")
def command(
    prometheus: str,
    job: str | None,
    nodes: str | None,
    since: str,
    expect: Path | None,
    tokens_query: str | None,
    at: float | None,
    threshold: tuple[str, ...],
    as_json: bool,
) -> int:
    """Why is my job slow: a verdict per job and node, with the numbers behind it."""
    request = parse_request(
        prometheus=prometheus, job=job, nodes=nodes, since=since, expect=expect,
        tokens_query=tokens_query, at=at, threshold=threshold,
    )  # fmt: skip
    try:
        result = run_diagnose(request)
    except (PrometheusUnreachableError, NoSeriesError) as exc:
        return _could_not(exc)
    if as_json:
        click.echo(diagnose_json(result))
    else:
        print_diagnose(result, make_console())
    return 0
