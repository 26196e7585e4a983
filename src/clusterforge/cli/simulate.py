"""``clusterforge simulate``: nccl-tests-style tables from the flow-level simulator."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from clusterforge.design import Design, plan
from clusterforge.errors import SpecError
from clusterforge.netsim import (
    ALGORITHMS,
    COLLECTIVES,
    PLACEMENTS,
    ROUTINGS,
    CollectiveResult,
    FabricGraph,
    build_fabric_graph,
    groups_for,
    simulate_collective,
)
from clusterforge.report.files import write_atomically
from clusterforge.report.plots import Series, busbw_chart_svg
from clusterforge.spec import load_spec

__all__ = ["command", "parse_size"]

# nccl-tests reads -b/-e suffixes K, M, G as powers of two; we also accept KiB/MiB/GiB (binary)
# and KB/MB/GB (decimal).
_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kib": 2**10,
    "kb": 10**3,
    "m": 2**20,
    "mib": 2**20,
    "mb": 10**6,
    "g": 2**30,
    "gib": 2**30,
    "gb": 10**9,
    "t": 2**40,
    "tib": 2**40,
    "tb": 10**12,
}
_SWEEP = tuple(2**e for e in range(20, 35))  # 1 MiB .. 16 GiB, x2 (nccl-tests -f 2)
_DTYPE_BYTES = 4  # nccl-tests' default type is float


def parse_size(text: str) -> int:
    """'1GiB' -> 1073741824; '1G' -> 2**30 (nccl-tests); '1GB' -> 10**9."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise SpecError(f"--size: cannot read {text!r}; write e.g. 1GiB, 256MiB, 1G or 1048576")
    value = int(float(m.group(1)) * _UNITS[unit])
    if value <= 0:
        raise SpecError(f"--size: {text!r} is zero; give a positive size")
    return value


