"""What-if: the fixed cost across nodes read as a cost of nccl-tests' timed loop, not of a call.

nccl-tests times a size as one window (``BenchTime`` in ``src/common.cu``, NVIDIA/nccl-tests
v2.13.9 c6afef0, v2.17.6 da0b547, v2.17.9 2535da8 and v2.19.6 a0b82b2 alike): one call and a
stream synchronize, an MPI ``Barrier``, then the timer starts, ``iters`` calls are launched
back to back with no synchronization between them (``-n``, 20 by default; no CUDA graph unless
``-G``), the stream is synchronized, and the elapsed time over ``iters`` is the reported time,
averaged over the ranks (``average = 1``).  A cost paid once per window (the first launch,
the skew of the ranks leaving the barrier, the final synchronize's wake-up) therefore shows
up divided by ``iters``, while a cost paid by every call shows up whole.

The model's fixed cost across nodes (``call_across_nodes_us``, 4.6 us, fitted on the
calibration cluster's 2-node tree/LL rows, run with ``-n 20``) is read as a per-call cost.
This script prices the other reading: the same fitted excess as a window cost, ``4.6 us x 20``
per window, charged ``window / iters`` per call with each row's own ``-n`` (taken from its
``source``; 20 where it names none).  The rows that tell the readings apart are those timed
with another ``-n``: the Lambda B200 2-node rows (``-n 100``, NCCL 2.26.2, as the calibration
cluster).  It also prints, per cluster, the median excess of the measured time over the model
below 16 MiB across nodes and the window cost that excess would imply.  Held-out rows are never
simulated; ``src/`` is unchanged.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/nccltests_window_whatif.py
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from benchmarks.net_step_cost_whatif import time_us

import clusterforge.netsim.simulate as simulate_module
from clusterforge.netsim import latency as latency_module
from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import LARGE_BYTES, ROWS, Scored, score

__all__ = ["DEFAULT_ITERS", "row_iters", "window_latency", "window_us"]

STUDIED = ("calibration", "development")
DEFAULT_ITERS = 20  # nccl-tests ``iters`` (src/common.cu, every release read)
_CALL_US = latency_module._CALL_ACROSS_NODES_US  # fitted per-call cost across nodes
_ITERS_RE = re.compile(r"(?:\s-n\s+|--iters\s+)(\d+)")


def row_iters(row: dict[str, Any]) -> int:
    """The row's timed iterations: its nccl-tests ``-n`` / ``--iters``, else the default."""
    found = _ITERS_RE.search(" " + str(row.get("source", "")))
    return int(found.group(1)) if found else DEFAULT_ITERS


def window_us() -> float:
    """The fitted per-call cost read as a window cost: its calibration rows ran ``-n 20``."""
    return _CALL_US * DEFAULT_ITERS


@contextmanager
def window_latency(iters: list[int]) -> Iterator[None]:
    """The model with the per-call cost across nodes replaced by ``window_us() / iters[0]``
    (``iters`` is a one-item list the caller sets per row)."""
    original: Callable[..., float] = simulate_module.latency_s

    def patched(algorithm: Any, protocol: Any, ctx: TuningContext) -> float:
        base = latency_module.nccl_latency_s(algorithm, protocol, ctx)
        return base + (window_us() / iters[0] * 1e-6 if ctx.num_nodes > 1 else 0.0)

    simulate_module.latency_s = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        simulate_module.latency_s = original  # type: ignore[assignment]


def _score_window(rows: list[dict[str, Any]]) -> list[Scored]:
    iters = [DEFAULT_ITERS]
    out = []
    with window_latency(iters):
        for r in rows:
            iters[0] = row_iters(r)
            out.append(score(r))
    return out


def _mean_abs(scored: list[Scored]) -> float:
    return float(np.mean([abs(s.error) for s in scored])) * 100 if scored else 0.0


def _excess_by_cluster(rows: list[dict[str, Any]], before: list[Scored]) -> None:
    print(
        f"{'cluster (< 16 MiB, across nodes)':34s} {'rows':>4s} {'-n':>4s} "
        f"{'median excess us/call':>21s} {'implied window us':>17s}"
    )
    clusters = sorted({str(r.get("cluster", "")) for r in rows})
    for cluster in clusters:
        idx = [
            i
            for i, r in enumerate(rows)
            if r.get("cluster", "") == cluster
            and r["size_bytes"] < LARGE_BYTES
            and r["num_nodes"] > 1
        ]
        if not idx:
            continue
        excess = [
            time_us(rows[i], rows[i]["busbw"]) - time_us(rows[i], before[i].simulated_gbyte_per_s)
            for i in idx
        ]
        n_iters = sorted({row_iters(rows[i]) for i in idx})
        med = float(np.median(excess))
        label = "/".join(str(n) for n in n_iters)
        name = cluster or "(no cluster name: nccl-tests #232)"
        print(f"{name[:34]:34s} {len(idx):4d} {label:>4s} {med:+21.1f} {med * n_iters[0]:+17.0f}")


