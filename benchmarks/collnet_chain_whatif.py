"""NCCL's own bandwidth model for CollNet chain and NVLS-Tree on B200 nodes, and what the
simulator gives when CollNet chain is capped at it (for this run only).

NCCL prices an algorithm as ``nChannels x bw`` per channel (``ncclTopoTuneModel``,
``src/graph/tuning.cc``, NVIDIA/nccl v2.28.9-1 and v2.29.7-1, read 2026-12-03):

* CollNet chain: ``bw = bwIntra`` of the CollNet chain graph whatever the node count, no
  ceiling of its own, then ``x 0.5`` from bus to algorithm bandwidth.  The graph
  (``src/init.cc``) has exactly the ring graph's channel count; the search
  (``ncclTopoCompute``, ``src/graph/search.cc``) starts at the first inter-node speed at or
  below the NIC (``sm100SpeedArrayInter``: 96, 48, ... at v2.28.9-1; 96, 80, 48, ... from
  v2.29.2-1), then, for trees, raises
  ``bwIntra`` while it is below twice ``bwInter`` and every GPU's NVLink (18 links x
  ``SM100_NVLINK_BW`` = 40.1 GB/s, ``src/graph/topo.h``) still carries one chain hop per
  channel at that speed.
* NVLS-Tree: ``bw = min(bwIntra x nvlsEfficiency x (nCh - 1) / nCh x 2, bwInter (x 2 on 2
  nodes), perChMaxNVLSTreeBw)`` over the NVLS graph's channels, one per head (8 on a B200
  node with 8 NICs); Blackwell ``nvlsEfficiency`` 0.74, ``perChMaxNVLSTreeBws`` 96.0 on 2
  nodes and 43.8 from 3 (80.0 from v2.30.3-1).

The what-if adds NCCL's CollNet chain estimate as a ceiling on the simulator's CollNet
(``simulate.channel_cap_gbyte_per_s`` patched for the run) and prints calibration and
development errors before and after.  Held-out rows are never simulated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/collnet_chain_whatif.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.nccl_whatif_common import channel_cap_what_if

from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import ROWS

__all__ = [
    "collnet_chain_intra_gbyte_per_s",
    "main",
    "nccl_collnet_chain_busbw_gbyte_per_s",
    "nccl_nvls_tree_busbw_gbyte_per_s",
]

# sm100SpeedArrayInter, src/graph/search.cc, its first entries (NVIDIA/nccl at each tag)
SM100_SPEEDS_INTER_GBYTE_PER_S = {
    "v2.28.9-1": (96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0),
    "v2.29.7-1": (96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0),
}
# SM100_NVLINK_BW, src/graph/topo.h (v2.28.9-1); 18 NVLink5 links per B200 (NVIDIA DGX B200
# datasheet: 1.8 TB/s of NVLink per GPU)
SM100_NVLINK_GBYTE_PER_S_PER_LINK = 40.1
NVLINKS_PER_GPU = 18
# nvlsEfficiency[Blackwell] and perChMaxNVLSTreeBws[Blackwell] (2 nodes, 3+ nodes), tuning.cc
NVLS_EFFICIENCY_BLACKWELL = 0.74
PER_CHANNEL_NVLS_TREE_BLACKWELL = {"v2.28.9-1..v2.29.7-1": (96.0, 43.8), "v2.30.3-1": (96.0, 80.0)}
# NDR 400 Gb/s: NCCL's NIC speed in GB/s (Mb/s / 8000)
NIC_GBYTE_PER_S = 50.0
CHANNELS = 8  # ring graph of a B200 node with 8 NICs: 8 x 48 GB/s, not doubled below 50 GB/s
ROW_PREFIXES = ("pub-tg-fa-b200-", "pub-tg-ss-b200-")


def collnet_chain_intra_gbyte_per_s(
    channels: int, bw_inter_gbyte_per_s: float, release: str
) -> float:
    """``bwIntra`` the search settles on for the CollNet chain graph: the fastest listed
    speed up to twice ``bwInter`` at which ``channels`` chain hops leave every GPU (the
    search raises it one listed speed at a time and stops at the first that does not fit)."""
    nvlink = NVLINKS_PER_GPU * SM100_NVLINK_GBYTE_PER_S_PER_LINK
    speeds = SM100_SPEEDS_INTER_GBYTE_PER_S[release]
    intra = bw_inter_gbyte_per_s
    for speed in reversed(speeds[: speeds.index(bw_inter_gbyte_per_s)]):
        if speed > 2 * bw_inter_gbyte_per_s or channels * speed > nvlink:
            break
        intra = speed
    return intra


def _bw_inter_gbyte_per_s(release: str = "v2.29.7-1") -> float:
    return next(s for s in SM100_SPEEDS_INTER_GBYTE_PER_S[release] if s <= NIC_GBYTE_PER_S)


def nccl_collnet_chain_busbw_gbyte_per_s(
    num_ranks: int, release: str, channels: int = CHANNELS
) -> float:
    """NCCL's CollNet chain estimate as nccl-tests busbw: algorithm bandwidth
    ``0.5 x nChannels x bwIntra`` times ``2 (n - 1) / n``."""
    intra = collnet_chain_intra_gbyte_per_s(channels, _bw_inter_gbyte_per_s(release), release)
    return 0.5 * channels * intra * 2 * (num_ranks - 1) / num_ranks


def nccl_nvls_tree_busbw_gbyte_per_s(num_nodes: int, release: str, heads: int = 8) -> float:
    """NCCL's NVLS-Tree all-reduce estimate as nccl-tests busbw (``nRanks / nsteps`` turns
    NCCL's bus bandwidth into algorithm bandwidth, which nccl-tests turns back)."""
    bw = _bw_inter_gbyte_per_s()  # the NVLS graph: bwIntra = bwInter = 48 on these nodes
    intra = bw * NVLS_EFFICIENCY_BLACKWELL * (heads - 1) / heads * 2.0
    inter = bw * (2.0 if num_nodes <= 2 else 1.0)
    ceiling = PER_CHANNEL_NVLS_TREE_BLACKWELL[release][0 if num_nodes <= 2 else 1]
    return heads * min(intra, inter, ceiling)


