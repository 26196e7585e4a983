"""A sanity sweep of ``simulate`` beyond the validation rows.

Runs ``simulate_collective`` (the entry point ``benchmarks/validate_simulate.py`` scores) on
a grid of catalog nodes and fabrics, node counts 1..1,024, the six collectives and sizes
8 KiB..16 GiB, and flags what no NCCL run can show:

- ``ceiling``: busbw above the bound the bytes allow. Inside one NVLink domain of R GPUs
  every GPU sends or receives (R-1)/R of the data in each nccl-tests bus unit, so busbw <=
  the GPU's NVLink rate one way (half the catalog's both-ways figure); NVLS reduces in the
  switch and halves an all-reduce's bytes: 2x for all-reduce with NVLS in the domain.
  Across D domains of g GPUs each, a domain must send (all-reduce, reduce-scatter) or
  receive (all-gather) (D-1)/D of the data per bus unit: busbw <= g x NIC rate x (R-1)/R x
  D/(D-1); 2x for all-reduce where the switches reduce (SHARP, CollNet). Broadcast and reduce:
  <= g x NIC rate. All-to-all: <= NIC rate per GPU x (R-1)/(R-g).
- ``non-finite``: NaN, inf or a time <= 0 for a group of two or more GPUs.
- ``time-falls``: time lower at twice the size.
- ``busbw-falls``: busbw 3 % lower at twice the size, from 64 MiB up (bandwidth regime).
- ``step``: time more than 2.1x at twice the size: a latency-plus-bandwidth time at most
  doubles, and NCCL's choice of the fastest pair keeps it continuous.
- ``busbw-rises``: busbw 5 % higher on more nodes at >= 256 MiB, both counts spanning two or
  more NVLink domains (the ceilings only fall with D).
- ``exception``: anything but a ``SimulationError`` (those are listed as clear errors).
- ``slow``: one call over 2 s.

    python benchmarks/simulate_sanity_sweep.py [--quick] [--examples N]
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from rich.progress import Progress

from clusterforge.catalog import load_catalog
from clusterforge.design import plan
from clusterforge.errors import SimulationError
from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.spec import parse_spec
from clusterforge.topology.graph import FabricGraph

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce")
SIZES_BYTES = tuple(2**k for k in range(13, 35))  # 8 KiB .. 16 GiB
NODE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TRAY_COUNTS = (1, 2, 9, 18, 36, 72, 144, 288, 576, 1024)
# all-to-all builds R^2 flows: the full size grid up to this many GPUs, one size above it
ALLTOALL_FULL_GPUS = 256
SLOW_S = 2.0
BANDWIDTH_BYTES = 64 * 2**20
RISE_BYTES = 256 * 2**20
EXAMPLE_100K = Path(__file__).resolve().parents[1] / "examples" / "colossus-100k-h100.yaml"


@dataclass(frozen=True)
class Config:
    """One cluster: a catalog node, its ``network`` overrides and the node counts swept."""

    label: str
    node: str
    network: dict[str, Any] = field(default_factory=dict)
    counts: tuple[int, ...] = NODE_COUNTS


ROCE = {"fabric": "roce", "switch": "sn5600"}
CONFIGS = (
    Config("DGX A100 IB rail", "dgx-a100"),
    Config("DGX A100 IB fat-tree", "dgx-a100", {"topology": "fat-tree"}),
    Config("DGX H100 IB rail", "dgx-h100"),
    Config("DGX H100 RoCE Spectrum-X rail", "dgx-h100", ROCE),
    Config("HGX H100 IB fat-tree", "hgx-h100", {"topology": "fat-tree"}),
    Config("DGX H200 IB rail", "dgx-h200"),
    Config("DGX B200 IB rail", "dgx-b200"),
    Config("DGX B200 RoCE fat-tree", "dgx-b200", {**ROCE, "topology": "fat-tree"}),
    Config("GB200 NVL72 RoCE", "gb200-nvl72-tray", ROCE, TRAY_COUNTS),
    Config("GB200 NVL72 IB", "gb200-nvl72-tray", {}, TRAY_COUNTS),
    Config("GB300 NVL72 RoCE", "gb300-nvl72-tray", ROCE, TRAY_COUNTS),
    Config(
        "AWS p4de EFA",
        "dgx-a100",
        {"efa_instance": "p4de.24xlarge", "nics_per_node": 4, "nic_gbit_per_s": 100},
        NODE_COUNTS[:8],
    ),
    Config("AWS p5 EFA", "dgx-h100", {"fabric": "roce", "efa_instance": "p5.48xlarge"}),
    Config("AWS p5en EFA", "dgx-h200", {"fabric": "roce", "efa_instance": "p5en.48xlarge"}),
    Config(
        "AWS p6-b200 EFA",
        "dgx-b200",
        {"efa_instance": "p6-b200.48xlarge", "nccl_tuner": "aws-ofi-p6-b200"},
    ),
)


@dataclass(frozen=True)
class Point:
    """One simulated call."""

    size_bytes: int
    time_s: float
    busbw_gbyte_per_s: float
    choice: str
    wall_s: float


@dataclass(frozen=True)
class Series:
    """One (cluster, node count, collective) over sizes, with its ceiling."""

    config: str
    num_nodes: int
    collective: str
    ceiling_gbyte_per_s: float
    ceiling_reason: str
    domains: int
    points: tuple[Point, ...]


def build_graph(config: Config, num_nodes: int) -> FabricGraph:
    """The fabric as ``validation.nccl_rows`` builds a row's, with the config's network."""
    gpus = load_catalog().nodes[config.node].num_gpus * num_nodes
    spec: dict[str, Any] = {
        "name": f"{config.node}-x{num_nodes}",
        "num_gpus": gpus,
        "node": config.node,
        "spare_fraction": 0,
        # rack-scale NVL72 systems draw ~132 kW a rack (as the GB200/GB300 rows state)
        "facility": {"max_rack_kw": 140, "cooling_available": ["air", "direct-to-chip"]},
        "workload": {"tensor_parallel": math.gcd(8, gpus), "global_batch": gpus},
    }
    if config.network:
        spec["network"] = dict(config.network)
    return build_fabric_graph(plan(parse_spec(spec)))


def ceiling(
    graph: FabricGraph, node: str, collective: str, group: np.ndarray
) -> tuple[float, str, int]:
    """The busbw bound of the module docstring for one group of GPU ranks, its reason, and
    the NVLink domains the group spans (g of its GPUs in each)."""
    gpu = load_catalog().gpus[load_catalog().nodes[node].gpu]
    nvlink = gpu.scaleup_gbyte_per_s / 2
    ranks = int(group.size)
    domains = int(np.unique(group // graph.domain_gpus).size)
    g = ranks // domains
    intra = nvlink * (2 if collective == "all_reduce" and graph.nvls else 1)
    why = f"NVLink {nvlink:.0f} GB/s one way" + (" x2 NVLS" if intra > nvlink else "")
    if domains == 1:
        return intra, why, 1
    nic_per_gpu = graph.nic_gbyte_per_s * graph.nics_per_node / graph.gpus_per_node
    out = g * nic_per_gpu
    if collective in ("all_reduce", "all_gather", "reduce_scatter"):
        out *= (ranks - 1) / ranks * domains / (domains - 1)
        if collective == "all_reduce" and graph.in_network_reduction:
            out *= 2
            why += "; x2 SHARP"
    elif collective == "all_to_all":
        out = nic_per_gpu * (ranks - 1) / (ranks - g)
    why += f"; NIC {nic_per_gpu:.1f} GB/s per GPU, {g} GPUs in each of {domains} domains"
    return min(intra, out), why, domains


def run_series(
    graph: FabricGraph,
    node: str,
    where: tuple[str, int, str],
    sizes: tuple[int, ...],
    groups: np.ndarray,
) -> tuple[Series | None, str | None]:
    """Simulate every size on ``groups`` at once; (series, None) or (None, the error)."""
    label, num_nodes, collective = where
    points = []
    for size in sizes:
        start = time.perf_counter()
        try:
            res = simulate_collective(graph, collective, size, groups)  # type: ignore[arg-type]
        except SimulationError as exc:
            return None, f"clear error: {str(exc).splitlines()[0][:160]}"
        except Exception as exc:  # the sweep reports what escapes
            return None, f"exception: {type(exc).__name__}: {exc}"[:200]
        wall = time.perf_counter() - start
        choice = f"{res.algorithm}/{res.protocol}"
        points.append(Point(size, res.time_s, res.busbw_gbyte_per_s, choice, wall))
    cap, why, domains = ceiling(graph, node, collective, groups[0])
    return Series(label, num_nodes, collective, cap, why, domains, tuple(points)), None


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def size_flags(s: Series) -> list[tuple[str, str]]:
    """(class, detail) of every anomaly along one series' sizes."""
    where = f"{s.config}, {s.num_nodes} nodes, {s.collective}"
    out: list[tuple[str, str]] = []
    for p in s.points:
        bad = not (math.isfinite(p.time_s) and math.isfinite(p.busbw_gbyte_per_s))
        if bad or p.time_s <= 0 or p.busbw_gbyte_per_s < 0:
            out.append(("non-finite", f"{where} {_size(p.size_bytes)}: t={p.time_s}"))
        if p.busbw_gbyte_per_s > s.ceiling_gbyte_per_s * 1.01:
            out.append((
                "ceiling",
                f"{where} {_size(p.size_bytes)} {p.choice}: {p.busbw_gbyte_per_s:.1f} > "
                f"{s.ceiling_gbyte_per_s:.1f} GB/s ({s.ceiling_reason})",
            ))  # fmt: skip
        if p.wall_s > SLOW_S:
            out.append(("slow", f"{where} {_size(p.size_bytes)}: {p.wall_s:.1f} s"))
    for a, b in itertools.pairwise(s.points):
        ratio = b.time_s / a.time_s if a.time_s > 0 else math.inf
        step = f"{where} {_size(a.size_bytes)}->{_size(b.size_bytes)} {a.choice}->{b.choice}"
        if ratio < 1 - 1e-9:
            out.append(("time-falls", f"{step}: time x{ratio:.3f}"))
        elif ratio > 2.1 * b.size_bytes / (2 * a.size_bytes):
            out.append(("step", f"{step}: time x{ratio:.2f}"))
        if a.size_bytes >= BANDWIDTH_BYTES and b.busbw_gbyte_per_s < 0.97 * a.busbw_gbyte_per_s:
            out.append((
                "busbw-falls",
                f"{step}: {a.busbw_gbyte_per_s:.1f} -> {b.busbw_gbyte_per_s:.1f} GB/s",
            ))  # fmt: skip
    return out


