"""Rules about the compute fabric and how the job's parallelism uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.design.rules.finding import Finding

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = [
    "all_to_all_topology",
    "nic_per_gpu",
    "oversubscribed_fabric",
    "oversubscribed_fabric_with_tp",
    "single_switch_lag",
    "tp_exceeds_nvlink",
]

# Tensor parallelism across nodes needs at least the 400 Gb/s per GPU of NVIDIA's reference
# designs (DGX SuperPOD H100: one NDR 400 Gb/s port per GPU); Megatron-LM keeps TP inside the
# NVLink domain for this reason (Narayanan et al. 2021, §3.3).
MIN_GBIT_PER_GPU_TP = 400.0


def _tp_group(d: Design) -> int:
    return 1 if d.job is None else d.job.tp * d.job.cp


def tp_exceeds_nvlink(d: Design) -> list[Finding]:
    if d.job is None:
        return []
    tp, domain = d.job.tp, d.compute.job_nvlink_domain_gpus
    if tp <= domain:
        return []
    return [
        Finding(
            id="tp-exceeds-nvlink-domain",
            severity="error",
            message=f"tensor parallel {tp} is larger than the {domain}-GPU NVLink domain: every "
            "layer's all-reduce crosses the scale-out network",
            numbers={"tensor_parallel": tp, "nvlink_domain_gpus": domain},
            fix=f"keep tensor_parallel ≤ {domain} and use pipeline or context parallelism across nodes",
        )
    ]


def oversubscribed_fabric_with_tp(d: Design) -> list[Finding]:
    fab, tp = d.fabric, _tp_group(d)
    if tp <= d.compute.job_nvlink_domain_gpus:
        return []
    if fab.oversubscription <= 1.0 and fab.gbit_per_s_per_gpu >= MIN_GBIT_PER_GPU_TP:
        return []
    return [
        Finding(
            id="fabric-weak-for-tp",
            severity="error",
            message=f"TP x CP = {tp} spans nodes over a fabric with {fab.oversubscription:g}:1 "
            f"oversubscription and {fab.gbit_per_s_per_gpu:g} Gb/s per GPU",
            numbers={
                "tp_x_cp": tp,
                "oversubscription": fab.oversubscription,
                "gbit_per_s_per_gpu": fab.gbit_per_s_per_gpu,
            },
            fix=f"non-blocking fabric with ≥ {MIN_GBIT_PER_GPU_TP:g} Gb/s per GPU, or TP within a node",
        )
    ]


def oversubscribed_fabric(d: Design) -> list[Finding]:
    fab = d.fabric
    out = []
    if fab.oversubscription > 1.0:
        out.append(
            Finding(
                id="fabric-oversubscribed",
                severity="warning",
                message=f"leaves are {fab.oversubscription:g}:1 oversubscribed: all-reduce and "
                "all-to-all across leaves get a fraction of line rate",
                numbers={
                    "oversubscription": fab.oversubscription,
                    "bisection_gbit_per_s": fab.bisection_gbit_per_s,
                },
                fix="place jobs leaf-aligned (topology-aware scheduling) or design 1:1",
            )
        )
    if fab.core_oversubscription > 1.0:
        out.append(
            Finding(
                id="core-oversubscribed",
                severity="warning",
                message=f"spines reach the core at {fab.core_oversubscription:g}:1: traffic "
                "between pods (data-parallel groups larger than a pod) shares a fraction of "
                "the pod's bandwidth",
                numbers={
                    "core_oversubscription": fab.core_oversubscription,
                    "bisection_gbit_per_s": fab.bisection_gbit_per_s,
                },
                fix="keep jobs within a pod, put pipeline stages (not data parallelism) across "
                "pods, or design the core 1:1",
            )
        )
    return out


def nic_per_gpu(d: Design) -> list[Finding]:
    """Fewer compute NICs than GPUs on a node of a fabric; a lone node has no compute fabric,
    so none of its NICs is cabled and there is nothing to share."""
    nics, gpus = d.fabric.nics_per_node, d.compute.gpus_per_node
    if not d.fabric.num_node_links or nics >= gpus or gpus == 1:
        return []
    return [
        Finding(
            id="fewer-nics-than-gpus",
            severity="warning",
            message=f"{nics} compute NICs for {gpus} GPUs per node: GPUs share NICs and PCIe "
            f"switches, {d.fabric.gbit_per_s_per_gpu:g} Gb/s per GPU",
            numbers={"nics_per_node": nics, "gpus_per_node": gpus},
            fix="one NIC per GPU (rail-optimized), as in DGX/HGX reference designs",
        )
    ]


def single_switch_lag(d: Design) -> list[Finding]:
    if not d.fabric.link_aggregation:
        return []
    return [
        Finding(
            id="single-switch-link-aggregation",
            severity="error",
            message="node NICs are bonded into one switch: link aggregation hashes each flow onto "
            "one member link, so collisions waste bandwidth and nothing scales past one switch",
            numbers={"nics_per_node": d.fabric.nics_per_node},
            fix="one NIC per GPU into a rail-optimized or leaf-spine fabric, each NIC its own rail",
        )
    ]


def all_to_all_topology(d: Design) -> list[Finding]:
    if d.job is None or d.job.ep <= 1 or d.fabric.topology not in ("rail-only", "dragonfly"):
        return []
    return [
        Finding(
            id="all-to-all-on-restricted-topology",
            severity="warning",
            message=f"expert parallelism (all-to-all) on a {d.fabric.topology} fabric: cross-rail "
            "or cross-group traffic takes NVLink forwarding or global links",
            numbers={"expert_parallel": d.job.ep},
            fix="rail-optimized fat-tree for MoE training",
        )
    ]
