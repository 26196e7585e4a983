"""An all-to-all across NVLink cliques as NCCL 2.28.7 moves it, chunk by chunk through one
proxy thread per GPU at NCCL's own price of a network operation: the model with and without
that bound (``netsim.alltoall.proxy_serial_s``), and what the measured calls imply.

NCCL sends each point-to-point message to a peer in another node (an MNNVL clique counts as
one node) in chunks of ``NCCL_P2P_NET_CHUNKSIZE`` (128 KiB when nNodes > 1;
``computeBuffSizes``, ``src/init.cc``, NVIDIA/nccl v2.28.7-1), a quarter of it for a message
under one chunk and half of it under eight (``addP2pToPlan``, ``src/enqueue.cc``), over one
channel, or two once the message exceeds a chunk (2 channels per network peer on 128 ranks,
``ncclTopoGetNchannels``, ``src/graph/paths.cc``).  Every chunk is a post and a test of the
proxy thread (``sendProxyProgress`` / ``recvProxyProgress``, ``src/transport/net.cc``),
whose cost NCCL's tuner prices at ``getNetOverhead``: 1 us on an Intel x86 host and on any
non-x86 host, Grace included (``src/graph/tuning.cc``).  With PXN the proxy of a GPU posts
the chunks that its tray's GPUs send to peers on its rail, as many as its own.  The busiest
proxy of the communicator therefore serves

    ops = 2 (send and receive) x network peers x chunks per peer

operations per call, and the model's all-to-all takes no less than ``ops x 1 us``.  This
script prints every all-to-all row without that bound (patched out for the run) and with it,
the means of all development and calibration rows, the time per operation the measured
calls imply, and the operation count under NCCL 2.29.2's doubled chunk on Arm hosts with
Blackwell GPUs (``computeBuffSizes``, v2.29.2-1), which the model does not key (it carries
no NCCL release).  Held-out rows are never simulated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/p2p_chunk_proxy_whatif.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import clusterforge.netsim.simulate as simulate_module
from clusterforge.catalog import load_catalog
from clusterforge.netsim.alltoall import p2p_net_steps
from validation.nccl_rows import (
    CLUSTERS,
    LARGE_BYTES,
    ROWS,
    Scored,
    ranks,
    row_graph,
    score,
)

__all__ = [
    "NetP2p",
    "net_p2p",
    "p2p_chunk_base_bytes",
    "row_graph",
    "scored_pairs",
    "without_proxy_bound",
]

STUDIED = ("calibration", "development")
# NCCL_P2P_NET_CHUNKSIZE default, the point-to-point chunk when nNodes > 1 (src/init.cc,
# NVIDIA/nccl v2.28.7-1 and v2.29.2-1; netsim/data/nccl.toml p2p_net_chunk_bytes)
P2P_NET_CHUNK_BYTES = 1 << 17
# v2.29.2-1 computeBuffSizes: ratio 2 on Arm hosts with compute capability >= 10.0 ("GBx
# platforms only have 4 GPUs per host, which reduces the aggregation factor")
ARM_BLACKWELL_CHUNK_RATIO = 2
ARM_BLACKWELL_FIRST = (2, 29, 2)
ARM_CPUS = frozenset({"grace"})
BLACKWELL_GPUS = frozenset({"b200", "b300", "gb200", "gb300"})
# getNetOverhead (src/graph/tuning.cc, v2.28.7-1): us per network operation, 1.0 on Intel
# x86 and on every non-x86 host (netsim/data/nccl.toml net_overhead_us)
NET_OVERHEAD_US = 1.0
# receives of one remote proxy on one channel that one irecv may carry (NCCL_NET_IB_MAX_RECVS,
# src/transport/net_ib.cc, v2.28.7-1); recvProxyProgress groups subs by shared recvComm
MAX_RECVS = 8


def _version(row: dict[str, Any]) -> tuple[int, ...] | None:
    text = CLUSTERS.get(row.get("cluster", ""), {}).get("nccl_version")
    return None if text is None else tuple(int(p) for p in str(text).split("."))


def p2p_chunk_base_bytes(row: dict[str, Any], *, version: tuple[int, ...] | None = None) -> int:
    """``comm->p2pChunkSize`` across nodes at the row's NCCL release (or ``version``)."""
    node = load_catalog().nodes[row["node"]]
    release = version or _version(row)
    doubled = (
        release is not None
        and release >= ARM_BLACKWELL_FIRST
        and node.cpu in ARM_CPUS
        and node.gpu in BLACKWELL_GPUS
    )
    return P2P_NET_CHUNK_BYTES * (ARM_BLACKWELL_CHUNK_RATIO if doubled else 1)


