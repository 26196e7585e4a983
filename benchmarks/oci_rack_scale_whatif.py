"""What-ifs for the two OCI rack-scale RoCE gaps: the GB200 all-reduce below 8 MiB across two
NVL72 racks and the GB300 all-to-all across two racks (docs/validation.md, "The OCI
rack-scale gaps: what NCCL does across two NVL72 racks").

Prints four tables:

1. **Rack split.**  Every development row of the two OCI files simulated as mapped (the model
   fills one rack with 18 trays and puts 14 in the second) and with the 32 trays split 16 +
   16 (trays 0-15 and 18-33 of a 36-tray graph).  Either way the model's tree across the
   racks is NCCL's tree with the NVLink domain as its node: a chain through each rack's 64
   GPUs (``trees.rack_tree``), or through its 72 and 56 GPUs (``trees.uneven_rack_tree``;
   a tree of 32 trays before the model took it, ``benchmarks/uneven_rack_tree.py``).
2. **All development and calibration rows**, mean absolute error by size band, as mapped and
   with the 16 + 16 split on every row it touches (NVL72 trays, more than one rack, a tray
   count that leaves a rack partly filled); every other row is unchanged.
3. **NCCL's tree latency** (``ncclTopoTuneModel``, ``src/graph/tuning.cc``, NVIDIA/nccl
   v2.29.2-1) with the clique as its node (``nNodes`` = 2, ``ppn`` = nRanks / nNodes = 64),
   against a tree of 32 trays (the model's before the clique tree for uneven splits), and the NVLink hop latency that would give the measured
   8 KiB time: inferred from the row, so a reading, not a constant.
4. **All-to-all across two cliques.**  The cross-rack bytes and rate per GPU the 32-tray row
   implies, and NCCL 2.28.7's point-to-point settings on two cliques: the chunk
   (``computeBuffSizes``, ``src/init.cc``) and the channels per network peer
   (``ncclTopoGetNchannels``, ``src/graph/paths.cc``).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/oci_rack_scale_whatif.py

Development and calibration rows only; a held-out row is never simulated.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterforge.netsim import simulate_collective
from validation.nccl_rows import CLUSTERS, LARGE_BYTES, ROWS, _graph, _ll128_c2c, score

STUDIED = ("calibration", "development")
OCI_CLUSTERS = ("oci-oke-gb200-v3-roce", "oci-gb300-roce")
# trays of one NVL72 rack (NVIDIA DGX SuperPOD GB200 reference architecture, docs/sources.md)
RACK_TRAYS = 18
# trays a rack holds in the even split the GB300 page's titles suggest ("1 Rack - 16 nodes",
# "2 Racks - 32 nodes"; oracle-quickstart/oci-gpu-quickstarts nvidia/GB300/README-GB300.md)
EVEN_TRAYS = 16
# NCCL's tree hardware latency per NVLink hop, LL, and per network hop, LL (us;
# hwLatencies in src/graph/tuning.cc, NVIDIA/nccl v2.29.2-1); base latency of tree LL
NCCL_NVLINK_TREE_LL_US = 0.6
NCCL_NET_TREE_LL_US = 5.0
NCCL_TREE_LL_BASE_US = 6.8
# point-to-point over the network (src/init.cc and src/graph/paths.cc, NVIDIA/nccl
# v2.28.7-1): the chunk when nNodes > 1 (NCCL_P2P_NET_CHUNKSIZE, 128 KiB), the chunk on one
# all-NVLink node (NCCL_P2P_NVL_CHUNKSIZE, 512 KiB), and the first guess of channels per
# network peer (2), halved while 2 x nRanks > 4 x p2pnChannels
P2P_NET_CHUNK_BYTES = 1 << 17
P2P_NVL_CHUNK_BYTES = 1 << 19
P2P_NET_CHANNELS_START = 2
# v2.29.2-1 doubles the network chunk on Arm hosts with Blackwell GPUs ("GBx platforms only
# have 4 GPUs per host, which reduces the aggregation factor")
P2P_NET_CHUNK_RATIO_GB = 2
# (size, out-of-place us) of the 32-tray, two-rack GB300 all-reduce (NVLS on, NCCL 2.28.7) in
# the first version of oracle-quickstart/oci-gpu-quickstarts nvidia/GB300/README-GB300.md
# (commit 96ac1ec, 2026-02-24), whose logs print every size; now development rows of
# validation/pub_ocigpu_gb300_roce_sweeps.toml (1 MiB moved there from its split because
# this script printed its figure first)
GB300_TWO_RACK_AR_US = ((1 << 20, 488.1), (1 << 23, 494.5))


@dataclass(frozen=True)
class SplitResult:
    """One row: measured busbw, simulated as mapped (18 + 14) and with an even split."""

    row: dict[str, Any]
    mapped: tuple[float, str]
    even: tuple[float, str]

    def errors(self) -> tuple[float, float]:
        measured = self.row["busbw"]
        return self.mapped[0] / measured - 1.0, self.even[0] / measured - 1.0


def _check_studied(row: dict[str, Any]) -> None:
    if row["set"] not in STUDIED:
        raise ValueError(f"row {row['id']}: set {row['set']!r}; only {STUDIED} rows are studied")


def touched(row: dict[str, Any]) -> bool:
    """The even split changes a row of NVL72 trays spanning racks with one partly filled."""
    n = row["num_nodes"]
    return "nvl72" in row["node"] and n > RACK_TRAYS and n % RACK_TRAYS != 0


def even_trays(num_nodes: int) -> np.ndarray:
    """Trays of an even split: ``EVEN_TRAYS`` from the start of each rack, 16 + 16 for 32."""
    racks = -(-num_nodes // EVEN_TRAYS)
    trays = np.concatenate([r * RACK_TRAYS + np.arange(EVEN_TRAYS) for r in range(racks)])
    return trays[:num_nodes]


def simulate_even(row: dict[str, Any]) -> tuple[float, str]:
    """(busbw GB/s, "algorithm/protocol") of ``row`` with its trays split evenly."""
    _check_studied(row)
    trays = even_trays(row["num_nodes"])
    racks = int(trays[-1]) // RACK_TRAYS + 1
    facility = tuple(sorted(row.get("facility", {}).items()))
    graph = _graph(
        row["node"], racks * RACK_TRAYS, row.get("nics_per_node"), facility, row.get("fabric")
    )
    gpn = graph.gpus_per_node
    group = (trays[:, None] * gpn + np.arange(gpn)).ravel()
    settings = CLUSTERS.get(row.get("cluster", ""), {})
    res = simulate_collective(
        graph,
        row["collective"],
        row["size_bytes"],
        group[None, :],
        algorithm=row["algorithm"],
        nvls=bool(settings.get("nvls", True)),
        ll128_c2c=_ll128_c2c(settings),
    )
    return res.busbw_gbyte_per_s, f"{res.algorithm}/{res.protocol}"


def split_results(clusters: tuple[str, ...] = OCI_CLUSTERS) -> list[SplitResult]:
    """The development rows of ``clusters``, as mapped and with an even split."""
    out = []
    for row in ROWS:
        if row["set"] != "development" or row.get("cluster") not in clusters:
            continue
        s = score(row)
        mapped = (s.simulated_gbyte_per_s, f"{s.algorithm}/{s.protocol}")
        even = simulate_even(row) if touched(row) else mapped
        out.append(SplitResult(row, mapped, even))
    return out


def band_errors() -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """(set, band) -> (errors as mapped, errors with the even split) over every
    calibration and development row."""
    Errors = tuple[list[float], list[float]]
    out: dict[tuple[str, str], Errors] = defaultdict(lambda: ([], []))
    for row in ROWS:
        if row["set"] not in STUDIED:
            continue
        before = score(row).error
        after = simulate_even(row)[0] / row["busbw"] - 1.0 if touched(row) else before
        band = ">= 16 MiB" if row["size_bytes"] >= LARGE_BYTES else "< 16 MiB"
        out[row["set"], band][0].append(before)
        out[row["set"], band][1].append(after)
    return out


def tree_latency_us(ranks_per_node: int, num_nodes: int, net_path_us: float = 0.0) -> float:
    """NCCL's tree LL latency of one all-reduce (us): base + 2 x ((ppn - 1) x NVLink hop +
    log2(nNodes) x network hop), ``ncclTopoTuneModel`` (src/graph/tuning.cc, v2.29.2-1)."""
    log2_nodes = max(0, int(num_nodes).bit_length() - 1)
    inter_us = NCCL_NET_TREE_LL_US + net_path_us
    chain_us = (ranks_per_node - 1) * NCCL_NVLINK_TREE_LL_US
    return NCCL_TREE_LL_BASE_US + 2 * (chain_us + log2_nodes * inter_us)


def hop_latency_needed_us(measured_us: float, ranks_per_node: int, num_nodes: int) -> float:
    """NVLink hop latency (us) at which NCCL's tree LL latency equals ``measured_us``,
    everything else at NCCL's values: inferred from one row, not a constant."""
    log2_nodes = max(0, int(num_nodes).bit_length() - 1)
    rest_us = NCCL_TREE_LL_BASE_US + 2 * log2_nodes * NCCL_NET_TREE_LL_US
    return (measured_us - rest_us) / (2 * (ranks_per_node - 1))


