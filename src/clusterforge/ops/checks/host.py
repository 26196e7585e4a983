"""Host checks: required filesystems, free space, memory, and GPU/NIC NUMA affinity.

LBNL NHC's ``check_fs_mount_rw``, ``check_fs_free`` and ``check_hw_physmem`` are the model
(github.com/mej/nhc, ``scripts/ww_fs.nhc`` and ``ww_hw.nhc``); affinity follows Azure HPC health checks'
``check_hw_topology`` (github.com/Azure/azurehpc-health-checks): each GPU should
have its NIC on the same NUMA node, as on DGX/HGX boards where GPU and NIC share a PCIe switch.
"""

from __future__ import annotations

from collections import Counter

from clusterforge.ops.checks.base import CheckResult, Status, Thresholds, result
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import GpuReading, HostReading, NicReading

__all__ = ["check_affinity", "check_disk_free", "check_memory", "check_mounts"]


def check_mounts(host: HostReading) -> list[CheckResult]:
    """Each required path is a mount point and writable; a hung mount is 'unknown', not a hang."""
    out = []
    for mount in host.mounts:
        if mount.error is not None and mount.mounted is not False:
            status: Status = "unknown"
            observed = mount.error
        else:
            status = "pass" if mount.mounted and mount.writable else "fail"
            observed = (
                "not mounted"
                if not mount.mounted
                else f"{mount.fstype}, "
                + ("writable" if mount.writable else "read-only or not writable")
            )
        out.append(
            result(
                "host.mounts",
                status,
                severity="critical",
                subject=mount.path,
                observed=observed,
                expected="mounted, writable",
                remedy="mount it (`mount -a`, check the storage server / network); a hung mount "
                "blocks jobs",
            )
        )
    return out


def check_disk_free(host: HostReading, expect: NodeExpectation) -> list[CheckResult]:
    out = []
    for mount in host.mounts:
        if not mount.mounted:
            continue
        free = mount.free_gib
        status: Status = (
            "unknown" if free is None else "fail" if free < expect.min_free_gib else "pass"
        )
        observed = (
            "not measured" if free is None else f"{free:.1f} GiB free of {mount.total_gib:.1f}"
        )
        out.append(
            result(
                "host.disk_free",
                status,
                severity="warning",
                subject=mount.path,
                observed=observed,
                expected=f">= {expect.min_free_gib:g} GiB free",
                remedy="clean up old checkpoints, core dumps and job scratch",
            )
        )
    return out


def check_memory(
    host: HostReading, expect: NodeExpectation, limits: Thresholds
) -> list[CheckResult]:
    """MemTotal against the node's installed memory; a missing DIMM shows as a shortfall."""
    total, available = host.mem_total_gib, host.mem_available_gib
    if total is None:
        return [
            result(
                "host.memory",
                "unknown",
                severity="warning",
                subject="node",
                observed="no /proc/meminfo",
                expected="readable",
            )
        ]
    status: Status = "pass"
    expected = "memory available"
    if expect.memory_gib is not None:
        expected = f">= {expect.memory_gib * limits.min_memory_ratio:.0f} GiB total"
        if total < expect.memory_gib * limits.min_memory_ratio:
            status = "fail"
    if (
        status == "pass"
        and available is not None
        and available < total * limits.min_available_memory_ratio
    ):
        status = "warn"
    return [
        result(
            "host.memory",
            status,
            severity="warning",
            subject="node",
            observed=f"{total:.0f} GiB total, {available or 0:.0f} GiB available",
            expected=expected,
            remedy="a DIMM is missing or failed (check `dmidecode -t memory`, the BMC SEL); "
            "low available memory: look for leaked processes",
        )
    ]


def check_affinity(
    gpus: tuple[GpuReading, ...], nics: tuple[NicReading, ...], expect: NodeExpectation
) -> list[CheckResult]:
    """GPUs spread evenly over NUMA nodes, and each NUMA node's GPUs have as many local NICs."""
    gpu_numa = Counter(g.numa_node for g in gpus if g.numa_node is not None and g.numa_node >= 0)
    if not gpu_numa:
        return (
            [
                result(
                    "host.affinity",
                    "unknown",
                    severity="warning",
                    subject="node",
                    observed="GPU NUMA nodes not reported",
                    expected="GPUs and NICs balanced over NUMA nodes",
                )
            ]
            if gpus
            else []
        )
    nic_numa = Counter(n.numa_node for n in nics if n.numa_node is not None and n.numa_node >= 0)
    problems = []
    if max(gpu_numa.values()) - min(gpu_numa.values()) > 1:
        problems.append(f"GPUs per NUMA node {dict(sorted(gpu_numa.items()))}")
    one_to_one = expect.num_compute_nics is not None and expect.num_compute_nics >= len(gpus)
    for numa, num_gpus in sorted(gpu_numa.items()):
        needed = num_gpus if one_to_one else 1
        if nics and nic_numa.get(numa, 0) < needed:
            problems.append(f"NUMA {numa}: {num_gpus} GPUs, {nic_numa.get(numa, 0)} NICs")
    return [
        result(
            "host.affinity",
            "warn" if problems else "pass",
            severity="warning",
            subject="node",
            observed="; ".join(problems)
            or f"GPUs {dict(sorted(gpu_numa.items()))}, NICs {dict(sorted(nic_numa.items()))} per NUMA node",
            expected="each NUMA node's GPUs have local NICs",
            remedy="check BIOS NUMA settings (NPS) and "
            "that the NICs sit in the slots the board manual pairs with each GPU",
        )
    ]
