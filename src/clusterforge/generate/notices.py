"""Warnings the generators raise about a design, for the user to read (not errors: the files
are still written, each carrying the warning in a comment where it applies)."""

from __future__ import annotations

from collections.abc import Sequence

from clusterforge.design import Design
from clusterforge.generate.kubernetes.rdma import rdma_warnings, scale_warnings
from clusterforge.generate.training.launch import hca_names_assumed

__all__ = ["generation_warnings"]


def _hca_warning(design: Design) -> list[str]:
    if not hca_names_assumed(design):
        return []
    return [
        f"node {design.compute.node.id!r} has no published HCA names for its "
        f"{design.fabric.nics_per_node} rails: NCCL_IB_HCA assumes mlx5_<rail>; check the "
        "compute ports with ibdev2netdev before the first job"
    ]


def generation_warnings(design: Design, targets: Sequence[str]) -> list[str]:
    """``"<target>: <warning>"`` lines for the chosen targets, in target order."""
    found: list[str] = []
    for target in targets:
        match target:
            case "kubernetes":
                warnings = scale_warnings(design) + rdma_warnings(design) + _hca_warning(design)
            case "slurm":
                warnings = _hca_warning(design)
            case _:
                warnings = []
        found += [f"{target}: {w}" for w in warnings]
    return found