def p2p_net_channels_per_peer(num_ranks: int, p2p_channels: int, nics_per_gpu: int) -> int:
    """NCCL's channels per network peer (``ncclTopoGetNchannels``, src/graph/paths.cc,
    v2.28.7-1): start from 2, halve while 2 x nRanks > 4 x p2pnChannels, never below the
    GPU's NICs of its best bandwidth."""
    channels = P2P_NET_CHANNELS_START
    while channels * num_ranks > p2p_channels * 4 and channels > 1:
        channels //= 2
    return max(nics_per_gpu, channels)


def measured_us(row: dict[str, Any]) -> float:
    """The out-of-place time of an all-reduce row (us), from its busbw (n = its ranks)."""
    n = row["num_nodes"] * 4
    return row["size_bytes"] * 2 * (n - 1) / n / (row["busbw"] * 1e3)


def cross_rack_gbyte(size_bytes: float, ranks_here: int, ranks_there: int) -> float:
    """GB an all-to-all rank sends to the other rack: its 1/n share to each rank there."""
    return size_bytes * ranks_there / (ranks_here + ranks_there) / 1e9


def _print_split(results: list[SplitResult]) -> None:
    print("1. Rack split: development rows of the OCI rack-scale files (busbw GB/s)")
    print(f"{'row':32} {'measured':>9} {'18 + 14':>28} {'16 + 16':>28}")
    for r in results:
        e0, e1 = r.errors()
        a = f"{r.mapped[0]:8.2f} {r.mapped[1]:16} {e0:+.0%}"
        b = f"{r.even[0]:8.2f} {r.even[1]:16} {e1:+.0%}"
        print(f"{r.row['id']:32} {r.row['busbw']:9.2f} {a:>28} {b:>28}")


