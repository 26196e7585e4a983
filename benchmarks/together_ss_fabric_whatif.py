"""Together AI's B200 cluster use3a-ss: what its sources measure of the fabric, and what the
model's fabric settings (oversubscription, topology, routing) would do to its development rows.

The sources (read 2026-12-03) state the nodes (8 B200, 8 ConnectX-7 NDR 400 Gb/s HCAs
``mlx5_0,1,4,5,6,11,14,15``), the cluster's size (75 nodes) and SHARP (active from 2026-05-02,
LLT and SAT trees; off in April), but no switch model, leaf or spine count, uplinks per leaf,
rail wiring or routing (togethercomputer/together-dgxc-benchmarking
``tests/b200/worklog/2026-04-10_network_fabric_analysis.md`` at d275be993eb2 asks these of
the cluster's operators). What they measure:

* ``ib_write_bw -d <hca> -F -s 8M -n 2000`` (one queue pair, one HCA pair of two nodes) per
  HCA, cluster medians 44,700-45,140 MB/sec (togethercomputer/together-nccl-tests
  ``baselines/use3a-ss/straggler-report-20260429.md`` at 0492bede, Phase 6; the command from
  ``stragglers/README.md`` there). perftest's MB/sec is 2^20 bytes per second
  (``print_report_bw``: ``format_factor = 0x100000``, linux-rdma/perftest
  ``src/perftest_resources.c``).
* nccl-tests ``sendrecv_perf`` (a ring of point-to-point sends, 8 ranks a node, NVLS and
  SHARP off), 64 MiB, mean of 3 runs on different node sets, busbw GB/s
  (together-nccl-tests ``benchmarks/B200/sendrecv-p2p-scaling/P2P_Bandwidth_Scaling_2to64_Nodes.md``
  at 280e4df2, table "Sweep Test"; "contiguous vs scattered node placement has no measurable
  impact").

The what-if builds the 75-node cluster with each fabric setting, places a job on its first
nodes, and prints (1) the per-NIC rate, (2) the sendrecv ring by node count, (3) the
development nccl-tests rows of use3a-ss (``pub-tg-ss-*``; other clusters unchanged) and (4)
the development Llama 3 70B Megatron-FSDP rows (``pub_together_b200_bridge.toml``), with
development MAPE before and after. Nothing is adopted: no source states the settings. Held-out
rows are never simulated or predicted.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/together_ss_fabric_whatif.py
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from clusterforge.design import plan
from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.perf.comm import NetsimComm
from clusterforge.spec import parse_spec
from clusterforge.topology.graph import FabricGraph
from validation import nccl_rows
from validation.nccl_rows import LARGE_BYTES, ROWS, Scored, score
from validation.runs import Outcome, best_prediction, load_runs, predict_run, run_design

__all__ = ["FABRICS", "cluster_graph", "job_ranks", "main"]

# use3a-ss: "75 nodes, 8x B200 GPUs/node, InfiniBand NDR" (2026-04-10_network_fabric_analysis.md)
CLUSTER_NODES = 75
NICS_PER_NODE = 8
# ib_write_bw per-HCA cluster medians, MB/sec = 2^20 B/s (straggler-report-20260429.md)
IB_WRITE_MIB_PER_S = (44_700.0, 45_140.0)
# sendrecv_perf busbw at 64 MiB, GB/s, mean of runs 1-3 by node count (64 nodes: run 3 only)
SENDRECV_64MIB_GBYTE_PER_S = {2: 42.60, 4: 44.24, 8: 26.15, 16: 14.52, 32: 14.53, 64: 14.69}
SENDRECV_BYTES = 64 * 2**20
SS_PREFIX = "pub-tg-ss-"
FSDP_PREFIX = "together-b200-llama3-70b-fsdp-"

# (label, network fields, routing, placement): placement "first" puts a job on the cluster's
# first nodes, "spread" on nodes spread evenly over all 75 (so across leaves); the first entry
# is the validation's own fabric setting
FABRICS: tuple[tuple[str, dict[str, Any], str, str], ...] = (
    ("rail 1:1 adaptive", {"topology": "rail-optimized"}, "adaptive", "first"),
    ("rail 2:1 ecmp", {"topology": "rail-optimized", "oversubscription": 2.0}, "ecmp", "first"),
    (
        "rail 2:1 ecmp spread",
        {"topology": "rail-optimized", "oversubscription": 2.0},
        "ecmp",
        "spread",
    ),
    (
        "rail 4:1 ecmp spread",
        {"topology": "rail-optimized", "oversubscription": 4.0},
        "ecmp",
        "spread",
    ),
    ("leaf-spine 1:1 adaptive", {"topology": "leaf-spine"}, "adaptive", "first"),
    ("leaf-spine 1:1 ecmp", {"topology": "leaf-spine"}, "ecmp", "first"),
    ("leaf-spine 2:1 ecmp", {"topology": "leaf-spine", "oversubscription": 2.0}, "ecmp", "first"),
)


@functools.cache
def cluster_graph(
    topology: str, oversubscription: float, nodes: int = CLUSTER_NODES
) -> FabricGraph:
    """The fabric of ``nodes`` DGX B200 with the given topology and leaf oversubscription."""
    spec = {
        "name": f"use3a-ss-{topology}-{oversubscription:g}",
        "num_gpus": 8 * nodes,
        "node": "dgx-b200",
        "spare_fraction": 0,
        "network": {"topology": topology, "oversubscription": oversubscription},
        "workload": {"tensor_parallel": 8, "global_batch": 8 * nodes},
    }
    return build_fabric_graph(plan(parse_spec(spec)))


def _graph_of(network: dict[str, Any]) -> FabricGraph:
    return cluster_graph(network["topology"], float(network.get("oversubscription", 1.0)))


def job_ranks(num_nodes: int, placement: str) -> np.ndarray:
    """All 8 GPUs of ``num_nodes`` nodes of the cluster: its first ones, or spread evenly."""
    if placement == "first":
        nodes = np.arange(num_nodes)
    else:
        nodes = np.round(np.linspace(0, CLUSTER_NODES - 1, num_nodes)).astype(int)
    return (nodes[:, None] * 8 + np.arange(8)).ravel()


@contextmanager
def _on_cluster(network: dict[str, Any], routing: str, placement: str) -> Iterator[None]:
    """Score rows on the 75-node cluster (the job's nodes by ``placement``) with ``routing``."""
    saved = nccl_rows._graph, nccl_rows.simulate_collective, nccl_rows.ranks
    graph = _graph_of(network)

    def placed(row: dict[str, Any], gpus_per_node: int) -> np.ndarray:
        assert "ranks_per_node" not in row and "num_gpus" not in row
        return job_ranks(row["num_nodes"], placement)

    def on_cluster(node: str, num_nodes: int, *args: Any, **kwargs: Any) -> FabricGraph:
        assert node == "dgx-b200" and num_nodes <= CLUSTER_NODES
        return graph

    patched: Callable[..., Any] = functools.partial(saved[1], routing=routing)
    nccl_rows._graph = on_cluster  # type: ignore[assignment]
    nccl_rows.simulate_collective = patched  # type: ignore[assignment]
    nccl_rows.ranks = placed
    try:
        yield
    finally:
        nccl_rows._graph, nccl_rows.simulate_collective, nccl_rows.ranks = saved  # type: ignore[assignment]


def print_nic_rate() -> None:
    """(1) The measured per-HCA write rate against the model's and the rows' per-NIC rate."""
    lo, hi = (v * 2**20 / 1e9 for v in IB_WRITE_MIB_PER_S)
    ring2 = next(r for r in ROWS if r["id"] == f"{SS_PREFIX}b200-2n-ar-ring-16g")
    model = score(ring2).simulated_gbyte_per_s / NICS_PER_NODE
    fa2 = next(r for r in ROWS if r["id"] == "pub-tg-fa-b200-2n-ar-ring-32g")
    print("(1) per-NIC rate, GB/s")
    print(f"  ib_write_bw per HCA (one QP, 8 MiB), cluster medians  {lo:.2f} .. {hi:.2f}")
    print(f"  model, 2-node ring all-reduce busbw / 8 NICs          {model:.2f}")
    print(
        f"  measured 2-node ring / 8: use3a-ss {ring2['busbw'] / 8:.2f}, fa {fa2['busbw'] / 8:.2f}"
    )
    print(
        f"  measured 2-node sendrecv per NIC pair                 {SENDRECV_64MIB_GBYTE_PER_S[2]:.2f}"
    )


def print_sendrecv() -> None:
    """(2) The sendrecv ring of 8 ranks a node at 64 MiB, by node count and fabric."""
    nodes = sorted(SENDRECV_64MIB_GBYTE_PER_S)
    print("\n(2) sendrecv 64 MiB busbw, GB/s, by nodes: " + "  ".join(f"{n:>6}" for n in nodes))
    print(f"  {'measured':<26}" + "".join(f"{SENDRECV_64MIB_GBYTE_PER_S[n]:>8.1f}" for n in nodes))
    for label, network, routing, placement in FABRICS:
        graph = _graph_of(network)
        cells = []
        for n in nodes:
            res = simulate_collective(
                graph,
                "sendrecv",
                SENDRECV_BYTES,
                job_ranks(n, placement)[None, :],
                routing=routing,  # type: ignore[arg-type]
            )
            cells.append(f"{res.busbw_gbyte_per_s:>8.1f}")
        print(f"  {label:<26}" + "".join(cells))


def _dev_rows() -> list[dict[str, Any]]:
    return [r for r in ROWS if r["set"] == "development"]


def _mape(scored: list[Scored]) -> float:
    return statistics.fmean(abs(s.error) for s in scored) * 100


def _summary(scored: list[Scored]) -> str:
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
    ss = [s for s in scored if s.row["id"].startswith(SS_PREFIX)]
    return (
        f"development {_mape(scored):.2f} % ({len(scored)} rows); >= 16 MiB {_mape(large):.2f} % "
        f"({len(large)}); < 16 MiB {_mape(small):.2f} % ({len(small)}); use3a-ss {_mape(ss):.2f} % "
        f"({len(ss)}, signed median {statistics.median(s.error for s in ss) * 100:+.1f} %)"
    )


def print_nccl_rows() -> None:
    """(3) Development nccl-tests rows of use3a-ss under each fabric; overall before/after."""
    rows = _dev_rows()
    before = [score(r) for r in rows]
    ss_rows = [r for r in rows if r["id"].startswith(SS_PREFIX)]
    per_fabric: list[tuple[str, dict[str, Scored]]] = []
    for label, network, routing, placement in FABRICS:
        with _on_cluster(network, routing, placement):
            per_fabric.append((label, {r["id"]: score(r) for r in ss_rows}))
    print("\n(3) use3a-ss development rows: measured, then simulated busbw and error per fabric")
    print("  the validation (each job on its own fabric, rail 1:1 adaptive) first; fabrics:")
    for i, (label, _) in enumerate(per_fabric):
        print(f"    [{i}] {label} (the 75-node cluster)")
    base = {s.row["id"]: s for s in before}
    for r in ss_rows:
        cells = [f"{base[r['id']].simulated_gbyte_per_s:6.1f} {base[r['id']].error * 100:+5.1f}%"]
        cells += [
            f"{f[r['id']].simulated_gbyte_per_s:6.1f} {f[r['id']].error * 100:+5.1f}%"
            for _, f in per_fabric
        ]
        print(f"  {r['id']:<36} {r['busbw']:6.1f} | " + " | ".join(cells))
    print(f"  before: {_summary(before)}")
    for i, (label, fab) in enumerate(per_fabric):
        after = [fab.get(s.row["id"], s) for s in before]
        print(f"  [{i}] {label}: {_summary(after)}")


def _fsdp_outcome(run: Any, network: dict[str, Any], routing: str) -> Outcome:
    patched = replace(run, network=tuple(sorted({"fabric": "infiniband", **network}.items())))
    comm = NetsimComm(run_design(patched), routing=routing)  # type: ignore[arg-type]
    return Outcome(patched, best_prediction(patched, comm))


def _predict_summary(outcomes: list[Outcome]) -> str:
    errors = [o.error for o in outcomes if o.prediction is not None]
    by_class: dict[str, list[float]] = {}
    for o in outcomes:
        if o.prediction is not None:
            by_class.setdefault(o.run_class, []).append(abs(o.error))
    fsdp = statistics.fmean(by_class["fsdp-small"]) * 100
    return (
        f"development {len(outcomes)} runs MAPE {statistics.fmean(abs(e) for e in errors) * 100:.2f} %, "
        f"median signed {statistics.median(errors) * 100:+.2f} %; fsdp-small "
        f"{len(by_class['fsdp-small'])} runs {fsdp:.2f} %"
    )


def print_fsdp_rows() -> None:
    """(4) The development 70B Megatron-FSDP rows under each fabric (the job's own nodes)."""
    dev = [predict_run(r) for r in load_runs() if r.subset == "development"]
    fsdp = [o for o in dev if o.run.name.startswith(FSDP_PREFIX)]
    print("\n(4) Llama 3 70B Megatron-FSDP development rows, tokens/s per GPU and error")
    print(
        f"  {'fabric':<26}"
        + "".join(f"{o.run.name.removeprefix(FSDP_PREFIX) + ' GPUs':>22}" for o in fsdp)
    )
    print(f"  {'published':<26}" + "".join(f"{o.run.published:>22,.1f}" for o in fsdp))
    print(f"  before: {_predict_summary(dev)}")
    for label, network, routing, placement in FABRICS:
        if placement != "first":
            continue  # a training job's design is its own nodes
        changed = {o.run.name: _fsdp_outcome(o.run, network, routing) for o in fsdp}
        cells = "".join(
            f"{c.predicted:>13,.1f} {c.error * 100:+6.1f}%" if c.prediction else f"{'no fit':>22}"
            for c in changed.values()
        )
        print(f"  {label:<26}{cells}")
        after = [changed.get(o.run.name, o) for o in dev]
        print(f"  {'':<26}{_predict_summary(after)}")


def main() -> None:
    print_nic_rate()
    print_sendrecv()
    print_nccl_rows()
    print_fsdp_rows()


if __name__ == "__main__":
    main()
