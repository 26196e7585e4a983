"""What-if: one network proxy operation per network step on a call's critical path.

NCCL's tuner (``ncclTopoTuneModel``, ``src/graph/tuning.cc``, NVIDIA/nccl v2.19.3-1 to
v2.29.2-1) charges a network step its hardware latency (``hwLat[NET]``: tree LL 5.0, LL128
8.5 us) and, on a ring across nodes only, lifts every other step to ``getNetOverhead``
(1 us on an Intel x86 or non-x86 host, 2 us on AMD; three times that for Simple: "Inter-node
rings still have to launch nsteps * net overhead").  On a network step the proxy thread
(``sendProxyProgress`` in ``src/transport/net.cc``) must see the GPU's flags or tail in host
memory before it posts the step (LL's send buffer is always in host memory:
``NCCL_NET_MAP_ADD_POINTER(map, 0, p != NCCL_PROTO_LL && useGdr, ...)``), so a step whose
post NCCL's ``hwLat[NET]`` figure did not contain would add one such operation per hop.

This script charges every call across nodes ``getNetOverhead x (3 for Simple, else 1)`` per
network step of its critical path (tree and NVLS-Tree ``2 log2(nodes)``, ring all-reduce
``2 (nodes - 1)``, other rings and chains ``nodes - 1``, NVLS, CollNet and direct 1), in two
variants: with the fitted per-call cost (``call_across_nodes_us``) as it is, and with it
re-fitted on its own calibration rows (the mean excess of their measured time over the
patched model's).  It prints, for every calibration and development row below 16 MiB across
nodes, the measured time, the model's, the excess and the excess per network step, then the
mean absolute busbw error before and after by set and size class and by cluster.  Held-out
rows are never simulated.  ``src/`` is unchanged.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/net_step_cost_whatif.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import clusterforge.netsim.simulate as simulate_module
from clusterforge.catalog import load_catalog
from clusterforge.netsim import latency as latency_module
from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import LARGE_BYTES, ROWS, Scored, score

__all__ = [
    "busbw_factor",
    "excess_per_step_us",
    "network_steps",
    "patched_latency",
    "refit_call_us",
]

STUDIED = ("calibration", "development")
_OVERHEAD_US = latency_module._NET_OVERHEAD_US  # NCCL getNetOverhead
_CALL_US = latency_module._CALL_ACROSS_NODES_US  # fitted per-call cost across nodes
CLUSTERS = (
    "oci-oke-gb200-v3-roce",
    "oci-gb300-roce",
    "voltagepark-h100-ib",
    "nccltests309-qoofyk-xe9680",
    "nccltests309-qoofyk-vmware",
    "nccltests309-gjaion",
    "lambda-1cc-b200-ib-dstack",
    "nebius-h100-ib-dstack",
    "oci-bm-gpu4-8-roce",
)


def network_steps(algorithm: str, num_nodes: int, collective: str) -> int:
    """Network steps on the critical path of one call across ``num_nodes`` nodes (an NVLink
    clique of several trays is one node), as NCCL's latency counts them."""
    m = num_nodes
    if m < 2:
        return 0
    log2m = max(0, m.bit_length() - 1)
    if algorithm in ("tree", "nvls_tree"):
        return 2 * log2m
    if algorithm in ("ring", "hierarchical"):
        return 2 * (m - 1) if collective == "all_reduce" else m - 1
    if algorithm == "chain":
        return m - 1
    if algorithm == "pat":
        return log2m
    return 1  # nvls, collnet, direct: one network round


def step_cost_s(algorithm: str, protocol: str, ctx: TuningContext) -> float:
    per_op_us = _OVERHEAD_US * (3 if protocol == "simple" else 1)
    return network_steps(algorithm, ctx.num_nodes, ctx.collective) * per_op_us * 1e-6


@contextmanager
def patched_latency(call_us: float) -> Iterator[None]:
    """The model with a proxy operation per network step and ``call_us`` per call."""
    original: Callable[..., float] = simulate_module.latency_s

    def patched(algorithm: Any, protocol: Any, ctx: TuningContext) -> float:
        base = latency_module.nccl_latency_s(algorithm, protocol, ctx)
        call_s = call_us * 1e-6 if ctx.num_nodes > 1 else 0.0
        return base + call_s + step_cost_s(algorithm, protocol, ctx)

    simulate_module.latency_s = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module.latency_s = original  # type: ignore[assignment]


def busbw_factor(row: dict[str, Any]) -> float:
    """nccl-tests' bus bandwidth over algorithm bandwidth for the row's collective."""
    node = load_catalog().nodes[row["node"]]
    n = row.get("num_gpus", row.get("ranks_per_node", node.num_gpus) * row["num_nodes"])
    match row["collective"]:
        case "all_reduce":
            return 2 * (n - 1) / n
        case "broadcast" | "reduce":
            return 1.0
        case _:
            return (n - 1) / n


def time_us(row: dict[str, Any], busbw_gbyte_per_s: float) -> float:
    return row["size_bytes"] * busbw_factor(row) / busbw_gbyte_per_s / 1e3