def _collnet_cap(original: Callable[..., float], release: str) -> Callable[..., float]:
    def capped(algorithm: str, protocol: str, ctx: TuningContext) -> float:
        if algorithm != "collnet" or ctx.num_nodes < 2 or ctx.generation != "blackwell":
            return original(algorithm, protocol, ctx)
        channels = ctx.num_channels or CHANNELS
        return nccl_collnet_chain_busbw_gbyte_per_s(ctx.num_ranks, release, channels)

    return capped


def _studied() -> list[dict[str, Any]]:
    return [r for r in ROWS if r["set"] in ("calibration", "development")]


def _print_nccl_estimates(rows: list[dict[str, Any]]) -> None:
    print("NCCL's own estimate (nccl-tests busbw, GB/s) against the measurement")
    print(f"{'row':42} {'measured':>8} {'NCCL':>7} {'error':>7}  release")
    for row in rows:
        if row["algorithm"] not in ("collnet", "nvls_tree"):
            continue
        nodes, n = row["num_nodes"], 8 * row["num_nodes"]
        if row["algorithm"] == "collnet":
            pairs = [
                (rel, nccl_collnet_chain_busbw_gbyte_per_s(n, rel))
                for rel in SM100_SPEEDS_INTER_GBYTE_PER_S
            ]
        else:
            pairs = [
                (rel, nccl_nvls_tree_busbw_gbyte_per_s(nodes, rel))
                for rel in PER_CHANNEL_NVLS_TREE_BLACKWELL
            ]
        for release, est in pairs:
            err = est / row["busbw"] - 1.0
            print(f"{row['id']:42} {row['busbw']:8.1f} {est:7.1f} {err:+7.1%}  {release}")


def main() -> None:
    rows = _studied()
    _print_nccl_estimates([r for r in rows if r["id"].startswith(ROW_PREFIXES)])
    for release in SM100_SPEEDS_INTER_GBYTE_PER_S:
        channel_cap_what_if(
            rows,
            lambda original, release=release: _collnet_cap(original, release),
            f"CollNet capped at NCCL's chain estimate of {release}",
            id_width=42,
            show_algorithm=False,
        )


if __name__ == "__main__":
    main()
