"""Graph builders over a design's fabric, as arrays, and their metrics."""

from clusterforge.topology.build import build_fabric_graph
from clusterforge.topology.graph import (
    LINK_CLASSES,
    NETWORK_CLASSES,
    NETWORK_LINK_LATENCY_S,
    NVLINK_LATENCY_S,
    SCALEUP_CLASSES,
    FabricGraph,
)
from clusterforge.topology.metrics import LinkClassSummary, link_class_summary

__all__ = [
    "LINK_CLASSES",
    "NETWORK_CLASSES",
    "NETWORK_LINK_LATENCY_S",
    "NVLINK_LATENCY_S",
    "SCALEUP_CLASSES",
    "FabricGraph",
    "LinkClassSummary",
    "build_fabric_graph",
    "link_class_summary",
]
