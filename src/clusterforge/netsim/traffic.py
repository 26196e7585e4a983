"""The traffic of one collective phase: segments owned by demands, volumes per demand."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.netsim.routing import NetSegments

__all__ = ["Traffic", "empty_ids", "empty_segments"]


def empty_ids() -> np.ndarray:
    return np.zeros(0, np.int64)


def empty_segments() -> NetSegments:
    return NetSegments(*(empty_ids() for _ in range(7)))


@dataclass(frozen=True)
class Traffic:
    """One phase: intra-domain and fabric segments, each owned by a demand."""

    algorithm: str  # efficiency key: ring, tree, chain, direct, nvls
    intra_src: np.ndarray
    intra_dst: np.ndarray
    intra_demand: np.ndarray
    net: NetSegments
    net_demand: np.ndarray
    volume: np.ndarray  # bytes per byte of size, one per demand
    steps: int  # sequential steps, each paying one path latency
    intra_weight: np.ndarray | None = None  # share of its demand an intra segment carries
    pipelined: bool = False  # chunks flow on to the next pipelined phase (hierarchical)

    def weights(self) -> np.ndarray:
        """Per intra segment share of its demand's rate (1 unless aggregated)."""
        if self.intra_weight is None:
            return np.ones(self.intra_src.size)
        return self.intra_weight

    @property
    def num_flows(self) -> int:
        return int(self.intra_src.size + self.net.src_node.size)
