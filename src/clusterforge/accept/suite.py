"""The acceptance suite: per-node tests, the fabric rounds at full load, the cross-node sweep,
the in-band network, and the localization of a slow node, through any launcher, judged against
the design's targets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from clusterforge.accept.fabric.pairs import Pair, fabric_rounds
from clusterforge.accept.fabric.verdicts import MAX_LOSS, fabric_results, fabric_rules
from clusterforge.accept.launch import Launcher, Step, StepRun
from clusterforge.accept.localize import Localization, bisect_slowest
from clusterforge.accept.targets import Targets, design_targets
from clusterforge.accept.verdicts import TestResult, collective_results, node_results
from clusterforge.errors import AcceptError

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "TESTS",
    "AcceptOptions",
    "AcceptReport",
    "FabricOptions",
    "Localize",
    "run_acceptance",
]

TestName = Literal["node", "fabric", "nccl", "net", "storage", "dcgm"]
Localize = Literal["auto", "always", "never"]
TESTS: tuple[TestName, ...] = ("node", "fabric", "nccl", "net", "storage", "dcgm")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class FabricOptions:
    """The fabric rounds: how long each runs, the loss limit, and (for the emulated cluster)
    where the stand-in traffic runs."""

    seconds: float = 10.0  # ib_write_bw -D per round
    max_loss: float = MAX_LOSS  # a site may tighten it
    tool: Literal["auto", "perftest", "iperf3"] = "auto"
    hcas: tuple[str, ...] = ()  # () = the design's compute HCAs
    # Emulated nodes: each node's network namespace ({node} in the name) and rail address.
    netns: str = ""
    rail_addrs: tuple[tuple[str, str], ...] = ()
    sysfs_root: str = "/"  # where the ports' counters are read ({node} in it: one per node)


@dataclass(frozen=True)
class AcceptOptions:
    """What to run and how hard (every field has a sensible default)."""

    nodes: tuple[str, ...] = ()  # () = the design's training nodes
    tests: tuple[TestName, ...] = ("node", "fabric", "nccl", "net", "storage")
    ranks_per_node: int | None = None  # None = the design's GPUs per node
    burn_s: float = 10.0
    min_bytes: int = 1 << 20
    max_bytes: int = 1 << 30
    storage_path: str = "/tmp"
    storage_p999_ms: float = 1.0
    dcgm_level: int = 2
    localize: Localize = "auto"
    cpu: bool = False  # CPU stand-in (gloo, numpy GEMM): judge against peers only
    # Per-node tests one node at a time: for emulated nodes that share one machine, where
    # running them together would measure the contention, not the nodes.
    serial_nodes: bool = False
    repeats: int = 2  # localization: best of this many runs per group (noise is one-sided)
    fabric: FabricOptions = field(default_factory=FabricOptions)


@dataclass(frozen=True)
class AcceptReport:
    nodes: tuple[str, ...]
    targets: Targets
    results: list[TestResult]
    collective_rows: list[dict[str, Any]]
    localization: Localization | None
    runs: list[StepRun] = field(repr=False, default_factory=list)

    @property
    def failed_nodes(self) -> list[str]:
        named = {r.node for r in self.results if r.verdict == "fail" and r.node != "all"}
        if self.localization and self.localization.culprit:
            named.add(self.localization.culprit)
        return sorted(named)

    @property
    def exit_code(self) -> int:
        if not self.results:
            return 2
        return 1 if any(r.verdict == "fail" for r in self.results) or self.failed_nodes else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": list(self.nodes),
            "results": [r.as_dict() for r in self.results],
            "collective": self.collective_rows,
            "localization": self.localization.as_dict() if self.localization else None,
            "failed_nodes": self.failed_nodes,
            "exit_code": self.exit_code,
        }


def _node_step(options: AcceptOptions, nodes: tuple[str, ...]) -> Step:
    name = "node" if len(nodes) > 1 else f"node-{nodes[0]}"
    args = ["node", "--burn-s", f"{options.burn_s:g}"]
    if "storage" in options.tests:
        args += ["--storage-path", options.storage_path]
    if "dcgm" in options.tests:
        args += ["--dcgm-level", str(options.dcgm_level)]
    return Step(name, tuple(args), nodes, 1)


def _collective_step(
    options: AcceptOptions, nodes: Sequence[str], ranks: int, name: str, *, ops: str
) -> Step:
    args = [
        "collective",
        "--ops",
        ops,
        "--min-bytes",
        str(options.min_bytes),
        "--max-bytes",
        str(options.max_bytes),
    ]
    if options.cpu:
        args += ["--backend", "gloo"]
    return Step(name, tuple(args), tuple(nodes), ranks)


def _fabric_step(
    design: Design, options: AcceptOptions, index: int, pairs: tuple[Pair, ...]
) -> Step:
    from clusterforge.generate.training.launch import ROCE_GID_INDEX, hca_names

    fabric = options.fabric
    hcas = fabric.hcas or tuple(hca_names(design))
    args = ["fabric", "--round", str(index), "--pairs", ",".join(f"{p.a}:{p.b}" for p in pairs),
            "--hcas", ",".join(hcas), "--seconds", f"{fabric.seconds:g}", "--tool", fabric.tool]  # fmt: skip
    if design.fabric.fabric == "roce":
        args += ["--gid-index", str(ROCE_GID_INDEX)]
    if fabric.netns:
        args += ["--netns", fabric.netns]
    if fabric.sysfs_root != "/":
        args += ["--sysfs-root", fabric.sysfs_root]
    if fabric.rail_addrs:
        args += ["--rail-addrs", ",".join(f"{n}={a}" for n, a in fabric.rail_addrs)]
    nodes = tuple(n for p in pairs for n in (p.a, p.b))
    return Step(f"fabric-{index}", tuple(args), nodes, 1, timeout_s=4 * fabric.seconds + 300)


def _fabric(
    design: Design, options: AcceptOptions, nodes: tuple[str, ...], launcher: Launcher,
    progress: Progress,
) -> tuple[list[TestResult], list[StepRun]]:  # fmt: skip
    """The fabric rounds, one launcher step each, and their verdicts."""
    names = design.compute.node_names
    known = [n for n in nodes if n in names]
    slots = np.array([names.index(n) for n in known], dtype=np.int64)
    leaves = design.fabric.connectivity.leaf_of(slots, np.zeros_like(slots))
    group_of = dict.fromkeys(nodes, -1) | dict(zip(known, leaves.tolist(), strict=True))
    rounds = fabric_rounds(nodes, group_of)
    runs = []
    for index, pairs in enumerate(rounds):
        progress(f"fabric round {index + 1}/{len(rounds)}: {len(pairs)} pairs, every rail")
        runs.append(launcher.run(_fabric_step(design, options, index, pairs)))
    records = [r for run in runs for r in run.records]
    crosses = len(set(group_of.values())) > 1
    rules = fabric_rules(design, nodes, max_loss=options.fabric.max_loss, crosses_spine=crosses)
    return fabric_results(records, rules), runs


def _measure(
    launcher: Launcher, options: AcceptOptions, ranks: int, runs: list[StepRun]
) -> Callable[[Sequence[str]], float]:
    """busbw of the largest all_reduce on a group of nodes (one launcher run per group)."""

    def once(group: Sequence[str], attempt: int) -> float:
        name = f"localize-{attempt}-" + "-".join(group)
        run = launcher.run(_collective_step(options, group, ranks, name, ops="all_reduce"))
        runs.append(run)
        rows = [r for r in run.records if r.get("op") == "all_reduce" and "busbw_gbyte_per_s" in r]
        if not rows:
            raise AcceptError(f"localization: the all_reduce on {', '.join(group)} gave no result")
        return float(max(rows, key=lambda r: r["size_bytes"])["busbw_gbyte_per_s"])

    def measure(group: Sequence[str]) -> float:
        # Interference only ever slows a run down, so the best of a few is the group's rate.
        return max(once(group, attempt) for attempt in range(max(1, options.repeats)))

    return measure


def _should_localize(
    options: AcceptOptions, results: list[TestResult], nodes: tuple[str, ...]
) -> bool:
    if options.localize == "never" or len(nodes) < 2 or "nccl" not in options.tests:
        return False
    return options.localize == "always" or any(r.verdict == "fail" for r in results)


def run_acceptance(
    design: Design,
    options: AcceptOptions,
    launcher: Launcher,
    progress: Progress = lambda _msg: None,
) -> AcceptReport:
    """Run the suite on the design's nodes (or ``options.nodes``) and judge it."""
    nodes = options.nodes or tuple(design.compute.node_names[: design.compute.num_training_nodes])
    ranks = 1 if options.cpu else options.ranks_per_node or design.compute.gpus_per_node
    targets = design_targets(
        design,
        num_nodes=len(nodes),
        size_bytes=float(options.max_bytes),
        storage_p999_ms=options.storage_p999_ms,
    )
    runs: list[StepRun] = []
    results: list[TestResult] = []
    rows: list[dict[str, Any]] = []
    if "node" in options.tests or "storage" in options.tests or "dcgm" in options.tests:
        progress(f"per-node tests on {len(nodes)} nodes")
        groups = [(n,) for n in nodes] if options.serial_nodes else [nodes]
        runs += [launcher.run(_node_step(options, group)) for group in groups]
    fabric_verdicts: list[TestResult] = []
    if "fabric" in options.tests and len(nodes) >= 2:
        fabric_verdicts, fabric_runs = _fabric(design, options, nodes, launcher, progress)
        runs += fabric_runs
    if "net" in options.tests and len(nodes) >= 2:
        progress("in-band network (iperf3 ring)")
        runs.append(launcher.run(Step("net", ("net", "--peers", ",".join(nodes)), nodes, 1)))
    records = [r for run in runs if not run.step.name.startswith("fabric") for r in run.records]
    results += node_results(records, targets) + fabric_verdicts
    if "nccl" in options.tests and len(nodes) >= 2:
        progress(f"collectives across {len(nodes)} nodes x {ranks} ranks")
        ops = "all_reduce,all_gather,reduce_scatter,all_to_all"
        run = launcher.run(_collective_step(options, nodes, ranks, "collective", ops=ops))
        runs.append(run)
        rows = [
            r for r in run.records if r.get("test") == "collective" and "busbw_gbyte_per_s" in r
        ]
        results += collective_results(run.records, targets, gpu=not options.cpu)
    localization = None
    if _should_localize(options, results, nodes):
        progress("localizing: bisection over halves")
        localization = bisect_slowest(nodes, _measure(launcher, options, ranks, runs))
    return AcceptReport(nodes, targets, results, rows, localization, runs)
