"""What-if: LL and LL128 across nodes limited by the steps a network connection keeps in flight.

NCCL's network proxy keeps at most ``maxDepth = min(NCCL_STEPS, NCCL_SHARED_STEPS / nsubs)``
steps of a connection posted (``sendProxyProgress`` / ``recvProxyProgress`` in
``src/transport/net.cc``, NVIDIA/nccl v2.24.3-1, 6aae379): 8 for a collective's own
connection.  A slot is posted again only once the receiving GPU has read it and the receiving
proxy has posted the next receive, which the InfiniBand transport announces to the sender by
an RDMA write of the slot's address (``ncclIbPostFifo`` in ``src/transport/net_ib.cc``): a
step's slot comes back after the data crossed the network and a credit crossed it back.
Per channel a network hop then moves at most ``NCCL_STEPS x chunk`` per round trip, a
latency-bandwidth product that caps LL and LL128 where their chunks are small:

* tree all-reduce: ``calcCollChunking`` (``src/enqueue.cc``) halves the LL128 chunk down to
  32 KiB (18,000 B of data at 1-4 MiB on 2-8 nodes of 8 GPUs); each of the 2 x nChannels tree
  channels sends ``ceil(size / lanes / chunk)`` chunks up and as many down.
* ring (all-reduce, all-gather, reduce-scatter): the chunk is one step of the buffer
  (LL128 576,000 B of data, LL 32 KiB) or a rank's share of the channel, and a loop runs
  ``2 (n - 1)`` (all-reduce) or ``n - 1`` steps per channel, each one chunk through every
  rank's send slot, the network sender's included.
* chain (broadcast, reduce): ``ceil(size / lanes / chunk)`` steps through each network hop.

The round trip is taken as twice NCCL's own one-way network step (``hwLat[NET]`` plus the
path, ``latency._inter_us``: tree LL128 8.5 us, ring 4.0 us, plus our graph's path), the
window as ``NCCL_STEPS`` = 8 (``data/nccl.toml``).  The call takes at least NCCL's latency
plus ``max(0, steps - 8) x round trip / 8`` (the first window leaves at once); on rings
NCCL's latency already charges a hardware latency per step, so there the window adds only
what exceeds it.  LL and LL128 across nodes only; Simple's 512 KiB steps do not bind at
these sizes.  Monkeypatched, ``src/`` unchanged; held-out rows are never simulated.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/ll128_internode_whatif.py
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.nccl_whatif_common import split_summary
from benchmarks.proxy_serial_whatif import tree_chunk_bytes

import clusterforge.netsim.simulate as simulate_module
from clusterforge.netsim import latency as latency_module
from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import ROWS, Scored, score

STUDIED = ("calibration", "development")
_STEPS = latency_module._STEPS  # NCCL_STEPS
_RING_STEPS = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1}


def round_trip_s(algorithm: str, protocol: str, ctx: TuningContext) -> float:
    """A slot's round trip: the step across the network and the credit back."""
    key = "tree" if algorithm == "tree" else "ring"
    return 2 * latency_module._inter_us(key, protocol, ctx) * 1e-6  # type: ignore[arg-type]


def network_steps(algorithm: str, protocol: str, ctx: TuningContext, size_bytes: float) -> int:
    """Steps one channel moves through its busiest network connection in one call."""
    lanes = 2 * ctx.num_channels
    step = latency_module._TREE_CHUNK[protocol]  # type: ignore[index]
    if algorithm == "tree":
        return math.ceil(size_bytes / lanes / tree_chunk_bytes(ctx, protocol, size_bytes))
    if algorithm == "chain":
        return math.ceil(size_bytes / lanes / min(step, size_bytes / lanes))
    n = ctx.num_ranks
    chunk = min(float(step), size_bytes / (n * lanes))
    loops = math.ceil(size_bytes / (lanes * n * chunk))
    return loops * _RING_STEPS.get(ctx.collective, 1) * (n - 1)


def window_s(algorithm: str, protocol: str, ctx: TuningContext, size_bytes: float) -> float:
    """Seconds the 8-step window adds beyond NCCL's latency (0 where it does not bind)."""
    steps = network_steps(algorithm, protocol, ctx, size_bytes)
    rtt = round_trip_s(algorithm, protocol, ctx)
    wait = max(0, steps - _STEPS) * rtt / _STEPS
    if algorithm == "ring":
        # NCCL's ring latency charges every step a hardware latency already
        wait = max(0.0, wait - latency_module._ring_us("ring", protocol, ctx) * 1e-6)  # type: ignore[arg-type]
    return wait