def count_flags(series: list[Series]) -> list[tuple[str, str]]:
    """busbw rising with the node count across NVLink domains at large sizes."""
    by_key: dict[tuple[str, str, int], list[tuple[int, Point]]] = defaultdict(list)
    for s in series:
        if s.domains < 2:
            continue
        for p in s.points:
            if p.size_bytes >= RISE_BYTES:
                by_key[(s.config, s.collective, p.size_bytes)].append((s.num_nodes, p))
    out = []
    for (config, collective, size), pts in by_key.items():
        pts.sort(key=lambda x: x[0])
        for (n1, p1), (n2, p2) in itertools.pairwise(pts):
            if p2.busbw_gbyte_per_s > 1.05 * p1.busbw_gbyte_per_s:
                out.append((
                    "busbw-rises",
                    f"{config}, {collective} {_size(size)}: {n1} nodes {p1.choice} "
                    f"{p1.busbw_gbyte_per_s:.1f} -> {n2} nodes {p2.choice} "
                    f"{p2.busbw_gbyte_per_s:.1f} GB/s",
                ))  # fmt: skip
    return out


def _jobs(quick: bool) -> list[tuple[Config, int, str, tuple[int, ...]]]:
    jobs = []
    for config in CONFIGS:
        gpn = load_catalog().nodes[config.node].num_gpus
        counts = config.counts[::3] if quick else config.counts
        for n in counts:
            for collective in COLLECTIVES:
                sizes = SIZES_BYTES
                if collective == "all_to_all" and n * gpn > ALLTOALL_FULL_GPUS:
                    sizes = (2**30,)  # one size: the time of R^2 flows, or the clear limit
                if sizes:
                    jobs.append((config, n, collective, sizes))
    return jobs