def _print_bands() -> None:
    print("\n2. Every calibration and development row, mean |error| (median signed)")
    for (subset, band), (before, after) in sorted(band_errors().items()):
        moved = sum(b != a for b, a in zip(before, after, strict=True))
        print(
            f"{subset:12} {band:10} n={len(before):3}  as mapped {np.mean(np.abs(before)):6.1%}"
            f" ({np.median(before):+.1%})  16 + 16 {np.mean(np.abs(after)):6.1%}"
            f" ({np.median(after):+.1%})  rows moved {moved}"
        )


def _print_tree_latency() -> None:
    print("\n3. NCCL's tree LL latency for 128 ranks (us), without the path latency")
    row = next(r for r in ROWS if r["id"] == "pub-oke-gb200-32n-ar-8k")
    _check_studied(row)
    t = measured_us(row)
    clique = tree_latency_us(64, 2)
    trays = tree_latency_us(4, 32)
    print(f"  clique as NCCL's node (2 nodes, ppn 64):  {clique:6.1f}")
    print(f"  tray as the node (32 nodes, ppn 4):       {trays:6.1f}  (the model's fallback)")
    print(f"  measured 8 KiB out-of-place time:         {t:6.1f}")
    need = hop_latency_needed_us(t, 64, 2)
    print(f"  NVLink hop latency that would match it:   {need:6.2f}  (NCCL's table: 0.6)")


