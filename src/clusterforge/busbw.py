"""Bus bandwidth, the figure nccl-tests prints: ``busbw = algbw x factor(collective, n)``.

``algbw = size / time`` depends on the collective; the factor turns it into the traffic each
rank moves per byte of the buffer, so that busbw compares with the link speed whatever the
collective and the number of ranks ``n`` (NVIDIA/nccl-tests ``doc/PERFORMANCE.md``, "Bus
bandwidth"): all-reduce ``2(n-1)/n`` (a reduce-scatter then an all-gather), reduce-scatter,
all-gather and all-to-all ``(n-1)/n``, broadcast, reduce and send/receive ``1``.

A bottom-layer module with no imports, so that the simulator, the acceptance targets and the
acceptance worker (which runs on the cluster's nodes) share one definition.
"""

from __future__ import annotations

__all__ = ["bus_factor"]


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests bus-bandwidth factor of ``collective`` over ``n`` ranks (dimensionless)."""
    match collective:
        case "all_reduce":
            return 2 * (n - 1) / n
        case "reduce_scatter" | "all_gather" | "all_to_all":
            return (n - 1) / n
        case _:
            return 1.0
