"""Large collectives across 4-8 nodes of 8 H100: the rate per NIC each measured plateau
implies, NCCL's own NVLS-Tree bandwidth at the rows' releases, and what the simulator gives
when NVLS-Tree beyond 2 nodes is capped at that estimate (for this run only).

NCCL's NVLS-Tree (``connectNvls``, ``src/graph/connect.cc``, NVIDIA/nccl v2.24.3-1 and
v2.26.2-1) joins each node's NVLS head of one NIC to the same head of the other nodes by
``ncclGetDtree``: the channels alternate between the two trees (``treeUp[c % 2]``), so from
3 nodes a head's NIC is interior in one tree (two children and a parent) and a leaf in the
other, and carries twice its node's share each way; on 2 nodes it carries the share once.
``ncclTopoTuneModel`` (``src/graph/tuning.cc``, same releases) prices exactly that: the NVLS
graph's ``bwInter`` on 2 nodes, ``bwInter / 2`` from 3 (``bwInter`` capped at
``perChMaxNVLSTreeBws`` from v2.28.3-1), times the graph's channels, times 5/6 from bus to
algorithm bandwidth.  A ring, an all-gather ring and a broadcast or reduce chain move one
node share per NIC each way per bus byte, so on these nodes each of them, and NVLS-Tree from
3 nodes, reaches about 8 NIC rates of nccl-tests busbw (7.75 for NVLS-Tree on 32 ranks):
the measured plateau divided by that gives the rate each NIC delivered.

A diagnostic, solved on development rows and so not a model constant: a fixed GPU cost ``t``
per Simple slice and channel, on top of the model's rate ``r0`` per channel, gives
``1 / r = 1 / r0 + t / slice``.  NCCL's slices (``src/include/collectives.h``, v2.24.3-1) are
``NCCL_STEPS / 4`` = 2 steps for all-reduce and all-gather and 1 step for broadcast and reduce
(``BROADCAST_SLICESTEPS``, ``REDUCE_SLICESTEPS``), a step being the 4 MiB Simple buffer over
``NCCL_STEPS`` = 8; the script prints the ``t`` each plateau row needs.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/large_internode_whatif.py

Held-out rows are never simulated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.nccl_whatif_common import channel_cap_what_if

from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import ROWS, score

__all__ = ["main", "nccl_nvls_tree_busbw_gbyte_per_s", "nic_share", "slice_cost_us"]

# Clusters of 8 H100 with 8 ConnectX-7 400G InfiniBand whose runs reach 4-8 nodes
CLUSTERS = ("voltagepark-h100-ib", "nccltests309-gjaion", "nccltests309-qoofyk-vmware")
PLATEAU_BYTES = 512 * 2**20
NICS_PER_NODE = 8
# sm90SpeedArrayInter's first entry at or below the NIC (src/graph/search.cc, v2.24.3-1):
# the NVLS graph's bwIntra = bwInter = 48 GB/s on these nodes, one channel per head
NVLS_GRAPH_GBYTE_PER_S = 48.0
NVLS_TREE_BUS_TO_ALG = 5.0 / 6.0  # tuning.cc: ratio *= 5.0/6.0 for NVLS and NVLS-Tree
# NCCL maintainer (AddyLaddy, NVIDIA/nccl-tests #290, 2025-03-03): "For NDR @ 400Gbps
# you should see 46-48GB/s per NIC"
NDR_NIC_EXPECTED_GBYTE_PER_S = (46.0, 48.0)
# Simple step: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8 (src/include/device.h, v2.24.3-1)
STEP_BYTES = 4 * 2**20 // 8
SLICE_STEPS = {"all_reduce": 2, "all_gather": 2, "broadcast": 1, "reduce": 1}
# 8 search channels at 48 GB/s, duplicated to 16 compute channels (ncclTopoPostset,
# src/graph/connect.cc, v2.24.3-1): 2 per NIC
CHANNELS = 16
STEADY_BYTES = 4 * 2**30


def nic_share(algorithm: str, num_nodes: int, num_ranks: int) -> float:
    """nccl-tests busbw per NIC rate: how many NIC rates of busbw one algorithm reaches when
    every NIC is the bottleneck (0 where the NIC does not bind: NVLS-Tree on 2 nodes)."""
    if algorithm == "nvls_tree":
        if num_nodes <= 2:
            return 0.0
        # interior NIC: 2 x S / 8 each way; busbw = S / t x 2 (n - 1) / n
        return NICS_PER_NODE / 2 * 2 * (num_ranks - 1) / num_ranks
    return float(NICS_PER_NODE)


def nccl_nvls_tree_busbw_gbyte_per_s(num_nodes: int, num_ranks: int) -> float:
    """NCCL's own NVLS-Tree estimate before v2.28.3-1 as nccl-tests busbw: 8 channels x
    ``bwInter`` (``/ 2`` from 3 nodes) x 5/6, then x 2 (n - 1) / n."""
    per_channel = NVLS_GRAPH_GBYTE_PER_S / (1.0 if num_nodes <= 2 else 2.0)
    alg = NICS_PER_NODE * per_channel * NVLS_TREE_BUS_TO_ALG
    return alg * 2 * (num_ranks - 1) / num_ranks


def slice_cost_us(collective: str, measured_gbyte_per_s: float, model_gbyte_per_s: float) -> float:
    """Fixed cost per Simple slice and channel (µs) that turns the model's rate into the
    measured one: ``t = slice x (1 / r - 1 / r0)`` with both rates per channel."""
    slice_bytes = SLICE_STEPS[collective] * STEP_BYTES
    inv_ns_per_byte = CHANNELS / measured_gbyte_per_s - CHANNELS / model_gbyte_per_s
    return slice_bytes * inv_ns_per_byte / 1e3


def _print_slice_costs(rows: list[dict[str, Any]]) -> None:
    print("\nFixed cost per Simple slice and channel each steady row needs (diagnostic, µs)")
    for row in rows:
        if row["size_bytes"] < STEADY_BYTES or row["num_nodes"] < 4:
            continue
        s = score(row)
        t = slice_cost_us(row["collective"], row["busbw"], s.simulated_gbyte_per_s)
        slice_kib = SLICE_STEPS[row["collective"]] * STEP_BYTES // 1024
        print(f"{row['id']:34} {row['collective']:10} slice {slice_kib:5d} KiB  t {t:5.1f}")


def _studied() -> list[dict[str, Any]]:
    return [r for r in ROWS if r["set"] in ("calibration", "development")]


def _print_plateaus(rows: list[dict[str, Any]]) -> None:
    low, high = NDR_NIC_EXPECTED_GBYTE_PER_S
    print(f"Rate per NIC each plateau implies (GB/s; NCCL's maintainer: {low:.0f}-{high:.0f})")
    print(
        f"{'row':34} {'measured':>8} {'model':>7} {'error':>7} {'algorithm':>10}"
        f" {'NIC meas':>8} {'NIC model':>9}"
    )
    for row in rows:
        s = score(row)
        share = nic_share(s.algorithm, row["num_nodes"], 8 * row["num_nodes"])
        meas = f"{row['busbw'] / share:8.1f}" if share else f"{'-':>8}"
        model = f"{s.simulated_gbyte_per_s / share:9.1f}" if share else f"{'-':>9}"
        print(
            f"{row['id']:34} {row['busbw']:8.1f} {s.simulated_gbyte_per_s:7.1f}"
            f" {s.error:+7.1%} {s.algorithm:>10} {meas} {model}"
        )


def _nvls_tree_cap(original: Callable[..., float]) -> Callable[..., float]:
    def capped(algorithm: str, protocol: str, ctx: TuningContext) -> float:
        cap = original(algorithm, protocol, ctx)
        if algorithm != "nvls_tree" or ctx.num_nodes <= 2 or ctx.generation != "hopper":
            return cap
        return min(cap, nccl_nvls_tree_busbw_gbyte_per_s(ctx.num_nodes, ctx.num_ranks))

    return capped


def main() -> None:
    rows = _studied()
    for nodes in (2, 4, 8):
        est = nccl_nvls_tree_busbw_gbyte_per_s(nodes, 8 * nodes)
        print(f"NCCL's NVLS-Tree estimate before v2.28.3-1, {nodes} nodes: {est:6.1f} GB/s busbw")
    plateau = [
        r
        for r in rows
        if r.get("cluster") in CLUSTERS
        and r["size_bytes"] >= PLATEAU_BYTES
        and (r["num_nodes"] >= 4 or r["collective"] == "all_reduce")
    ]
    _print_plateaus(plateau)
    _print_slice_costs(plateau)
    channel_cap_what_if(
        rows,
        _nvls_tree_cap,
        "NVLS-Tree from 3 nodes capped at NCCL's own estimate before v2.28.3-1",
        id_width=34,
        show_algorithm=True,
    )


if __name__ == "__main__":
    main()
