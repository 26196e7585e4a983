"""Google Cloud A3 Mega over GPUDirect-TCPXO: the NCCL settings of the plugin's profile as a
what-if, against a published two-VM all-reduce sweep that is not a validation row.

The log: lessizzmore/create-a3mega-ztan-fork, file ``ztan-NCCL-test-result`` at 02dd8f45
(the same table in ``ztan-NCCL-test-result.markdown`` at 346b825a): ``all_reduce_perf -b 8
-e 8G -f 2 -g 1``, 16 ranks on two a3-megagpu-8g VMs (8 H100 80GB HBM3 each), float sum,
out-of-place columns below.  The log does not print the NCCL environment (``-x
${HOST_VARS}``); the repository's setup installs the TCPXO plugin image v1.0.4 with NCCL
2.21.5.  It is used here as a development-style comparison only: it is not in
``validation/`` and no constant is read from it.

Mapping (stated): ``dgx-h100`` nodes, eight 200 Gb/s NICs per node (Google Cloud, "GPU
machine types" / "Network bandwidth and GPU machine types": a3-megagpu-8g, eight GPU NICs
of 200 Gbps, GPUDirect-TCPXO), fabric ``roce`` (one Ethernet leaf), transport ``rdma``
(the model has no TCPXO transport).

Variants, each patched for the run only (``src/`` unchanged):

- ``rdma``: the model as it maps the call today (NCCL's choice over every protocol, NVLS
  allowed, ``NCCL_BUFFSIZE`` 4 MiB).
- ``profile``: the NCCL settings GoogleCloudPlatform/container-engine-accelerators
  ``gpudirect-tcpxo/README.md`` lists for plugin v1.0.4 (release "Aug 06, 2024", NCCL
  2.21.5): ``NCCL_PROTO=Simple`` (the spec's ``nccl_protocols``), ``NCCL_ALGO=Ring,Tree``
  and ``NCCL_NVLS_ENABLE=0`` (NVLS off leaves ring and tree for an all-reduce:
  ``collectives.candidate_algorithms``), ``NCCL_BUFFSIZE=8388608``
  (``model.PIPELINE_CHUNK_BYTES``).  The plugin reports ``props.latency = 0``
  (google/nccl-plugin-gpudirect-tcpxo ``tcpdirect_plugin/fastrak_offload/nccl_shim.cc``,
  ``NcclShim::GetProperties``, at 04815d1b), as NCCL's own InfiniBand transport does, so
  NCCL's ranking is the model's RDMA ranking: nothing to patch for it.

Per row it prints the measured time, each variant's time and error (positive: the model
is faster than the log) and the time the log spends beyond the ``profile`` model, which is
what a TCPXO per-call cost would have to price; at 8 GiB it prints the busbw ratio a TCPXO
payload share would have to be.  Both are readings of this one log, not constants.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/a3mega_tcpxo_whatif.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterforge.netsim import model
from validation.nccl_rows import CLUSTERS, LARGE_BYTES, Scored, score

__all__ = [
    "CLUSTER",
    "LOG_ROWS",
    "PROFILE_BUFFSIZE_BYTES",
    "VARIANTS",
    "Compared",
    "compare",
    "log_row",
    "main",
    "tcpxo_profile",
]

CLUSTER = "gcp-a3mega-tcpxo-ztan"
VARIANTS = ("rdma", "profile")
# NCCL_BUFFSIZE of the TCPXO profile (container-engine-accelerators gpudirect-tcpxo/README.md,
# every release from May 2024 to Jan 2026)
PROFILE_BUFFSIZE_BYTES = 8 * 2**20
NUM_RANKS = 16
# nccl-tests all-reduce bus factor 2 (n - 1) / n
_BUS_FACTOR = 2 * (NUM_RANKS - 1) / NUM_RANKS

# (size bytes, out-of-place time us, out-of-place busbw GB/s) of ``ztan-NCCL-test-result``
LOG_ROWS: tuple[tuple[int, float, float], ...] = (
    (8, 135.8, 0.00),
    (16, 123.2, 0.00),
    (32, 123.3, 0.00),
    (64, 123.4, 0.00),
    (128, 123.0, 0.00),
    (256, 123.6, 0.00),
    (512, 126.6, 0.00),
    (1024, 147.1, 0.01),
    (2048, 125.8, 0.03),
    (4096, 126.9, 0.06),
    (8192, 131.6, 0.12),
    (16384, 138.6, 0.22),
    (32768, 155.2, 0.40),
    (65536, 159.4, 0.77),
    (131072, 159.3, 1.54),
    (262144, 167.1, 2.94),
    (524288, 174.2, 5.64),
    (1048576, 203.2, 9.68),
    (2097152, 254.0, 15.48),
    (4194304, 364.6, 21.57),
    (8388608, 571.9, 27.50),
    (16777216, 977.6, 32.18),
    (33554432, 1059.9, 59.36),
    (67108864, 1261.6, 99.74),
    (134217728, 1652.2, 152.32),
    (268435456, 2360.9, 213.19),
    (536870912, 3817.5, 263.69),
    (1073741824, 6759.0, 297.86),
    (2147483648, 12646.0, 318.40),
    (4294967296, 24361.0, 330.58),
    (8589934592, 47535.0, 338.82),
)


def log_row(size_bytes: int, busbw: float) -> dict[str, Any]:
    """One size of the log as a ``validation.nccl_rows`` row, built in memory for the
    comparison only (no file of ``validation/`` holds it)."""
    return {
        "id": f"ztan-a3mega-ar-{size_bytes}",
        "cluster": CLUSTER,
        "node": "dgx-h100",
        "num_nodes": 2,
        "nics_per_node": 8,
        "nic_gbit_per_s": 200,
        "fabric": "roce",
        "collective": "all_reduce",
        "algorithm": "auto",
        "size_bytes": size_bytes,
        "busbw": max(busbw, 1e-9),
    }


@contextmanager
def tcpxo_profile(variant: str) -> Iterator[None]:
    """The NCCL settings of ``variant`` for the log's cluster, for the duration only."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: use one of {', '.join(VARIANTS)}")
    saved_chunk = model.PIPELINE_CHUNK_BYTES
    CLUSTERS[CLUSTER] = {"nccl_version": "2.21.5", "nvls": variant == "rdma"}
    if variant == "profile":
        model.PIPELINE_CHUNK_BYTES = PROFILE_BUFFSIZE_BYTES
    try:
        yield
    finally:
        model.PIPELINE_CHUNK_BYTES = saved_chunk
        del CLUSTERS[CLUSTER]


