"""What-if: the network proxy thread as a serial server of a tree's network operations.

NCCL moves every network step of a collective through one host thread per GPU, the proxy
(``sendProxyProgress`` / ``recvProxyProgress`` in ``src/transport/net.cc``, NVIDIA/nccl
v2.24.3-1): for each step of each network connection it posts the send or receive, polls it
to completion and hands the slot back to the GPU.  NCCL's own cost model charges such an
operation ``getNetOverhead`` (``src/graph/tuning.cc``: 1 us on an Intel x86 host, 2 us on
AMD; ``net_overhead_us`` in ``netsim/data/nccl.toml``), but only as a per-step latency of the
ring, never as a time proportional to the number of steps.

A tree all-reduce across nodes cuts each channel's share into chunks of one buffer step
(``calcCollChunking`` in ``src/enqueue.cc``: LL128 halves its chunk to 18,000 B at 1-4 MiB
on 4-8 nodes of 8 GPUs, 36,000 B on 2 nodes at 4 MiB), and every chunk costs a network
operation per network peer of the channel at the GPU that faces the network
(``runTreeSplit`` in ``src/device/all_reduce.h``: receive from each child and send to the
parent going up, the reverse going down).  On 2 nodes each node is the root of one of
NCCL's two trees and a leaf of the other (2 operations per chunk each); from 3 nodes an
interior node has two children and a parent in one tree (6) and is a leaf of the other (2).
With 2 x nChannels tree channels over ``ppn`` GPUs, the busiest GPU's proxy serves

    ops = chunks per channel x (channels per GPU) x (mean operations per channel per chunk)

operations per call beyond the first chunk's (which NCCL's per-hop latency covers).  If
the thread serves them one at a time at NCCL's overhead, the call takes at least NCCL's
latency plus ``ops x net_overhead_us``; this script charges
``max(model time, latency + ops x overhead)`` for tree LL/LL128 calls across nodes
(monkeypatched here; ``src/`` is unchanged) and prints development and calibration rows
before and after.  Held-out rows are never simulated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/proxy_serial_whatif.py
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import clusterforge.netsim.simulate as simulate_module
from clusterforge.netsim import latency as latency_module
from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import LARGE_BYTES, ROWS, Scored, score

STUDIED = ("calibration", "development")
_OVERHEAD_S = latency_module._NET_OVERHEAD_US * 1e-6  # NCCL getNetOverhead, x86 Intel host


def tree_chunk_bytes(ctx: TuningContext, protocol: str, size_bytes: float) -> int:
    """A tree channel's chunk (NCCL's ``calcCollChunking``, as ``latency.tree_fill_s``)."""
    lanes = 2 * ctx.num_channels
    ppn = ctx.ranks_per_node
    chunk = latency_module._TREE_CHUNK[protocol]  # type: ignore[index]
    if protocol == "ll128":
        steps = 1 + latency_module._log2i(ctx.num_nodes) + 0.1 * ppn
        for times, floor in ((64, 131072), (16, 32768)):
            while size_bytes // (lanes * chunk) < steps * times / ppn and chunk > floor:
                chunk //= 2
    return chunk


def proxy_operations(ctx: TuningContext, protocol: str, size_bytes: float) -> float:
    """Network operations the busiest GPU's proxy serves in one tree all-reduce."""
    lanes = 2 * ctx.num_channels
    chunks = math.ceil(size_bytes / lanes / tree_chunk_bytes(ctx, protocol, size_bytes))
    # the first chunk's operations are inside NCCL's per-hop network latency (hwLat >=
    # getNetOverhead), which latency_s already charges
    chunks -= 1
    lanes_per_gpu = lanes / max(1, ctx.ranks_per_node)
    # per channel and chunk: root/leaf 2 each on 2 nodes; interior 6 and leaf 2 from 3
    per_lane = 2.0 if ctx.num_nodes == 2 else 4.0
    return chunks * lanes_per_gpu * per_lane


def proxy_bound_s(ctx: TuningContext, protocol: str, size_bytes: float) -> float:
    return proxy_operations(ctx, protocol, size_bytes) * _OVERHEAD_S


@contextmanager
def proxy_serial() -> Iterator[None]:
    """Charge tree LL/LL128 calls across nodes the proxy's serial operations."""
    original: Callable[..., float] = simulate_module._time

    def patched(phases: Any, algorithm: str, protocol: str, ctx: TuningContext, size: float):
        t = original(phases, algorithm, protocol, ctx, size)
        if algorithm != "tree" or protocol == "simple" or ctx.num_nodes < 2:
            return t
        lat = latency_module.latency_s(algorithm, protocol, ctx)  # type: ignore[arg-type]
        return max(t, lat + proxy_bound_s(ctx, protocol, size))

    simulate_module._time = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module._time = original  # type: ignore[assignment]


def score_as_chosen(before: Scored) -> Scored:
    """The row simulated with the pair the unpatched model chose (the what-if charges trees
    only, so it must not move a row to a ring, whose proxy operations it leaves out)."""
    return score(before.row, algorithm=before.algorithm, protocol=before.protocol)


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _summary(label: str, before: list[Scored], after: list[Scored]) -> None:
    for name, test in (("< 16 MiB", True), (">= 16 MiB", False)):
        idx = [i for i, s in enumerate(before) if (s.row["size_bytes"] < LARGE_BYTES) == test]
        b = _mean([abs(before[i].error) for i in idx]) * 100
        a = _mean([abs(after[i].error) for i in idx]) * 100
        print(f"{label:12s} {name:10s} {len(idx):4d} rows  {b:6.2f} % -> {a:6.2f} %")


def main() -> None:
    rows = [r for r in ROWS if r["set"] in STUDIED]
    before = [score(r) for r in rows]
    with proxy_serial():
        # a row off the tree keeps its pair: the patch only lengthens trees
        after = [score_as_chosen(b) if b.algorithm == "tree" else score(b.row) for b in before]
    print(f"{'row':42s} {'set':5s} {'before':>16s} {'after':>16s}")
    for b, a in zip(before, after, strict=True):
        if abs(a.error - b.error) > 0.005:
            print(
                f"{b.row['id']:42s} {b.row['set'][:3]:5s} {b.error * 100:+6.1f} % "
                f"{b.algorithm}/{b.protocol:6s} {a.error * 100:+6.1f} % {a.algorithm}/{a.protocol}"
            )
    for subset in STUDIED:
        idx = [i for i, r in enumerate(rows) if r["set"] == subset]
        _summary(subset, [before[i] for i in idx], [after[i] for i in idx])
        b = _mean([abs(before[i].error) for i in idx]) * 100
        a = _mean([abs(after[i].error) for i in idx]) * 100
        print(f"{subset:12s} {'all':10s} {len(idx):4d} rows  {b:6.2f} % -> {a:6.2f} %")


if __name__ == "__main__":
    main()