def refit_call_us(rows: list[dict[str, Any]]) -> float:
    """The per-call cost re-fitted as it was: the mean excess of the calibration rows'
    measured time over the patched model's without it."""
    cal = [
        r
        for r in rows
        if r["set"] == "calibration"
        and r.get("cluster", "").startswith("nccltests309-qoofyk-xe9680")
        and r["size_bytes"] < LARGE_BYTES
    ]
    with patched_latency(0.0):
        sims = [score(r) for r in cal]
    excess = [
        time_us(r, r["busbw"]) - time_us(r, s.simulated_gbyte_per_s)
        for r, s in zip(cal, sims, strict=True)
    ]
    return float(np.mean(excess))


def _mean_abs(scored: list[Scored]) -> float:
    return float(np.mean([abs(s.error) for s in scored])) * 100 if scored else 0.0


def excess_per_step_us(row: dict[str, Any], scored: Scored) -> tuple[float, float, int]:
    """(measured us, model us, network steps of the model's algorithm) for one row; nodes
    as NCCL counts them (the trays of one NVLink domain are one node)."""
    node = load_catalog().nodes[row["node"]]
    m = row["num_nodes"]
    if node.nvlink_domain_gpus > node.num_gpus:  # multi-node NVLink: cliques are nodes
        m = -(-(node.num_gpus * m) // node.nvlink_domain_gpus)
    steps = network_steps(scored.algorithm, m, row["collective"])
    return time_us(row, row["busbw"]), time_us(row, scored.simulated_gbyte_per_s), steps


def _excess_table(rows: list[dict[str, Any]], before: list[Scored]) -> None:
    """Measured time against the model's for the rows below 16 MiB across nodes."""
    print(
        f"{'row':36s} {'set':4s} {'pair':12s} {'meas us':>8s} {'model us':>8s} "
        f"{'excess':>7s} {'steps':>5s} {'us/step':>7s}"
    )
    for r, b in zip(rows, before, strict=True):
        if r["size_bytes"] >= LARGE_BYTES or r["num_nodes"] < 2:
            continue
        meas, model, steps = excess_per_step_us(r, b)
        per = f"{(meas - model) / steps:+7.1f}" if steps else f"{'-':>7s}"
        print(
            f"{r['id']:36s} {r['set'][:3]:4s} {b.algorithm + '/' + b.protocol:12s} "
            f"{meas:8.1f} {model:8.1f} {meas - model:+7.1f} {steps:5d} {per}"
        )


def _summaries(rows: list[dict[str, Any]], runs: dict[str, list[Scored]]) -> None:
    names = list(runs)
    print(f"\n{'set / size':34s} {'rows':>4s} " + " ".join(f"{n:>14s}" for n in names))
    for subset in STUDIED:
        for label, test in (("< 16 MiB", True), (">= 16 MiB", False), ("all", None)):
            idx = [
                i
                for i, r in enumerate(rows)
                if r["set"] == subset and (test is None or (r["size_bytes"] < LARGE_BYTES) == test)
            ]
            cells = " ".join(f"{_mean_abs([runs[n][i] for i in idx]):13.2f}%" for n in names)
            print(f"{subset + ' ' + label:34s} {len(idx):4d} {cells}")
    print()
    for cluster in CLUSTERS:
        for label, test in (("< 16 MiB", True), (">= 16 MiB", False)):
            idx = [
                i
                for i, r in enumerate(rows)
                if r.get("cluster") == cluster
                and r["set"] == "development"
                and (r["size_bytes"] < LARGE_BYTES) == test
            ]
            if not idx:
                continue
            cells = " ".join(f"{_mean_abs([runs[n][i] for i in idx]):13.2f}%" for n in names)
            print(f"{cluster + ' ' + label:34s} {len(idx):4d} {cells}")


def main() -> None:
    rows = [r for r in ROWS if r["set"] in STUDIED]
    before = [score(r) for r in rows]
    _excess_table(rows, before)
    call_us = refit_call_us(rows)
    print(
        f"\nper-call cost: fitted {_CALL_US:.2f} us; re-fitted with the step cost {call_us:.2f} us"
    )
    with patched_latency(_CALL_US):
        kept = [score(r) for r in rows]
    with patched_latency(call_us):
        refit = [score(r) for r in rows]
    runs = {"before": before, "steps+4.6us": kept, "steps+refit": refit}
    _summaries(rows, runs)
    print("\nrows below 16 MiB across nodes, signed error before / steps+refit")
    for r, b, a in zip(rows, before, refit, strict=True):
        if r["size_bytes"] < LARGE_BYTES and r["num_nodes"] > 1 and abs(a.error - b.error) > 0.005:
            print(
                f"{r['id']:36s} {b.error * 100:+7.1f} % {b.algorithm}/{b.protocol:6s} "
                f"{a.error * 100:+7.1f} % {a.algorithm}/{a.protocol}"
            )


if __name__ == "__main__":
    main()
