"""What a healthy node should look like: from the design spec through the catalog, plus overrides.

Every field may be ``None`` (= no expectation); a check with nothing to compare against is
simply not run, so ``clusterforge check`` without ``--expect`` still checks errors, links and
counters but not the GPU model or count.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.errors import CheckError, SpecError, did_you_mean
from clusterforge.spec import ClusterSpec, resolve_node_id

__all__ = [
    "NVLINKS_PER_GPU",
    "NodeExpectation",
    "NodeFacts",
    "UnknownNodeError",
    "expectation_from_design",
    "expectation_from_spec",
    "with_overrides",
]

# NVLink links per GPU by generation (catalog Gpu.scaleup).  NVLink 4 (H100/H200): 18 links
# (stas00/ml-engineering network/README.md, operations.md §17); NVLink 3 (A100): 12 links
# [unverified: NVIDIA A100 datasheet, from memory].  NVLink 5 (B200): 18 links [unverified].
NVLINKS_PER_GPU = {"nvlink3": 12, "nvlink4": 18, "nvlink5": 18}


@dataclass(frozen=True)
class NodeExpectation:
    """The design's view of one node.  Units in names; None = do not check."""

    num_gpus: int | None = None
    gpu_id: str | None = None
    gpu_nvml_names: tuple[str, ...] | None = None
    gpu_tdp_w: float | None = None
    gpu_power_limit_w: float | None = None  # a cap the design sets to fit the rack power
    num_nvlinks_per_gpu: int | None = None
    nvswitch: bool | None = None
    num_compute_nics: int | None = None
    nic_gbit_per_s: float | None = None
    fabric: Literal["infiniband", "roce"] | None = None
    num_cpus: int | None = None
    memory_gib: float | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    mounts: tuple[str, ...] = ()
    min_free_gib: float = 10.0
    facts: NodeFacts | None = None  # this node's place in the design (with --expect)


class UnknownNodeError(CheckError):
    """The node is not one of the design's nodes: the check cannot know what to expect."""


@dataclass(frozen=True)
class NodeFacts:
    """Where one node sits in the design: a spare or not, its rack and its leaf switches."""

    name: str
    index: int
    spare: bool
    rack: str | None = None
    leaves: tuple[str, ...] = ()

    def describe(self) -> str:
        """'rack r01, leaf-0001..leaf-0008, spare' for report titles."""
        parts = [f"rack {self.rack}"] if self.rack else []
        if self.leaves:
            first, last = self.leaves[0], self.leaves[-1]
            parts.append(first if first == last else f"{first}..{last} ({len(self.leaves)} leaves)")
        parts.append("spare" if self.spare else "training")
        return ", ".join(parts)


def _leaves_of(design: Any, index: int) -> tuple[str, ...]:
    connectivity = getattr(design.fabric, "connectivity", None)
    if connectivity is None or index >= connectivity.num_nodes:
        return ()
    nics = np.arange(connectivity.nics_per_node)
    leaves = connectivity.leaf_of(np.full_like(nics, index), nics)
    return tuple(dict.fromkeys(connectivity.switch_name(int(leaf)) for leaf in leaves))


def node_facts(design: Any, node: str) -> NodeFacts:
    """The design's facts about ``node``; :class:`UnknownNodeError` (with close matches) when
    the design has no node of that name."""
    names: list[str] = list(design.compute.node_names)
    if node not in names:
        raise UnknownNodeError(
            f"node {node!r} is not in the design (nodes {names[0]} .. {names[-1]})"
            f"{did_you_mean(node, names)}; pass --node with the design's name of this node"
        )
    index = names.index(node)
    rack = next(
        (r.name for r in design.racks for d in r.devices if d.kind == "node" and d.name == node),
        None,
    )
    return NodeFacts(
        name=node,
        index=index,
        spare=index >= design.compute.num_training_nodes,
        rack=rack,
        leaves=_leaves_of(design, index),
    )


def expectation_from_spec(spec: ClusterSpec, catalog: Catalog | None = None) -> NodeExpectation:
    """The node the spec designs: GPU model and count, NICs and their speed, fabric, memory."""
    catalog = catalog or load_catalog()
    node = catalog.nodes[resolve_node_id(spec, catalog)]
    gpu = catalog.gpus[node.gpu]
    nic = catalog.nics[node.compute_nic]
    return NodeExpectation(
        num_gpus=spec.gpus_per_node or node.num_gpus,
        gpu_id=gpu.id,
        gpu_nvml_names=tuple(gpu.nvml_names),
        gpu_tdp_w=gpu.tdp_w,
        num_nvlinks_per_gpu=NVLINKS_PER_GPU.get(gpu.scaleup),
        # An NVLink domain larger than one GPU on an SXM board is built from NVSwitches
        # (HGX/DGX); those systems need the fabric manager.
        nvswitch=node.nvlink_domain_gpus > 1 and gpu.form_factor == "sxm",
        num_compute_nics=spec.network.nics_per_node or node.num_compute_nics,
        nic_gbit_per_s=spec.network.nic_gbit_per_s or nic.port_gbit_per_s,
        fabric=spec.network.fabric,
        num_cpus=node.num_cpus,
        memory_gib=float(node.memory_gib),
    )


def expectation_from_design(design: Any, node: str | None = None) -> NodeExpectation:
    """The node of a :func:`clusterforge.design.plan` design (its power cap included).

    With ``node``, also that node's facts (spare, rack, leaves); a name the design does not
    have raises :class:`UnknownNodeError`.
    """
    compute, fabric = design.compute, design.fabric
    cap = getattr(design.layout_density, "power_cap", None)
    return NodeExpectation(
        num_gpus=compute.gpus_per_node,
        gpu_id=compute.gpu.id,
        gpu_nvml_names=tuple(compute.gpu.nvml_names),
        gpu_tdp_w=compute.gpu.tdp_w,
        gpu_power_limit_w=cap.gpu_power_limit_w if cap is not None else None,
        num_nvlinks_per_gpu=NVLINKS_PER_GPU.get(compute.gpu.scaleup),
        nvswitch=compute.nvlink_domain_gpus > 1 and compute.gpu.form_factor == "sxm",
        num_compute_nics=fabric.nics_per_node,
        nic_gbit_per_s=fabric.nic_gbit_per_s,
        fabric=fabric.fabric,
        num_cpus=compute.node.num_cpus,
        memory_gib=float(compute.node.memory_gib),
        facts=None if node is None else node_facts(design, node),
    )


def with_overrides(
    expect: NodeExpectation, catalog: Catalog | None = None, **overrides: Any
) -> NodeExpectation:
    """Apply CLI overrides (None values are ignored); ``gpu_id`` also sets names and TDP."""
    values = {k: v for k, v in overrides.items() if v is not None and v != ()}
    unknown = set(values) - {f.name for f in dataclasses.fields(NodeExpectation)}
    if unknown:
        raise SpecError(f"unknown expectation field(s): {', '.join(sorted(unknown))}")
    if "gpu_id" in values:
        gpu = (catalog or load_catalog()).gpus[values["gpu_id"]]
        values.setdefault("gpu_nvml_names", tuple(gpu.nvml_names))
        values.setdefault("gpu_tdp_w", gpu.tdp_w)
        values.setdefault("num_nvlinks_per_gpu", NVLINKS_PER_GPU.get(gpu.scaleup))
    return dataclasses.replace(expect, **values)
