"""What a healthy node should look like: from the design spec through the catalog, plus overrides.

Every field may be ``None`` (= no expectation); a check with nothing to compare against is
simply not run, so ``clusterforge check`` without ``--expect`` still checks errors, links and
counters but not the GPU model or count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np

from clusterforge.catalog import Catalog, Scaleup, load_catalog
from clusterforge.errors import CheckError, did_you_mean
from clusterforge.spec import ClusterSpec, resolve_node_id

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "NVLINKS_PER_GPU",
    "ExpectOverrides",
    "Fabric",
    "NodeExpectation",
    "NodeFacts",
    "UnknownNodeError",
    "expectation_from_design",
    "expectation_from_spec",
    "node_facts",
    "with_overrides",
]

Fabric = Literal["infiniband", "roce"]
T = TypeVar("T")

# NVLink links per GPU by generation (catalog Gpu.scaleup).  NVLink 3 (A100): 12 links of
# 50 GB/s = 600 GB/s (NVIDIA A100 Tensor Core GPU datasheet); NVLink 4 (H100/H200 SXM): 18
# links = 900 GB/s (NVIDIA H100 Tensor Core GPU architecture whitepaper, "NVLink"); NVLink 5
# (B200): 18 links = 1.8 TB/s (NVIDIA DGX B200 datasheet, "NVLink" row).
NVLINKS_PER_GPU: dict[Scaleup, int] = {"nvlink3": 12, "nvlink4": 18, "nvlink5": 18}


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
    fabric: Fabric | None = None
    compute_hca_names: tuple[str, ...] = ()  # RDMA device names, index = rail; () unknown
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


def _leaves_of(design: Design, index: int) -> tuple[str, ...]:
    connectivity = design.fabric.connectivity
    if index >= connectivity.num_nodes:  # a spare outside the training fabric
        return ()
    nics = np.arange(connectivity.nics_per_node)
    leaves = connectivity.leaf_of(np.full_like(nics, index), nics)
    return tuple(dict.fromkeys(connectivity.switch_name(int(leaf)) for leaf in leaves))


def node_facts(design: Design, node: str) -> NodeFacts:
    """The design's facts about ``node``; :class:`UnknownNodeError` (with close matches) when
    the design has no node of that name."""
    names: list[str] = list(design.compute.node_names)
    if node not in names:
        raise UnknownNodeError(
            f"node {node!r} is not in the design (nodes {names[0]} .. {names[-1]})"
            f"{did_you_mean(node, names)}; name this node as the design does"
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


def _rail_hca_names(names: Sequence[str], num_compute_nics: int) -> tuple[str, ...]:
    """The node model's compute HCA names, index = rail, when it lists one per compute NIC;
    otherwise the rails' device names are unknown (empty)."""
    return tuple(names) if len(names) == num_compute_nics else ()


def expectation_from_spec(spec: ClusterSpec, catalog: Catalog | None = None) -> NodeExpectation:
    """The node the spec designs: GPU model and count, NICs and their speed, fabric, memory.

    Without a design at hand, ``catalog`` defaults to the packaged one."""
    catalog = catalog or load_catalog()
    node = catalog.nodes[resolve_node_id(spec, catalog)]
    gpu = catalog.gpus[node.gpu]
    nic = catalog.nics[node.compute_nic]
    num_nics = spec.network.nics_per_node or node.num_compute_nics
    return NodeExpectation(
        num_gpus=spec.gpus_per_node or node.num_gpus,
        gpu_id=gpu.id,
        gpu_nvml_names=tuple(gpu.nvml_names),
        gpu_tdp_w=gpu.tdp_w,
        num_nvlinks_per_gpu=NVLINKS_PER_GPU.get(gpu.scaleup),
        # An NVLink domain larger than one GPU on an SXM board is built from NVSwitches
        # (HGX/DGX); those systems need the fabric manager.
        nvswitch=node.nvlink_domain_gpus > 1 and gpu.form_factor == "sxm",
        num_compute_nics=num_nics,
        nic_gbit_per_s=spec.network.nic_gbit_per_s or nic.port_gbit_per_s,
        fabric=spec.network.fabric,
        compute_hca_names=_rail_hca_names(node.compute_hca_names, num_nics),
        num_cpus=node.num_cpus,
        memory_gib=float(node.memory_gib),
    )


def expectation_from_design(design: Design, node: str | None = None) -> NodeExpectation:
    """The node of a :func:`clusterforge.design.plan` design (its power cap included).

    With ``node``, also that node's facts (spare, rack, leaves); a name the design does not
    have raises :class:`UnknownNodeError`.
    """
    compute, fabric = design.compute, design.fabric
    return NodeExpectation(
        num_gpus=compute.gpus_per_node,
        gpu_id=compute.gpu.id,
        gpu_nvml_names=tuple(compute.gpu.nvml_names),
        gpu_tdp_w=compute.gpu.tdp_w,
        gpu_power_limit_w=design.gpu_power_limit_w,
        num_nvlinks_per_gpu=NVLINKS_PER_GPU.get(compute.gpu.scaleup),
        nvswitch=compute.nvlink_domain_gpus > 1 and compute.gpu.form_factor == "sxm",
        num_compute_nics=fabric.nics_per_node,
        nic_gbit_per_s=fabric.nic_gbit_per_s,
        fabric=design.spec.network.fabric,
        compute_hca_names=_rail_hca_names(compute.node.compute_hca_names, fabric.nics_per_node),
        num_cpus=compute.node.num_cpus,
        memory_gib=float(compute.node.memory_gib),
        facts=None if node is None else node_facts(design, node),
    )


@dataclass(frozen=True)
class ExpectOverrides:
    """Site values laid over the design's view of a node; None (or no mounts) = keep it."""

    gpu_id: str | None = None
    num_gpus: int | None = None
    num_compute_nics: int | None = None
    nic_gbit_per_s: float | None = None
    fabric: Fabric | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    mounts: tuple[str, ...] = ()
    min_free_gib: float | None = None


def _or(override: T | None, value: T) -> T:
    return value if override is None else override


def with_overrides(
    expect: NodeExpectation, overrides: ExpectOverrides, catalog: Catalog | None = None
) -> NodeExpectation:
    """``expect`` with the overrides applied.  A ``gpu_id`` also sets the GPU's NVML names,
    TDP and NVLink count, from ``catalog``: pass the one the design was planned with; without
    a design at hand, the packaged catalog is read."""
    o = overrides
    if o.gpu_id is not None:
        gpu = (catalog or load_catalog()).gpus[o.gpu_id]
        expect = dataclasses.replace(
            expect,
            gpu_id=gpu.id,
            gpu_nvml_names=tuple(gpu.nvml_names),
            gpu_tdp_w=gpu.tdp_w,
            num_nvlinks_per_gpu=NVLINKS_PER_GPU.get(gpu.scaleup),
        )
    return dataclasses.replace(
        expect,
        num_gpus=_or(o.num_gpus, expect.num_gpus),
        num_compute_nics=_or(o.num_compute_nics, expect.num_compute_nics),
        nic_gbit_per_s=_or(o.nic_gbit_per_s, expect.nic_gbit_per_s),
        fabric=_or(o.fabric, expect.fabric),
        driver_version=_or(o.driver_version, expect.driver_version),
        cuda_driver_version=_or(o.cuda_driver_version, expect.cuda_driver_version),
        mounts=o.mounts or expect.mounts,
        min_free_gib=_or(o.min_free_gib, expect.min_free_gib),
    )