def _whatif_row(cluster: str, node: str, num_nodes: int, size_bytes: int) -> dict[str, Any]:
    """An all-reduce row at a size no validation row holds (its busbw is a placeholder)."""
    return {
        "id": f"whatif-{node}-{num_nodes}n-{size_bytes}",
        "set": "development",
        "cluster": cluster,
        "node": node,
        "num_nodes": num_nodes,
        "fabric": "roce",
        "facility": {"max_rack_kw": 140},
        "collective": "all_reduce",
        "size_bytes": size_bytes,
        "algorithm": "auto",
        "busbw": 1.0,
    }


def model_time_us(row: dict[str, Any], *, even: bool = False) -> tuple[float, str]:
    """The model's all-reduce time (us) and pick for ``row``, as mapped or split evenly."""
    if even:
        busbw, pick = simulate_even(row)
    else:
        s = score(row)
        busbw, pick = s.simulated_gbyte_per_s, f"{s.algorithm}/{s.protocol}"
    n = row["num_nodes"] * 4
    return row["size_bytes"] * 2 * (n - 1) / n / (busbw * 1e3), pick


def _print_floor() -> None:
    print("\n   The same two racks on GB300 with NVLS on (the page's first version, not rows):")
    for size, measured in GB300_TWO_RACK_AR_US:
        row = _whatif_row("oci-gb300-roce", "gb300-nvl72-tray", 32, size)
        t0, pick0 = model_time_us(row)
        t1, pick1 = model_time_us(row, even=True)
        print(
            f"  {size >> 20} MiB: measured {measured:6.1f} us; model 18 + 14 {t0:6.1f} us"
            f" ({pick0}), 16 + 16 {t1:6.1f} us ({pick1})"
        )


def _print_alltoall() -> None:
    print("\n4. All-to-all across two cliques: 32 GB300 trays, 16 GiB, NCCL 2.28.7")
    row = next(r for r in ROWS if r["id"] == "pub-ocigpu-gb300-32n-a2a-16g")
    _check_studied(row)
    n = 128
    time_s = row["size_bytes"] / (row["busbw"] * n / (n - 1)) / 1e9
    for here, there in ((64, 64), (56, 72)):
        gb = cross_rack_gbyte(row["size_bytes"], here, there)
        print(
            f"  {here} + {there} GPUs: {gb:5.2f} GB across racks per GPU in {time_s * 1e3:5.1f}"
            f" ms = {gb / time_s:5.1f} GB/s a GPU (RoCE: 100)"
        )
    chunks = cross_rack_gbyte(row["size_bytes"], 64, 64) * 1e9 / P2P_NET_CHUNK_BYTES
    print(
        f"  chunk on two cliques {P2P_NET_CHUNK_BYTES // 1024} KiB (one clique: "
        f"{P2P_NVL_CHUNK_BYTES // 1024} KiB; v2.29.2: x{P2P_NET_CHUNK_RATIO_GB} on GB hosts)"
    )
    print(f"  cross-rack chunks per GPU {chunks:,.0f}: {time_s / chunks * 1e6:.1f} us each")
    for p2p_channels in (16, 32, 64):
        gb200 = p2p_net_channels_per_peer(n, p2p_channels, 1)
        gb300 = p2p_net_channels_per_peer(n, p2p_channels, 2)
        print(
            f"  channels per network peer, p2pnChannels {p2p_channels}: {gb200} with one NIC"
            f" a GPU (GB200), {gb300} with two (GB300)"
        )


def main() -> None:
    _print_split(split_results())
    _print_bands()
    _print_tree_latency()
    _print_floor()
    _print_alltoall()


if __name__ == "__main__":
    main()
