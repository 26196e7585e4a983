"""Inside one NVLink domain: NCCL 2.28.7's own choice, the one-node clique and a what-if.

Prints, for every development and calibration row whose communicator stays inside one
NVLink domain on Blackwell (OCI GB300 1, 2 and 16 trays, the B200 8-GPU calibration rows,
CoreWeave's GB200 single-rack rows), the measured call time, the simulator's time and
pick, the simulator's time forced to NVLS, and NCCL's own latency for ring LL and NVLS
(``ncclTopoTuneModel``, ``src/graph/tuning.cc``, NVIDIA/nccl v2.28.7-1: one node under
MNNVL, so ring LL costs ``6.6 + 2 (n - 1) x 0.6`` us and NVLS its 25 us hardware latency).
Then the mean absolute busbw error on ALL development rows (from 16 MiB and below) and on
calibration of the model and of two variants:

- ``trays``: the model before it took NCCL's one-node clique (``context.one_clique``):
  NVLS and all-to-all inside one multi-node NVLink rack with its trays counted as nodes,
  so NVLS pays the network's NVLS latency (18 us) and the fitted cost of a call across
  nodes (4.6 us), and the all-to-all a network overhead per peer.  The model now follows
  NCCL: the MNNVL clique is the node (``ncclTopoGetSystem``, ``src/graph/topo.cc``) and
  ``initTransportsRank`` (``src/init.cc``) counts one node.
- ``nvls24`` (a what-if on the model, not adopted): NVLS runs 24 channels, not 32, when the
  communicator is one node or one MNNVL clique (``NVLS_NCHANNELS_SM100_NVL``,
  ``ncclNvlsInit`` in ``src/transport/nvls.cc``, v2.28.7-1); the channels only enter the
  simulator through the NVLS chunk size (``simulate._time``).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/nvl72_small_whatif.py

Development and calibration rows only (never held-out).  Nothing under ``src/`` changes:
the variants monkeypatch inside this script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
from benchmarks.validate_simulate import spans_nvlink_domains

from clusterforge.busbw import bus_factor
from clusterforge.netsim import context
from clusterforge.netsim import simulate as sim
from validation.nccl_rows import LARGE_BYTES, ROWS, _graph, ranks, score

NVLS_CHANNELS_ONE_DOMAIN = 24  # NVLS_NCHANNELS_SM100_NVL, src/transport/nvls.cc, v2.28.7-1
NVLS_CHANNELS_MULTI_NODE = 32  # NVLS_NCHANNELS_SM100
NVLS_NVLINK_LATENCY_US = 25.0  # hwLatencies[NVLINK][NVLS][SIMPLE], src/graph/tuning.cc


def _blackwell_one_domain(row: dict[str, Any]) -> bool:
    name = row["node"].lower()
    blackwell = any(k in name for k in ("b200", "gb200", "gb300", "b300"))
    return blackwell and not spans_nvlink_domains(row) and row["set"] != "heldout"


def forced(row: dict[str, Any], algorithm: str, protocol: str = "auto") -> float:
    """Simulated busbw (GB/s) of ``row`` with the algorithm forced."""
    return score(row, algorithm=algorithm, protocol=protocol).simulated_gbyte_per_s


def time_us(row: dict[str, Any], busbw: float) -> float:
    """Call time (us) of ``row`` at bus bandwidth ``busbw`` GB/s."""
    facility = tuple(sorted(row.get("facility", {}).items()))
    graph = _graph(
        row["node"], row["num_nodes"], row.get("nics_per_node"), facility, row.get("fabric")
    )
    n = int(ranks(row, graph.gpus_per_node).size)
    return row["size_bytes"] * bus_factor(row["collective"], n) / (busbw * 1e3)


def nccl_ring_ll_latency_us(num_ranks: int) -> float:
    """NCCL's ring LL all-reduce latency inside one node: base 6.6 + 2 (n-1) x 0.6 us."""
    return 6.6 + 2 * (num_ranks - 1) * 0.6


