"""``clusterforge check``: run the node health checks, print them, optionally drain/cordon.

Exit status: 0 healthy (warnings allowed), 1 unhealthy, 2 could not check (a read failed or
hung, or ``--node`` is not one of the design's nodes).

Counters are judged by their increase since the previous run, kept in ``--state-file``
(:mod:`clusterforge.ops.state`); the first run, or a run without a state file, is a baseline.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from clusterforge.errors import AdapterError
from clusterforge.ops.actions import (
    Decision,
    KubernetesBackend,
    SchedulerBackend,
    SlurmBackend,
    apply_action,
)
from clusterforge.ops.checks import CheckResult, Thresholds
from clusterforge.ops.expect import (
    NodeExpectation,
    UnknownNodeError,
    expectation_from_design,
    with_overrides,
)
from clusterforge.ops.nvml import NvmlApi, RecordedNvml
from clusterforge.ops.readings import NodeReading
from clusterforge.ops.runner import Report, local_node_name, run_checks
from clusterforge.ops.state import default_state_path, load_state, save_state
from clusterforge.ops.sysfs import SysfsReader
from clusterforge.ops.xid import load_xid_policy

__all__ = ["build_check_fn", "command", "source_options"]

_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "unknown": "magenta"}
# Slurm kills a HealthCheckProgram after 60 s (slurm.conf(5), operations.md §7): readings get
# --timeout-s (45 s by default) and the drain/resume calls share what is left of this margin.
_ACTION_MARGIN_S = 13.0
_MAX_ACTION_CALL_S = 15.0


def source_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by ``check`` and ``exporter``: what to read and what to expect."""
    options = [
        click.option(
            "--expect",
            "expect_path",
            type=click.Path(dir_okay=False),
            help="Cluster spec YAML: the node should match its design.",
        ),
        click.option("--node", help="Node name for reports and actions (default: short hostname)."),
        click.option(
            "--nvml-fixture",
            type=click.Path(exists=True, dir_okay=False),
            help="Replay recorded NVML readings (JSON) instead of the real GPUs.",
        ),
        click.option(
            "--sysfs-root",
            type=click.Path(exists=True, file_okay=False),
            default="/",
            show_default=True,
            help="Root of /sys, /proc (a fake tree in tests).",
        ),
        click.option(
            "--timeout-s",
            type=click.FloatRange(1, 3600),
            default=45.0,
            show_default=True,
            help="Budget for all readings (Slurm kills a health check after 60 s).",
        ),
        click.option(
            "--xid-policy",
            type=click.Path(exists=True, dir_okay=False),
            help="YAML overriding the default XID actions.",
        ),
        click.option(
            "--mount", "mounts", multiple=True, help="Filesystem that must be mounted and writable."
        ),
        click.option("--min-free-gib", type=float, help="Minimum free space on each --mount."),
        click.option("--gpu", "gpu_id", help="Expected catalog GPU id (overrides the spec)."),
        click.option("--num-gpus", type=int, help="Expected GPUs per node."),
        click.option("--num-nics", type=int, help="Expected compute NIC ports."),
        click.option("--nic-gbit-per-s", type=float, help="Expected compute NIC speed, Gb/s."),
        click.option("--fabric", type=click.Choice(["infiniband", "roce"]), help="Compute fabric."),
        click.option("--driver-version", help="The cluster's NVIDIA driver version."),
        click.option("--cuda-version", help="The cluster's CUDA driver version (e.g. 12.4)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _expectation(opts: dict[str, Any], node: str) -> NodeExpectation:
    if opts["expect_path"]:
        from clusterforge.design import plan
        from clusterforge.spec import load_spec

        base = expectation_from_design(plan(load_spec(opts["expect_path"])), node)
    else:
        base = NodeExpectation()
    return with_overrides(
        base,
        gpu_id=opts["gpu_id"], num_gpus=opts["num_gpus"], num_compute_nics=opts["num_nics"],
        nic_gbit_per_s=opts["nic_gbit_per_s"], fabric=opts["fabric"],
        driver_version=opts["driver_version"], cuda_driver_version=opts["cuda_version"],
        mounts=tuple(opts["mounts"]), min_free_gib=opts["min_free_gib"],
    )  # fmt: skip


def _nvml_factory(fixture: str | None) -> Callable[[], NvmlApi]:
    if fixture:
        return lambda: RecordedNvml.from_file(fixture)

    def real() -> NvmlApi:
        from clusterforge.ops.nvml_pynvml import PynvmlApi

        return PynvmlApi()

    return real


def build_check_fn(opts: dict[str, Any]) -> tuple[str, Callable[[NodeReading | None], Report]]:
    """(node name, function running all checks) from the shared options.

    Raises :class:`UnknownNodeError` when ``--expect`` is given and the node is not in it.
    """
    node = opts["node"] or local_node_name()
    expect = _expectation(opts, node)
    policy = load_xid_policy(opts["xid_policy"])
    sysfs = SysfsReader(opts["sysfs_root"], timeout_s=min(5.0, opts["timeout_s"] / 4))
    factory = _nvml_factory(opts["nvml_fixture"])

    def check(previous: NodeReading | None) -> Report:
        report = run_checks(
            node, factory, sysfs, expect, policy, opts["timeout_s"], Thresholds(), previous
        )
        facts = expect.facts
        return dataclasses.replace(report, facts=facts) if facts else report

    return node, check


def _rows(results: tuple[CheckResult, ...], verbose: bool) -> list[tuple[str, str, str, str, str]]:
    """One row per check id when all pass; one per non-passing subject otherwise."""
    rows = []
    for check_id in dict.fromkeys(r.check for r in results):
        group = [r for r in results if r.check == check_id]
        shown = group if verbose else [r for r in group if r.status != "pass"]
        if not shown:
            single = len(group) == 1
            rows.append(
                (
                    check_id,
                    "pass",
                    group[0].subject if single else f"{len(group)} subjects",
                    group[0].observed if single else "all pass",
                    group[0].expected,
                )
            )
        rows.extend((check_id, r.status, r.subject, r.observed, r.expected) for r in shown)
    return rows


def _print_table(report: Report, decision: Decision | None, verbose: bool) -> None:
    console = Console()
    where = f" ({report.facts.describe()})" if report.facts else ""
    table = Table(title=f"clusterforge check: {report.node}{where}")
    for column in ("check", "status", "subject", "observed", "expected"):
        table.add_column(column, overflow="fold")
    for check_id, status, *rest in _rows(report.results, verbose):
        table.add_row(check_id, f"[{_STYLE[status]}]{status}[/]", *rest)
    console.print(table)
    remedies = {
        r.check: r.remedy for r in report.results if r.status in ("fail", "warn") and r.remedy
    }
    for check_id, remedy in remedies.items():
        console.print(f"[bold]{check_id}[/]: {remedy}", highlight=False)
    for error in report.errors:
        console.print(f"[magenta]could not read:[/] {error}", highlight=False)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    status = report.status
    console.print(
        f"node {report.node}: [{_STYLE[status]}]{status}[/] in {report.duration_s:.1f} s",
        highlight=False,
    )
    if decision is not None:
        console.print(f"action: {decision.kind}: {decision.detail}", highlight=False)


def _backend(action: str, call_timeout_s: float) -> SchedulerBackend:
    if action == "slurm-drain":
        return SlurmBackend(timeout_s=call_timeout_s)
    return KubernetesBackend(timeout_s=call_timeout_s)


def _act(report: Report, action: str, max_fraction: float, left_s: float) -> Decision | None:
    """Drain/resume; a scheduler that cannot be reached is reported, not a crash."""
    if action == "none":
        return None
    # Two scheduler round trips (state, then drain/resume) share what is left.
    call_timeout_s = min(_MAX_ACTION_CALL_S, max(2.0, left_s / 2))
    try:
        decision = apply_action(report, _backend(action, call_timeout_s), max_fraction)
    except AdapterError as exc:
        decision = Decision("error", f"could not {action}: {exc}")
    if decision.kind in ("breaker", "error"):
        Console(stderr=True).print(f"[bold red]ALERT:[/] {decision.detail}", highlight=False)
    return decision


def _state_path(option: str, node: str) -> tuple[Path | None, str | None]:
    """The state file to use and, when there is none, why."""
    if option.lower() == "none" or not option:
        return None, None
    if option != "auto":
        return Path(option), None
    path = default_state_path(node)
    if path is None:
        return None, (
            "no writable /var/lib/clusterforge: counters are judged by their totals; "
            "pass --state-file PATH to judge their increase between runs"
        )
    return path, None


def _run_with_state(
    check: Callable[[NodeReading | None], Report], node: str, state_option: str
) -> Report:
    """Run the checks against the previous run's counters, then store this run's."""
    path, why = _state_path(state_option, node)
    if path is None:
        report = check(None)
        return dataclasses.replace(report, notes=(*report.notes, *([why] if why else [])))
    loaded = load_state(path, node, time.time())
    report = check(loaded.previous)
    notes = list(loaded.notes)
    if report.errors:
        notes.append(f"state file {path} not updated: some readings failed")
    else:
        failed = save_state(path, report.reading)
        notes += [failed] if failed else []
    return dataclasses.replace(report, notes=(*report.notes, *notes))


@click.command("check")
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--action",
    type=click.Choice(["none", "slurm-drain", "k8s-taint"]),
    default="none",
    show_default=True,
    help="Drain/cordon an unhealthy node; resume it when healthy.",
)
@click.option(
    "--max-drain-fraction",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Circuit breaker: never let clusterforge drain more than this share of nodes.",
)
@click.option(
    "--state-file",
    default="auto",
    show_default=True,
    envvar="CLUSTERFORGE_CHECK_STATE_FILE",
    help="JSON file keeping the counters of the previous run, so rising counters are judged "
    "by their increase; 'auto': /var/lib/clusterforge/check-state-NODE.json when writable; "
    "'none': no state (every run is a baseline).",
)
@click.option("--verbose", "-v", is_flag=True, help="Show every result, not only the problems.")
def command(
    as_json: bool,
    action: str,
    max_drain_fraction: float,
    state_file: str,
    verbose: bool,
    **opts: Any,
) -> int:
    """Run the node health checks (GPUs, NICs, host); exit 0 healthy, 1 unhealthy, 2 unknown."""
    start = time.monotonic()
    try:
        node, check = build_check_fn(opts)
    except UnknownNodeError as exc:
        Console(stderr=True).print(
            f"[bold red]could not check:[/] {exc}", highlight=False, soft_wrap=True
        )
        return 2
    report = _run_with_state(check, node, state_file)
    left_s = opts["timeout_s"] + _ACTION_MARGIN_S - (time.monotonic() - start)
    decision = _act(report, action, max_drain_fraction, left_s)
    if as_json:
        data = report.to_dict()
        data["action"] = (
            None if decision is None else {"kind": decision.kind, "detail": decision.detail}
        )
        click.echo(json.dumps(data, indent=1))
    else:
        _print_table(report, decision, verbose)
    return report.exit_code
