"""Two readings of aws-ofi-nccl's reported network latency on the AWS EFA rows, each against
the model without it (the rows with their ``efa_instance`` taken off).

aws-ofi-nccl reports a network latency to NCCL per instance type (``props->latency``,
``platform_data_map`` in ``src/platform-aws.c`` / ``src/platform-aws.cpp``): 75.0 us on
p4d, p4de and p5 (v1.8.1-aws, cf6f822d, the release of the awsome-distributed-training runs)
and 35.0 us on p5en and p6-b200 (v1.16.0 to v1.21.1; commit 2496e7de, 2025-05-23,
"Updating latency value for p5en and p6 based on empirical search").  The figure was set
to steer NCCL's choice, not measured as a delay: commit d87d61e0 (2023-07-07) lowered it
from 150 to 75 us because "a value below 75us is slightly better for large deployments, but
makes NCCL choose the wrong algorithm for the 2 nodes case".  NCCL (v2.20.3-1 and v2.27.7-1,
``src/graph/search.cc``: ``graph->latencyInter = net->net.latency``; ``src/graph/tuning.cc``:
``interLat = hwLat[NET][a][p] + graphs[a]->latencyInter``, plus a second ``latencyInter`` for
Simple) adds it to every network step of ``comm->latencies``, which only ranks the
(algorithm, protocol) pairs (``ncclTopoGetAlgoTime``); NCCL delays nothing by it.

Two readings, each against the model without a net plugin (which fills NCCL's
``latencyInter`` slot with its graph's path latency, ``latency._inter_us``):

- ``rank``: NCCL's choice with the plugin's figure (the pairs ranked with it), the call's
  time without it: what the sources state NCCL does.
- ``time``: the figure also taken as the call's time, as the model takes the rest of
  NCCL's latency table: what the model does for a fabric with ``network.efa_instance``
  (adopted; the rows' ``efa_instance`` gives the same figures as this column).

Development and calibration rows only (a held-out row is never simulated).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/efa_plugin_latency_whatif.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from clusterforge.netsim import latency, simulate
from clusterforge.netsim.ofi_tuner import net_latency_s
from clusterforge.netsim.tuner import TuningContext
from clusterforge.netsim.vocab import Algorithm, Protocol
from validation.nccl_rows import ROWS, Scored, score, size_split_line

__all__ = ["MODES", "main", "plugin_latency", "score_rows"]

MODES = ("rank", "time")

_InterUs = Callable[[str, Protocol, TuningContext], float]


def _with_plugin(orig: _InterUs, plugin_us: float) -> _InterUs:
    """NCCL's network step with the plugin's ``latencyInter`` in place of our path latency."""

    def inter_us(algorithm: str, protocol: Protocol, ctx: TuningContext) -> float:
        return orig(algorithm, protocol, replace(ctx, net_plugin_latency_s=plugin_us * 1e-6))

    return inter_us


@contextmanager
def plugin_latency(plugin_us: float, mode: str) -> Iterator[None]:
    """Patch the model so that NCCL's network step carries ``plugin_us`` of ``latencyInter``
    (twice for Simple): in the ranking only (``rank``) or in the call's time too (``time``)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {', '.join(MODES)}")
    orig_inter, orig_offset = latency._inter_us, simulate.tuner_offset_s
    patched = _with_plugin(orig_inter, plugin_us)

    def offset_s(algorithm: Algorithm, protocol: Protocol, ctx: TuningContext) -> float:
        before = latency.nccl_latency_s(algorithm, protocol, ctx)
        latency._inter_us = patched
        try:
            after = latency.nccl_latency_s(algorithm, protocol, ctx)
        finally:
            latency._inter_us = orig_inter
        return orig_offset(algorithm, protocol, ctx) + after - before

    try:
        if mode == "time":
            latency._inter_us = patched
        else:
            simulate.tuner_offset_s = offset_s
        yield
    finally:
        latency._inter_us = orig_inter
        simulate.tuner_offset_s = orig_offset


def score_rows(rows: list[dict[str, Any]], mode: str | None) -> list[Scored]:
    """Score ``rows`` (never held-out) without their ``efa_instance``; EFA rows with the
    plugin's latency on their instance (``ofi_tuner.net_latency_s``) under ``mode`` (None: no
    net plugin)."""
    out = []
    for row in rows:
        if row["set"] == "heldout":
            raise ValueError(f"row {row['id']}: held-out rows are never simulated here")
        instance = row.get("efa_instance")
        row = {k: v for k, v in row.items() if k != "efa_instance"}
        if mode is None or instance is None:
            out.append(score(row))
            continue
        with plugin_latency(net_latency_s(instance) * 1e6, mode):
            out.append(score(row))
    return out


def main() -> None:
    cal = [r for r in ROWS if r["set"] == "calibration"]
    dev = [r for r in ROWS if r["set"] == "development"]
    runs = {m: score_rows(dev, m) for m in (None, *MODES)}
    print(f"{'row':30} {'measured':>8} {'no plugin':>18} {'rank':>18} {'time':>18}")
    for i, row in enumerate(dev):
        if "efa_instance" not in row:
            continue
        cells = " ".join(
            f"{runs[m][i].error:+7.1%} {runs[m][i].algorithm[:5]}/{runs[m][i].protocol:6}"
            for m in (None, *MODES)
        )
        print(f"{row['id']:30} {row['busbw']:8.2f} {cells}")
    print(size_split_line("calibration (no EFA row)", score_rows(cal, None), width=34))
    for m in (None, *MODES):
        name = "no plugin" if m is None else f"plugin latency, {m}"
        print(size_split_line(f"development, {name}", runs[m], width=34))
        for cluster in dict.fromkeys(r["cluster"] for r in dev if "efa_instance" in r):
            part = [s for s in runs[m] if s.row.get("cluster") == cluster]
            print(size_split_line(f"  {cluster}", part, width=34))


if __name__ == "__main__":
    main()