@contextmanager
def step_window() -> Iterator[None]:
    """Charge LL/LL128 calls across nodes the 8-step window of their network connections."""
    original: Callable[..., float] = simulate_module._time

    def patched(phases: Any, algorithm: str, protocol: str, ctx: TuningContext, size: float):
        t = original(phases, algorithm, protocol, ctx, size)
        if protocol == "simple" or ctx.num_nodes < 2 or ctx.num_channels < 1:
            return t
        if algorithm not in ("tree", "ring", "chain"):
            return t
        lat = latency_module.latency_s(algorithm, protocol, ctx)  # type: ignore[arg-type]
        return max(t, lat + window_s(algorithm, protocol, ctx, size))

    simulate_module._time = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module._time = original  # type: ignore[assignment]


def chosen_context(b: Scored) -> tuple[TuningContext, str, str]:
    """The tuning context, algorithm and protocol the model ran ``b``'s row with."""
    captured: list[tuple[TuningContext, str, str]] = []
    original: Callable[..., float] = simulate_module._time

    def spy(phases: Any, algorithm: str, protocol: str, ctx: TuningContext, size: float):
        captured.append((ctx, algorithm, protocol))
        return original(phases, algorithm, protocol, ctx, size)

    simulate_module._time = spy  # type: ignore[assignment]
    try:
        forced = "ring" if b.algorithm == "chain" else b.algorithm
        score(b.row, algorithm=forced, protocol=b.protocol)
    finally:
        simulate_module._time = original  # type: ignore[assignment]
    return captured[-1]


def window_table(before: list[Scored]) -> None:
    """Per LL/LL128 row across nodes up to 128 MiB: steps per channel through its busiest
    network connection against the 8-step window, the round trip and the wait it adds."""
    print(f"{'row':40s} {'pair':>12s} {'steps':>6s} {'rtt us':>7s} {'wait us':>8s}")
    for b in before:
        row = b.row
        if b.protocol == "simple" or row["num_nodes"] < 2 or row["size_bytes"] > 2**27:
            continue
        ctx, algorithm, protocol = chosen_context(b)
        if algorithm not in ("tree", "ring", "chain") or ctx.num_channels < 1:
            continue
        size = float(row["size_bytes"])
        steps = network_steps(algorithm, protocol, ctx, size)
        rtt = round_trip_s(algorithm, protocol, ctx) * 1e6
        wait = window_s(algorithm, protocol, ctx, size) * 1e6
        pair = f"{algorithm}/{protocol}"
        print(f"{row['id']:40s} {pair:>12s} {steps:6d} {rtt:7.1f} {wait:8.1f}")


@contextmanager
def no_tree_ll128() -> Iterator[None]:
    """The protocol-choice reading: NCCL weighs no tree/LL128 across nodes (ring LL128 and
    every other pair kept), as ``ncclTopoTuneModel`` would if only the tree graph's
    ``typeInter`` lay beyond PXN.  No source states that of these clusters."""
    original: Callable[..., tuple[str, ...]] = simulate_module.protocols_for

    def patched(name: str, ctx: TuningContext) -> tuple[str, ...]:
        protocols = original(name, ctx)
        if name == "tree" and ctx.num_nodes > 1:
            return tuple(p for p in protocols if p != "ll128")
        return protocols

    simulate_module.protocols_for = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module.protocols_for = original  # type: ignore[assignment]


def _moves(title: str, before: list[Scored], after: list[Scored]) -> None:
    print(f"\n{title}: rows that move")
    print(f"{'row':40s} {'set':4s} {'before':>22s} {'after':>22s}")
    for b, a in zip(before, after, strict=True):
        if abs(a.error - b.error) > 0.005:
            print(
                f"{b.row['id']:40s} {b.row['set'][:3]:4s} {b.error:+7.1%} "
                f"{b.algorithm + '/' + b.protocol:>14s} {a.error:+7.1%} "
                f"{a.algorithm + '/' + a.protocol:>14s}"
            )
    rows = [b.row for b in before]
    for subset in STUDIED:
        idx = [i for i, r in enumerate(rows) if r["set"] == subset]
        print(split_summary(f"{subset[:3]} before", [before[i] for i in idx]))
        print(split_summary(f"{subset[:3]} after", [after[i] for i in idx]))
    # the GB200 / GB300 rows (NVL72 racks) are their own gaps; the rest without them
    idx = [i for i, r in enumerate(rows) if r["set"] == "development" and not _nvl72(r)]
    print(split_summary("dev no GB bf", [before[i] for i in idx]))
    print(split_summary("dev no GB af", [after[i] for i in idx]))


def _nvl72(row: dict[str, Any]) -> bool:
    return "gb200" in row["id"] or "gb300" in row["id"]


def main() -> None:
    rows = [r for r in ROWS if r["set"] in STUDIED]
    before: list[Scored] = [score(r) for r in rows]
    window_table(before)
    with step_window():
        windowed = [score(r) for r in rows]
    _moves("A. the 8-step window per network connection", before, windowed)
    with no_tree_ll128():
        no_tree = [score(r) for r in rows]
    _moves("B. no tree/LL128 across nodes (protocol choice)", before, no_tree)


if __name__ == "__main__":
    main()
