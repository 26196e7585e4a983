"""Metrics of a fabric graph: link counts and capacity per link class."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.topology.graph import LINK_CLASSES, FabricGraph

__all__ = ["LinkClassSummary", "link_class_summary"]


@dataclass(frozen=True)
class LinkClassSummary:
    """Physical links of one class (one direction each) and their total capacity."""

    link_class: str
    num_links: int
    total_gbyte_per_s: float
    link_gbyte_per_s: float


def link_class_summary(graph: FabricGraph) -> list[LinkClassSummary]:
    """Per-class counts over the physical (member) view of the graph."""
    out = []
    for idx in np.unique(graph.link_class[graph.in_ecmp]):
        mask = graph.in_ecmp & (graph.link_class == idx)
        cap = graph.capacity_gbyte_per_s[mask]
        out.append(
            LinkClassSummary(LINK_CLASSES[idx], int(mask.sum()), float(cap.sum()), float(cap.max()))
        )
    return out