@contextmanager
def nvls24() -> Iterator[None]:
    """NVLS on Blackwell with 24 channels inside one node or MNNVL clique, 32 across
    nodes (Hopper keeps 16 everywhere)."""
    original = sim._time

    def patched(phases: Any, algorithm: Any, protocol: Any, ctx: Any, size: float) -> float:
        # the simulator runs NVLS only inside one NVLink domain (collectives.candidate_algorithms)
        if algorithm == "nvls" and ctx.generation == "blackwell":
            with mock.patch.object(sim, "nvls_channels", lambda _g: NVLS_CHANNELS_ONE_DOMAIN):
                return original(phases, algorithm, protocol, ctx, size)
        return original(phases, algorithm, protocol, ctx, size)

    with mock.patch.object(sim, "_time", patched):
        yield


@contextmanager
def trays() -> Iterator[None]:
    """The model before NCCL's one-node clique: NVLS and all-to-all inside one multi-node
    NVLink rack count its trays as nodes."""
    with mock.patch.object(context, "CLIQUE_NODE_ALGORITHMS", ()):
        yield


VARIANTS: dict[str, Callable[[], Any]] = {"trays": trays, "nvls24": nvls24}


def _errors(select: Callable[[dict[str, Any]], bool]) -> list[float]:
    return [score(r).error for r in ROWS if select(r)]


def summary() -> dict[str, tuple[float, float, float]]:
    """Mean absolute error (dev >= 16 MiB, dev below, calibration): the model and each
    variant."""
    sets = (
        lambda r: r["set"] == "development" and r["size_bytes"] >= LARGE_BYTES,
        lambda r: r["set"] == "development" and r["size_bytes"] < LARGE_BYTES,
        lambda r: r["set"] == "calibration",
    )
    out: dict[str, tuple[float, float, float]] = {}
    out["model"] = tuple(float(np.mean(np.abs(_errors(s)))) for s in sets)  # type: ignore[assignment]
    for name, variant in VARIANTS.items():
        with variant():
            out[name] = tuple(float(np.mean(np.abs(_errors(s)))) for s in sets)  # type: ignore[assignment]
    return out


def main() -> None:
    print(
        f"{'row':32} {'set':5} {'meas':>7} {'sim':>7} {'pick':>12} {'nvls':>7} {'nvlsTr':>7} "
        f"{'ringLL':>7} {'NCCL ringLL lat':>15}  (us)"
    )
    for row in ROWS:
        if not _blackwell_one_domain(row) or row["collective"] != "all_reduce":
            continue
        s = score(row)
        meas = time_us(row, row["busbw"])
        sim_us = time_us(row, s.simulated_gbyte_per_s)
        nv = time_us(row, forced(row, "nvls"))
        with trays():
            nv_trays = time_us(row, forced(row, "nvls"))
        ring_ll = time_us(row, forced(row, "ring", "ll"))
        facility = tuple(sorted(row.get("facility", {}).items()))
        graph = _graph(
            row["node"], row["num_nodes"], row.get("nics_per_node"), facility, row.get("fabric")
        )
        n = int(ranks(row, graph.gpus_per_node).size)
        print(
            f"{row['id'][:32]:32} {row['set'][:5]:5} {meas:7.1f} {sim_us:7.1f} "
            f"{s.algorithm + '/' + s.protocol:>12} {nv:7.1f} {nv_trays:7.1f} {ring_ll:7.1f} "
            f"{nccl_ring_ll_latency_us(n):8.1f} vs {NVLS_NVLINK_LATENCY_US:.0f}"
        )
    print(f"\n{'variant':10} {'dev >=16MiB':>12} {'dev <16MiB':>12} {'calibration':>12}")
    for name, (big, small, cal) in summary().items():
        print(f"{name:10} {big:12.1%} {small:12.1%} {cal:12.1%}")


if __name__ == "__main__":
    main()