def slope_us(
    rows: list[dict[str, Any]],
    before: list[Scored],
    cluster: str,
    protocol: str = "ll",
    num_nodes: int | None = None,
) -> tuple[float, float]:
    """(measured, model) rise of the call time from the cluster's smallest to its largest
    tree/``protocol`` row below 16 MiB across nodes (on ``num_nodes`` nodes if given): a
    floor that the host's submission of each call puts under back-to-back launches would flatten
    the measured rise, a cost per call would not."""
    idx = [
        i
        for i, r in enumerate(rows)
        if r.get("cluster", "") == cluster
        and r["num_nodes"] > 1
        and (num_nodes is None or r["num_nodes"] == num_nodes)
        and r["size_bytes"] < LARGE_BYTES
        and (before[i].algorithm, before[i].protocol) == ("tree", protocol)
    ]
    if len(idx) < 2:
        return float("nan"), float("nan")
    lo = min(idx, key=lambda i: rows[i]["size_bytes"])
    hi = max(idx, key=lambda i: rows[i]["size_bytes"])
    meas = time_us(rows[hi], rows[hi]["busbw"]) - time_us(rows[lo], rows[lo]["busbw"])
    model = time_us(rows[hi], before[hi].simulated_gbyte_per_s) - time_us(
        rows[lo], before[lo].simulated_gbyte_per_s
    )
    return meas, model


def _slopes(rows: list[dict[str, Any]], before: list[Scored]) -> None:
    head = "cluster: tree/LL rows, rise smallest -> largest"
    print(f"\n{head:48s} {'measured':>9s} {'model':>9s}")
    for cluster in sorted({str(r.get("cluster", "")) for r in rows}):
        meas, model = slope_us(rows, before, cluster)
        if meas == meas:  # not nan
            print(f"{cluster[:48]:48s} {meas:+8.1f}us {model:+8.1f}us")
    head = "cluster: 2-node tree/LL128 rows, the same rise"
    print(f"\n{head:48s} {'measured':>9s} {'model':>9s}")
    for cluster in sorted({str(r.get("cluster", "")) for r in rows}):
        meas, model = slope_us(rows, before, cluster, "ll128", 2)
        if meas == meas and cluster:  # not nan; the #232 pair runs one GPU a node
            print(f"{cluster[:48]:48s} {meas:+8.1f}us {model:+8.1f}us")


def _summaries(rows: list[dict[str, Any]], runs: dict[str, list[Scored]]) -> None:
    names = list(runs)
    print(f"\n{'set / size':40s} {'rows':>4s} " + " ".join(f"{n:>12s}" for n in names))
    for subset in STUDIED:
        for label, test in (("< 16 MiB", True), (">= 16 MiB", False), ("all", None)):
            idx = [
                i
                for i, r in enumerate(rows)
                if r["set"] == subset and (test is None or (r["size_bytes"] < LARGE_BYTES) == test)
            ]
            cells = " ".join(f"{_mean_abs([runs[n][i] for i in idx]):11.2f}%" for n in names)
            print(f"{subset + ' ' + label:40s} {len(idx):4d} {cells}")
    print()
    moved = sorted({str(rows[i].get("cluster", "")) for i in _moved(runs)})
    for cluster in moved:
        for label, test in (("< 16 MiB", True), (">= 16 MiB", False)):
            idx = [
                i
                for i, r in enumerate(rows)
                if r.get("cluster", "") == cluster
                and r["set"] == "development"
                and (r["size_bytes"] < LARGE_BYTES) == test
            ]
            if idx:
                cells = " ".join(f"{_mean_abs([runs[n][i] for i in idx]):11.2f}%" for n in names)
                print(f"{cluster[:30] + ' ' + label:40s} {len(idx):4d} {cells}")


def _moved(runs: dict[str, list[Scored]]) -> list[int]:
    before, after = runs["before"], runs["window"]
    return [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b.error != a.error]


def main() -> None:
    rows = [r for r in ROWS if r["set"] in STUDIED]
    before = [score(r) for r in rows]
    _excess_by_cluster(rows, before)
    _slopes(rows, before)
    print(f"\nper-call cost {_CALL_US:.2f} us read as a window of {window_us():.0f} us")
    runs = {"before": before, "window": _score_window(rows)}
    _summaries(rows, runs)
    print("\nrows that move (signed error before / window)")
    for i in _moved(runs):
        r, b, a = rows[i], runs["before"][i], runs["window"][i]
        print(
            f"{r['id']:36s} -n {row_iters(r):3d} {b.error * 100:+7.1f} % "
            f"{b.algorithm}/{b.protocol:6s} {a.error * 100:+7.1f} % {a.algorithm}/{a.protocol}"
        )


if __name__ == "__main__":
    main()