def _human(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


@dataclass(frozen=True)
class _Case:
    """One design with its graph and groups."""

    name: str
    design: Design
    graph: FabricGraph
    groups: np.ndarray


def _case(path: str | None, kind: str, placement: str, gpus: int | None, seed: int) -> _Case:
    design = plan(load_spec(path))
    graph = build_fabric_graph(design)
    groups = groups_for(design, kind, placement=placement, num_gpus=gpus, seed=seed)
    return _Case(design.spec.name, design, graph, groups)


def _run(
    case: _Case, sizes: tuple[int, ...], opts: dict[str, Any], progress: Progress | None
) -> list[CollectiveResult]:
    task = progress.add_task(f"simulating {case.name}", total=len(sizes)) if progress else None
    out = []
    for size in sizes:
        out.append(
            simulate_collective(
                case.graph,
                opts["collective"],
                size,
                case.groups,
                routing=opts["routing"],
                num_qps=opts["qps"],
                algorithm=opts["algorithm"],
            )
        )
        if progress is not None and task is not None:
            progress.advance(task)
    return out


def _table(case: _Case, results: list[CollectiveResult]) -> Table:
    r0 = results[0]
    table = Table(
        title=f"{case.name}: {r0.collective}, {r0.num_groups} group(s) of "
        f"{r0.num_ranks} GPUs, {r0.routing}"
        + (f" x{r0.num_qps} QPs" if r0.routing == "ecmp" else "")
        + f", {_loss_mode(r0)}"
    )
    # two-line headers as nccl-tests prints them
    for col in (
        "size\n(B)",
        "count\n(elements)",
        "type",
        "algo",
        "time\n(us)",
        "algbw\n(GB/s)",
        "busbw\n(GB/s)",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    for r in results:
        table.add_row(
            f"{int(r.size_bytes)}",
            f"{int(r.size_bytes) // _DTYPE_BYTES}",
            "float",
            r.algorithm,
            f"{r.time_s * 1e6:.1f}",
            f"{r.algbw_gbyte_per_s:.2f}",
            f"{r.busbw_gbyte_per_s:.2f}",
        )
    return table


def _bottleneck_lines(case: _Case, r: CollectiveResult) -> list[str]:
    lines = [f"# Avg bus bandwidth    : {r.busbw_gbyte_per_s:.2f} GB/s at {_human(r.size_bytes)}"]
    link = r.limiting_link
    if link is not None:
        lines.append(
            f"# Limiting link        : {link.source} -> {link.target} ({link.link_class}, "
            f"{link.capacity_gbyte_per_s:g} GB/s): busy {link.busy_fraction:.0%}, offered "
            f"load {link.offered_load:.0%} of capacity"
        )
    spot = r.hotspot
    if r.congested and spot is not None:
        lines.append(
            f"# Most congested link  : {spot.source} -> {spot.target} ({spot.link_class}): "
            f"offered load {spot.offered_load:.0%} of capacity"
        )
    if r.congestion_response == "drop":
        lines.append(
            f"# [red]Congestion (lossy)[/]: offered load reaches {r.max_offered_load:.0%} of a "
            f"link; this {_loss_mode(r)} fabric would drop ~{r.drop_fraction:.0%} of the hot "
            "link's packets (1 - capacity/offered) until congestion control backs off"
        )
    elif r.congestion_response == "pause":
        push = "PFC pauses" if r.fabric == "roce" else "credit back-pressure stalls"
        lines.append(
            f"# [yellow]Congestion (lossless)[/]: offered load reaches "
            f"{r.max_offered_load:.0%} of a link; nothing is dropped, but {push} "
            f"{r.num_paused_links} upstream link(s); head-of-line blocking risk for "
            f"{r.hol_victim_share:.0%} of the other flows sharing them"
        )
    return lines


def _loss_mode(r: CollectiveResult) -> str:
    """'lossless InfiniBand', 'lossless RoCE (PFC)' or 'lossy RoCE'."""
    name = {"infiniband": "InfiniBand", "roce": "RoCE"}.get(r.fabric, r.fabric)
    if not r.lossless:
        return f"lossy {name}"
    return f"lossless {name}" + (" (PFC)" if r.fabric == "roce" else "")


def _vs_table(a: _Case, b: _Case, ra: list[CollectiveResult], rb: list[CollectiveResult]) -> Table:
    table = Table(title=f"{ra[0].collective}: A = {a.name} vs B = {b.name} (busbw in GB/s)")
    for col in ("size", "A time (us)", "A busbw", "B time (us)", "B busbw", "B / A"):
        table.add_column(col, justify="right", no_wrap=True)
    for x, y in zip(ra, rb, strict=True):
        table.add_row(
            _human(x.size_bytes),
            f"{x.time_s * 1e6:.1f}",
            f"{x.busbw_gbyte_per_s:.2f}",
            f"{y.time_s * 1e6:.1f}",
            f"{y.busbw_gbyte_per_s:.2f}",
            f"{y.busbw_gbyte_per_s / x.busbw_gbyte_per_s:.2f}x",
        )
    return table


def _json(case: _Case, results: list[CollectiveResult]) -> dict[str, Any]:
    return {"design": case.name, "results": [r.to_dict() for r in results]}


def _write_plot(path: str | None, cases: list[_Case], runs: list[list[CollectiveResult]]) -> None:
    """busbw against size for each design, as SVG (written whole or not at all)."""
    if path is None:
        return
    series = [
        Series(c.name, [x.size_bytes for x in r], [x.busbw_gbyte_per_s for x in r])
        for c, r in zip(cases, runs, strict=True)
    ]
    title = f"{runs[0][0].collective} bus bandwidth"
    svg = {Path(path).name: busbw_chart_svg(title, series)}
    write_atomically(Path(path).parent, svg, create=False)  # a missing folder is an error


@click.command("simulate")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--collective", default="all_reduce", show_default=True, type=click.Choice(COLLECTIVES)
)
@click.option(
    "--size",
    "size_text",
    default=None,
    help="Message size (nccl-tests 'size'), e.g. 1GiB; default: sweep 1MiB..16GiB",
)
@click.option("--gpus", type=int, default=None, help="GPUs in the job (default: all)")
@click.option(
    "--groups",
    "kind",
    default="all",
    show_default=True,
    type=click.Choice(["all", "dp", "tp", "pp", "cp"]),
    help="Communicators: one over all GPUs, or every DP/TP/PP/CP group at once",
)
@click.option("--placement", default="packed", show_default=True, type=click.Choice(PLACEMENTS))
@click.option(
    "--routing",
    default="adaptive",
    show_default=True,
    type=click.Choice(ROUTINGS),
    help="ecmp (hashed), adaptive (ideal spraying); valiant / ugal: non-minimal dragonfly "
    "routing (dragonfly designs only)",
)
@click.option("--qps", default=1, show_default=True, type=int, help="Queue pairs per flow (ECMP)")
@click.option("--algorithm", default="auto", show_default=True, type=click.Choice(ALGORITHMS))
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
    help="Also write busbw against message size as an SVG chart",
)
def command(
    spec: str | None,
    collective: str,
    size_text: str | None,
    gpus: int | None,
    kind: str,
    placement: str,
    routing: str,
    qps: int,
    algorithm: str,
    seed: int,
    as_json: bool,
    other: str | None,
    plot_path: str | None,
) -> None:
    """Simulate COLLECTIVE on the fabric designed from SPEC (default: the built-in spec)."""
    sizes = (parse_size(size_text),) if size_text else _SWEEP
    opts = {"collective": collective, "routing": routing, "qps": qps, "algorithm": algorithm}
    cases = [_case(p, kind, placement, gpus, seed) for p in [spec, *([other] if other else [])]]
    console = Console()
    if as_json:
        runs = [_run(c, sizes, opts, None) for c in cases]
        _write_plot(plot_path, cases, runs)
        payload: Any = [_json(c, r) for c, r in zip(cases, runs, strict=True)]
        click.echo(json.dumps(payload if other else payload[0], indent=2))
        return
    with Progress(console=console, transient=True, disable=len(sizes) == 1) as progress:
        runs = [_run(c, sizes, opts, progress) for c in cases]
    _write_plot(plot_path, cases, runs)
    for c, r in zip(cases, runs, strict=True):
        console.print(_table(c, r))
        for line in _bottleneck_lines(c, r[-1]):
            console.print(line, highlight=False, soft_wrap=True)
    if other:
        console.print(_vs_table(cases[0], cases[1], runs[0], runs[1]))