def sweep(quick: bool) -> tuple[list[Series], list[str], float]:
    """Every job of the grid: the series, the errors, the slowest graph build."""
    jobs = _jobs(quick)
    series: list[Series] = []
    errors: list[str] = []
    graphs: dict[tuple[str, int], FabricGraph] = {}
    slowest_build_s = 0.0
    with Progress() as progress:
        task = progress.add_task("simulate", total=sum(len(j[3]) for j in jobs))
        for config, n, collective, sizes in jobs:
            if (config.label, n) not in graphs:
                start = time.perf_counter()
                graphs = {(config.label, n): build_graph(config, n)}  # one at a time
                slowest_build_s = max(slowest_build_s, time.perf_counter() - start)
            graph = graphs[(config.label, n)]
            # the first n nodes (a design may round up to whole racks and keep the rest spare)
            group = np.arange(n * graph.gpus_per_node)[None, :]
            s, err = run_series(graph, config.node, (config.label, n, collective), sizes, group)
            if s is not None:
                series.append(s)
            if err is not None:
                errors.append(f"{config.label}, {n} nodes, {collective}: {err}")
            progress.advance(task, len(sizes))
    return series, errors, slowest_build_s


def example_probe() -> tuple[list[Series], list[str]]:
    """The 100,000-GPU example (``examples/colossus-100k-h100.yaml``): its tensor-, data- and
    pipeline-parallel groups, all at once, every collective at 1 MiB and 1 GiB."""
    design = plan(parse_spec(yaml.safe_load(EXAMPLE_100K.read_text())))
    graph = build_fabric_graph(design)
    series: list[Series] = []
    errors: list[str] = []
    for kind in ("tp", "dp", "pp"):
        groups = groups_for(design, kind)
        nodes = int(np.unique(groups[0] // graph.gpus_per_node).size)
        for collective in COLLECTIVES:
            where = (f"100k example {kind} x{groups.shape[0]}", nodes, collective)
            s, err = run_series(graph, design.spec.node, where, (2**20, 2**30), groups)
            if s is not None:
                series.append(s)
            if err is not None:
                errors.append(f"{where[0]}, {collective}: {err}")
    return series, errors


def report(series: list[Series], errors: list[str], build_s: float, examples: int) -> None:
    flags = [f for s in series for f in size_flags(s)] + count_flags(series)
    flags += [("exception", e) for e in errors if ": exception:" in e]
    calls = sum(len(s.points) for s in series)
    wall = sum(p.wall_s for s in series for p in s.points)
    slowest = max((p.wall_s for s in series for p in s.points), default=0.0)
    print(f"\n{len(series)} series, {calls} calls, {wall:.1f} s in simulate_collective "
          f"(slowest call {slowest:.2f} s, slowest graph build {build_s:.2f} s)")  # fmt: skip
    by_class: dict[str, list[str]] = defaultdict(list)
    for name, detail in flags:
        by_class[name].append(detail)
    for name in ("non-finite", "exception", "ceiling", "time-falls", "step", "busbw-falls",
                 "busbw-rises", "slow"):  # fmt: skip
        found = by_class.get(name, [])
        print(f"\n{name}: {len(found)}")
        for line in found[:examples]:
            print(f"  {line}")
    clear = [e for e in errors if ": clear error:" in e]
    print(f"\nclear errors: {len(clear)}")
    for line in clear[:examples]:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every third node count")
    parser.add_argument("--examples", type=int, default=8, help="lines printed per class")
    args = parser.parse_args()
    start = time.perf_counter()
    series, errors, build_s = sweep(args.quick)
    more, more_errors = example_probe()
    series, errors = series + more, errors + more_errors
    report(series, errors, build_s, args.examples)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