@dataclass(frozen=True)
class NetP2p:
    """A row's all-to-all across NVLink domains, as NCCL's point-to-point moves it."""

    ranks: int
    domains: int
    network_peers: int  # of the busiest GPU
    gpus_per_host: int
    step_bytes: int
    steps_per_peer: int

    @property
    def proxy_ops(self) -> int:
        """Sends and receives the busiest proxy posts per call (PXN: as many as its own)."""
        return 2 * self.network_peers * self.steps_per_peer

    @property
    def receives_per_request(self) -> int:
        """Chunks one irecv carries: a remote host's GPUs of one 8-peer batch, at most 8."""
        return min(self.gpus_per_host, MAX_RECVS)


def net_p2p(row: dict[str, Any], *, version: tuple[int, ...] | None = None) -> NetP2p | None:
    """The row's network point-to-point, or None when its ranks share one NVLink domain."""
    if row["collective"] != "all_to_all":
        return None
    graph = row_graph(row)
    seq = ranks(row, graph.gpus_per_node)
    domain = graph.domain_of(seq)
    if np.unique(domain).size < 2:
        return None
    same = (domain[:, None] == domain[None, :]).sum(axis=1)
    step = p2p_chunk_base_bytes(row, version=version)
    return NetP2p(
        ranks=int(seq.size),
        domains=int(np.unique(domain).size),
        network_peers=int(seq.size - same.min()),
        gpus_per_host=graph.gpus_per_node,
        step_bytes=step,
        steps_per_peer=p2p_net_steps(row["size_bytes"] / seq.size, step),
    )


@contextmanager
def without_proxy_bound() -> Iterator[None]:
    """The simulator without the busiest proxy's bound on the all-to-all."""
    saved = simulate_module.proxy_serial_s
    simulate_module.proxy_serial_s = lambda *_: 0.0  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module.proxy_serial_s = saved


def scored_pairs() -> list[tuple[Scored, Scored]]:
    """(without the bound, with it) for every development and calibration row."""
    rows = [r for r in ROWS if r["set"] in STUDIED]
    with without_proxy_bound():
        before = [score(r) for r in rows]
    return list(zip(before, [score(r) for r in rows], strict=True))


def _call_s(row: dict[str, Any], busbw_gbyte_per_s: float, n: int) -> float:
    return row["size_bytes"] * (n - 1) / n / (busbw_gbyte_per_s * 1e9)


def _mean(scored: list[Scored]) -> float:
    return float(np.mean([abs(s.error) for s in scored])) if scored else 0.0


def _network_cells(row: dict[str, Any]) -> str:
    p2p = net_p2p(row)
    if p2p is None:
        return ""
    call_s = _call_s(row, row["busbw"], p2p.ranks)
    per_gpu = p2p.network_peers * row["size_bytes"] / p2p.ranks / call_s / 1e9
    later = net_p2p(row, version=ARM_BLACKWELL_FIRST)
    assert later is not None
    requests = call_s / (p2p.proxy_ops / 2 / p2p.receives_per_request) * 1e6
    return (
        f"{p2p.proxy_ops:8d} {call_s / p2p.proxy_ops * 1e6:6.2f} {requests:7.1f} "
        f"{per_gpu:8.1f} {later.proxy_ops:10d}"
    )


def _print_alltoall(pairs: list[tuple[Scored, Scored]]) -> None:
    print(
        "\nall-to-all rows (busbw GB/s; ops: the busiest proxy's sends + receives per call; "
        "us/op and us/irecv: the measured call over them)"
    )
    print(
        f"{'row':30} {'meas':>6} {'before':>6} {'err':>7} {'after':>6} {'err':>7} "
        f"{'ops':>8} {'us/op':>6} {'us/recv':>7} {'GB/s/GPU':>8} {'ops@2.29.2':>10}"
    )
    for before, after in pairs:
        row = before.row
        if row["collective"] != "all_to_all":
            continue
        print(
            f"{row['id']:30} {row['busbw']:6.1f} {before.simulated_gbyte_per_s:6.1f} "
            f"{before.error:+7.1%} {after.simulated_gbyte_per_s:6.1f} {after.error:+7.1%} "
            f"{_network_cells(row)}"
        )


def _print_means(pairs: list[tuple[Scored, Scored]]) -> None:
    print("\nmean absolute busbw error, without -> with the proxy bound")
    for name in STUDIED:
        for label, low, high in (
            (">= 16 MiB", LARGE_BYTES, float("inf")),
            ("< 16 MiB", 0, LARGE_BYTES),
            ("all", 0, float("inf")),
        ):
            kept = [(b, a) for b, a in pairs if b.row["set"] == name]
            kept = [(b, a) for b, a in kept if low <= b.row["size_bytes"] < high]
            before, after = _mean([b for b, _ in kept]), _mean([a for _, a in kept])
            print(f"  {name:12} {label:10} ({len(kept):3d} rows): {before:6.1%} -> {after:6.1%}")


def main() -> None:
    pairs = scored_pairs()
    _print_alltoall(pairs)
    _print_means(pairs)


if __name__ == "__main__":
    main()
