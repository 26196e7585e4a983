"""Rules about the compute nodes (spares, GPU class, host CPUs) and about owning them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.design.rules.finding import Finding

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = ["consumer_gpu", "cpu_cores", "no_spares", "rent_cheaper"]


def no_spares(d: Design) -> list[Finding]:
    if d.compute.num_spare_nodes:
        return []
    fix = "keep about 5 % spare nodes (spare_fraction: 0.05)"
    if d.compute.node.rack_scale_nodes:
        # A tray is replaced within its own NVLink domain, never from another rack.
        fix = (
            "keep 2 trays of each rack as in-rack hot spares, jobs on the other "
            f"{d.compute.node.rack_scale_nodes - 2} (spare_nodes_per_nvlink_domain: 2); "
            "plan shows each way to hold spares with its cost"
        )
    return [
        Finding(
            id="no-spares",
            severity="warning",
            message="no spare nodes: a failed node stops a job that needs the whole cluster",
            numbers={"spare_fraction": d.spec.spare_fraction},
            fix=fix,
        )
    ]


def consumer_gpu(d: Design) -> list[Finding]:
    gpu = d.compute.gpu
    if gpu.datacenter:
        return []
    return [
        Finding(
            id="consumer-gpu",
            severity="error",
            message=f"{gpu.name} is a consumer GPU: no NVLink, no ECC, PCIe-only scale-up; fine "
            "for prototyping, not for production training",
            numbers={"ecc": str(gpu.ecc), "nvlink_domain_gpus": d.compute.nvlink_domain_gpus},
            fix="use a data-centre GPU (h100-sxm, h200-sxm, b200)",
        )
    ]


def cpu_cores(d: Design) -> list[Finding]:
    """Each GPU's training process wants a core for itself, two for its data-loader workers
    (Megatron-LM's ``--num-workers`` default), one for the DataLoader pin-memory thread
    (PyTorch ``torch.utils.data``) and one for NCCL's proxy thread: 5 physical cores."""
    have, want = d.compute.cpu_cores_per_gpu, d.spec.min_cpu_cores_per_gpu
    if have >= want:
        return []
    return [
        Finding(
            id="few-cpu-cores-per-gpu",
            severity="info",
            message=f"{have:g} host CPU cores per GPU, under the {want:g} a training process "
            "uses (itself, two data-loader workers, the pin-memory and NCCL proxy threads)",
            numbers={"cpu_cores_per_gpu": have, "min_cpu_cores_per_gpu": want},
            fix="profile the data loader; choose higher-core CPUs if it cannot keep up",
        )
    ]


def _rent_phrase(d: Design) -> str:
    c = d.cost
    match c.rent_basis:
        case "reserved":
            return (
                f"renting on {c.rent.reserved_term_years:g}-year reserved contracts at "
                f"${c.cloud_usd_per_gpu_hour:.2f}/GPU-h (every hour billed)"
            )
        case "on-demand":
            return (
                f"renting on demand at ${c.cloud_usd_per_gpu_hour:.2f}/GPU-h for the "
                f"{d.spec.economics.utilization:.0%} of hours used"
            )


def rent_cheaper(d: Design) -> list[Finding]:
    c = d.cost
    if c.build_wins:
        return []
    return [
        Finding(
            id="too-small-to-own",
            severity="warning",
            message=f"{_rent_phrase(d)} costs ${c.rent_total_usd / 1e6:.2f}M over {c.years:g} "
            f"years vs ${c.build_total_usd / 1e6:.2f}M to build "
            f"(${c.effective_build_usd_per_gpu_hour:.2f} per used GPU-h)",
            numbers={
                "rent_basis": c.rent_basis,
                "build_usd_per_gpu_hour": c.effective_build_usd_per_gpu_hour,
                "break_even_utilization": c.break_even_utilization,
            },
            fix="rent, or build only above the break-even utilization and size",
        )
    ]
