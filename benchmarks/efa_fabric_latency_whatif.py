"""aws-ofi-nccl's reported latency for NCCL's choice only, a fabric latency for the call's time:
the AWS EFA rows under that split, against the model (the reported latency as both).

aws-ofi-nccl reports a network latency per instance type (``platform_data_map``; 75.0 us on
p4d, p4de, p5 and p5e, 35.0 us on p5en and p6-b200; ``netsim.ofi_tuner.net_latency_s``).  NCCL
adds it to every network step of ``comm->latencies``, which ranks the (algorithm, protocol)
pairs; the model (``network.efa_instance``) also takes it as the call's time.  The plugin's
commits set the figure for NCCL's choice (d87d61e0: "makes NCCL choose the wrong algorithm for
the 2 nodes case"; 2496e7de: "based on empirical search").

The split: NCCL ranks the pairs with the plugin's figure, and the chosen pair's time carries a
fabric latency in the same slot (each network step, twice for Simple, as NCCL's formula places
``latencyInter``).  Fabric latencies priced (``FABRIC_US``):

- ``path``: the model's own graph path latency (about 1 us; what an InfiniBand or RoCE network
  step pays in the model).
- ``ib-write-14.6``: 14.6 us, the typical one-way latency of a 2-4,096 B RDMA write with
  immediate over SRD between two p6-b200.48xlarge, one EFA device each, host memory
  (perftest ``ib_write_lat -c SRD --write_with_imm``, 10,000 iterations, t_typical 14.62-15.44
  us; dailiuyao/ncclgauge-works@d3fe3e61
  ``aws/2026-summer-intern/script/p6-b200/rough_roofline/perftest/output/latency_client_20260603_235229.log``).
  One user's measurement on P6-B200 only: no AWS-published figure for p4de or p5 was found, so
  applying it to them is an assumption this script prices, not a source.
- ``ib-write-trips``: the same 14.6 us times the one-way trips a network message of the plugin
  makes before the receiver has it, where NCCL posts the receive as the send starts (the first
  steps of a call): 2 with the RDMA protocol (p5 and later: the receiver's control message,
  then the RDMA write; aws-ofi-nccl v1.8.1-aws ``src/nccl_ofi_rdma.c`` ``send``, ``have_ctrl``;
  a message of at most ``EAGER_MAX_SIZE`` = 8,192 B without a control message goes eagerly in
  one trip, not priced here), 3 with the send/recv protocol (p4d, p4de: libfabric's efa
  provider sends a request to send and the receiver reads the data with an RDMA read, a round
  trip; maintainer's description in aws/aws-ofi-nccl#802, 2025-03-08).

Development and calibration rows only (a held-out row is never simulated).  The training rows
with ``efa_instance`` (``validation/pub_aws_torchtitan_p5.toml``'s development rows) are
predicted under each reading in a fresh process (``--training MODE``), since the prediction
memoises its collectives.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/efa_fabric_latency_whatif.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from clusterforge.netsim import latency, simulate
from clusterforge.netsim.tuner import TuningContext
from clusterforge.netsim.vocab import Algorithm, Protocol
from validation.nccl_rows import ROWS, Scored, score, size_split_line

__all__ = ["FABRIC_US", "MODES", "main", "score_rows", "split_latency"]

# fabric latency in NCCL's latencyInter slot for the call's time (None: the graph's path)
IB_WRITE_US = 14.6
# one-way trips a plugin message makes by protocol (see the module docstring)
TRIPS = {"p4d.24xlarge": 3, "p4de.24xlarge": 3}
FABRIC_US: dict[str, Callable[[str], float | None]] = {
    "path": lambda instance: None,
    "ib-write-14.6": lambda instance: IB_WRITE_US,
    "ib-write-trips": lambda instance: IB_WRITE_US * TRIPS.get(instance, 2),
}
MODES = ("model", *FABRIC_US)


@contextmanager
def split_latency(fabric_us: float | None) -> Iterator[None]:
    """The call's time with ``fabric_us`` in NCCL's ``latencyInter`` slot (None: the model's
    graph path latency); NCCL's ranking keeps the plugin's figure (``ctx.net_plugin_latency_s``)."""
    orig_inter, orig_offset = latency._inter_us, simulate.tuner_offset_s

    def fabric(ctx: TuningContext) -> TuningContext:
        if ctx.net_plugin_latency_s == 0.0:
            return ctx
        plugin_s = 0.0 if fabric_us is None else fabric_us * 1e-6
        return replace(ctx, net_plugin_latency_s=plugin_s)

    def inter_us(algorithm: str, protocol: Protocol, ctx: TuningContext) -> float:
        return orig_inter(algorithm, protocol, fabric(ctx))

    def offset_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
        # NCCL ranks with the plugin's figure: add back what the fabric latency took off
        timed = latency.nccl_latency_s(algorithm, protocol, ctx)
        latency._inter_us = orig_inter
        try:
            ranked = latency.nccl_latency_s(algorithm, protocol, ctx)
        finally:
            latency._inter_us = inter_us
        return orig_offset(algorithm, protocol, ctx) + ranked - timed

    latency._inter_us = inter_us
    simulate.tuner_offset_s = offset_s
    try:
        yield
    finally:
        latency._inter_us = orig_inter
        simulate.tuner_offset_s = orig_offset


def score_rows(rows: list[dict[str, Any]], mode: str) -> list[Scored]:
    """Score ``rows`` (never held-out) under ``mode``: ``model`` (the plugin's figure as rank
    and time) or a key of :data:`FABRIC_US` (the split)."""
    if any(r["set"] == "heldout" for r in rows):
        raise ValueError("held-out rows are never simulated here")
    out = []
    for row in rows:
        if mode == "model" or "efa_instance" not in row:
            out.append(score(row))
            continue
        with split_latency(FABRIC_US[mode](row["efa_instance"])):
            out.append(score(row))
    return out


def _training(mode: str) -> None:
    """Predict the development runs with ``efa_instance`` under ``mode`` (one process)."""
    from validation.runs import load_runs, predict_run

    runs = [r for r in load_runs() if r.subset != "heldout"]
    for run in runs:
        instance = dict(run.network).get("efa_instance")
        if instance is None:
            continue
        with split_latency(FABRIC_US[mode](instance)) if mode != "model" else _nothing():
            out = predict_run(run)
            err = out.predicted / run.published - 1 if out.prediction else float("nan")
            print(f"  {run.name:36} {mode:14} {run.published:9.1f} {err:+7.1%}")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training", choices=MODES, help="predict the EFA training rows")
    args = parser.parse_args()
    if args.training:
        _training(args.training)
        return
    cal = [r for r in ROWS if r["set"] == "calibration"]
    dev = [r for r in ROWS if r["set"] == "development"]
    runs = {m: score_rows(dev, m) for m in MODES}
    print(f"{'row':30} {'measured':>8} " + " ".join(f"{m:>20}" for m in MODES))
    for i, row in enumerate(dev):
        if "efa_instance" not in row:
            continue
        cells = " ".join(
            f"{runs[m][i].error:+7.1%} {runs[m][i].algorithm[:5]}/{runs[m][i].protocol:6}"
            for m in MODES
        )
        print(f"{row['id']:30} {row['busbw']:8.2f} {cells}")
    for m in MODES:
        print(size_split_line(f"calibration, {m}", score_rows(cal, m), width=36))
    for m in MODES:
        print(size_split_line(f"development, {m}", runs[m], width=36))
        for cluster in dict.fromkeys(r["cluster"] for r in dev if "efa_instance" in r):
            part = [s for s in runs[m] if s.row.get("cluster") == cluster]
            print(size_split_line(f"  {cluster}", part, width=36))
    print("training rows with efa_instance (development), error by reading:")
    for m in MODES:
        subprocess.run([sys.executable, __file__, "--training", m], check=True)


if __name__ == "__main__":
    main()