def _model_time_us(scored: Scored) -> float:
    return scored.row["size_bytes"] * _BUS_FACTOR / (scored.simulated_gbyte_per_s * 1e3)


@dataclass(frozen=True)
class Compared:
    """One size of the log against one variant: times in us, error of the model's time."""

    size_bytes: int
    measured_us: float
    model_us: float
    algorithm: str
    protocol: str

    @property
    def error(self) -> float:
        """Positive: the model is faster than the log (busbw convention)."""
        return self.measured_us / self.model_us - 1.0

    @property
    def excess_us(self) -> float:
        return self.measured_us - self.model_us


def compare(variant: str) -> list[Compared]:
    """Every size of the log under ``variant``."""
    out = []
    with tcpxo_profile(variant):
        for size, time_us, busbw in LOG_ROWS:
            row = log_row(size, busbw)
            if variant == "profile":
                row["nccl_protocols"] = ["simple"]
            s = score(row)
            out.append(Compared(size, time_us, _model_time_us(s), s.algorithm, s.protocol))
    return out


def _band(rows: list[Compared], lo: int, hi: float) -> str:
    part = [abs(c.error) for c in rows if lo <= c.size_bytes < hi]
    return f"{float(np.mean(part)):8.1%} ({len(part)})"


def main() -> None:
    runs = {v: compare(v) for v in VARIANTS}
    print(f"{'size B':>11} {'log us':>9} | {'rdma us':>9} {'err':>8} {'pair':12} | "
          f"{'profile us':>10} {'err':>8} {'pair':12} {'log - profile us':>16}")  # fmt: skip
    for a, b in zip(runs["rdma"], runs["profile"], strict=True):
        print(
            f"{a.size_bytes:11d} {a.measured_us:9.1f} | {a.model_us:9.1f} {a.error:+8.1%} "
            f"{a.algorithm[:5] + '/' + a.protocol:12} | {b.model_us:10.1f} {b.error:+8.1%} "
            f"{b.algorithm[:5] + '/' + b.protocol:12} {b.excess_us:16.1f}"
        )
    for v in VARIANTS:
        rows = runs[v]
        print(
            f"{v:8} mean |error|: all {_band(rows, 0, float('inf'))}, "
            f"< 1 MiB {_band(rows, 0, 2**20)}, 1-16 MiB {_band(rows, 2**20, LARGE_BYTES)}, "
            f">= 16 MiB {_band(rows, LARGE_BYTES, float('inf'))}"
        )
    small = [c.excess_us for c in runs["profile"] if c.size_bytes <= 2**16]
    last = runs["profile"][-1]
    print(
        f"log - profile model, 8 B to 64 KiB: median {float(np.median(small)):.1f} us "
        f"(range {min(small):.1f} to {max(small):.1f})"
    )
    print(
        f"8 GiB busbw, log over profile model: {last.model_us / last.measured_us:.3f} "
        "(a reading of this log, not a constant)"
    )


if __name__ == "__main__":
    main()
