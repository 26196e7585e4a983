"""Plain readings of one node: what NVML, sysfs and the host reported, nothing judged yet.

A field that is ``None`` was not available: NVML answered "not supported", the file does not
exist, or the read failed.  Read *failures* (a hung call, a lost GPU, a slow mount) are also
named in the ``errors`` of the reading that owns them, so a verdict can say "timed out"
rather than just "unknown".  Everything is a frozen dataclass that round-trips through JSON
(:func:`to_jsonable` / :func:`node_reading_from_dict`), which is how fixtures are stored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GpuProcess",
    "GpuReading",
    "GpuSnapshot",
    "HostReading",
    "MountReading",
    "NicReading",
    "NodeReading",
    "ProcessReading",
    "XidEvent",
    "node_reading_from_dict",
    "normalize_pci_bus_id",
    "to_jsonable",
]


@dataclass(frozen=True)
class XidEvent:
    """One XID: from an NVML event (``source="nvml"``) or a kernel-log line (``"kernel"``)."""

    xid: int
    gpu_index: int | None = None
    pci_bus_id: str | None = None
    source: str = "nvml"
    age_s: float | None = None  # seconds before the check ran (kernel log only)


@dataclass(frozen=True)
class GpuProcess:
    """A process that holds a context on a GPU (NVML's running compute or graphics
    processes).  ``pid`` is in the host's PID namespace; ``used_memory_mib`` is None where
    NVML cannot say (NVML_VALUE_NOT_AVAILABLE, e.g. under MIG or in a VM)."""

    pid: int
    used_memory_mib: float | None = None


@dataclass(frozen=True)
class GpuReading:
    """One GPU as NVML saw it.  Units are in the names; None = not available."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    numa_node: int | None = None
    ecc_dbe_volatile: int | None = None
    ecc_dbe_aggregate: int | None = None
    ecc_sbe_volatile: int | None = None
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    temperature_c: float | None = None
    temperature_slowdown_c: float | None = None
    clock_event_reasons: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    nvlink_active: tuple[bool, ...] | None = None
    nvlink_replay_errors: int | None = None
    nvlink_recovery_errors: int | None = None
    nvlink_crc_errors: int | None = None
    fabric_state: int | None = None
    fabric_status: int | None = None
    recovery_action: int | None = None
    processes: tuple[GpuProcess, ...] | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuSnapshot:
    """Everything the NVML adapter returned for the node.

    ``error`` is set when NVML could not be used at all (library missing, init failed) or a
    call hung; ``gpus`` then holds whatever was read before.
    """

    driver_version: str | None = None
    cuda_driver_version: str | None = None
    num_gpus_reported: int | None = None
    gpus: tuple[GpuReading, ...] = ()
    xid_events: tuple[XidEvent, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class NicReading:
    """One compute NIC port: an InfiniBand port, or the RDMA port of a RoCE NIC.

    ``counters`` holds the raw cumulative counters by their sysfs / ``ethtool -S`` names.
    """

    name: str
    port: int = 1
    link_layer: str | None = None  # "InfiniBand" | "Ethernet"
    state: str | None = None  # "ACTIVE", "DOWN", ... (sysfs ports/N/state)
    phys_state: str | None = None  # "LinkUp", "Disabled", ...
    rate_gbit_per_s: float | None = None
    netdev: str | None = None
    numa_node: int | None = None
    counters: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MountReading:
    """A filesystem the node needs: mounted?, writable?, free space."""

    path: str
    mounted: bool | None = None
    fstype: str | None = None
    writable: bool | None = None
    free_gib: float | None = None
    total_gib: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class HostReading:
    """Host facts: memory, NUMA nodes, mounts."""

    hostname: str | None = None
    mem_total_gib: float | None = None
    mem_available_gib: float | None = None
    num_numa_nodes: int | None = None
    mounts: tuple[MountReading, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcessReading:
    """Who a GPU process is, from ``/proc/<pid>`` and the cgroup tree.

    ``found`` is False when ``/proc/<pid>`` does not exist: the process exited between the
    NVML and the /proc reads, or the check runs in a PID namespace other than the host's.
    ``cgroup`` is the process's cgroup path (the cgroup v2 line, else the first v1 line that
    names a Slurm job or a pod).  ``job_running``: for a process in a Slurm job's cgroup,
    whether that job still has its slurmstepd; None outside a job or where it cannot be told.
    """

    pid: int
    found: bool = False
    uid: int | None = None
    user: str | None = None
    comm: str | None = None
    cmdline: tuple[str, ...] = ()
    cgroup: str | None = None
    job_running: bool | None = None


@dataclass(frozen=True)
class NodeReading:
    """All readings of one node at one time (``taken_at_s``: Unix seconds)."""

    node: str
    taken_at_s: float
    gpu: GpuSnapshot
    nics: tuple[NicReading, ...] = ()
    host: HostReading = HostReading()
    kernel_xids: tuple[XidEvent, ...] = ()
    processes: tuple[ProcessReading, ...] = ()  # the GPU processes' /proc facts, by PID
    errors: dict[str, str] = field(default_factory=dict)


def normalize_pci_bus_id(bus_id: str | bytes) -> str:
    """'00000000:18:00.0' (NVML) or '0000:18:00' (kernel XID line) -> '0000:18:00'."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else bus_id
    parts = text.strip().lower().split(":")
    if len(parts) < 3:
        return text.strip().lower()
    domain, bus, device = parts[-3], parts[-2], parts[-1].split(".")[0]
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}"


def to_jsonable(obj: Any) -> Any:
    """A reading (or any nesting of them) as JSON-ready dicts and lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj


def _gpu_from_dict(data: dict[str, Any]) -> GpuReading:
    values = dict(data)
    if values.get("nvlink_active") is not None:
        values["nvlink_active"] = tuple(bool(v) for v in values["nvlink_active"])
    if values.get("processes") is not None:
        values["processes"] = tuple(GpuProcess(**p) for p in values["processes"])
    return GpuReading(**values)


def _process_from_dict(data: dict[str, Any]) -> ProcessReading:
    return ProcessReading(**{**data, "cmdline": tuple(data.get("cmdline", ()))})


def node_reading_from_dict(data: dict[str, Any]) -> NodeReading:
    """Inverse of :func:`to_jsonable` for a :class:`NodeReading`."""
    gpu = dict(data["gpu"])
    snapshot = GpuSnapshot(
        **{k: v for k, v in gpu.items() if k not in ("gpus", "xid_events")},
        gpus=tuple(_gpu_from_dict(g) for g in gpu.get("gpus", [])),
        xid_events=tuple(XidEvent(**e) for e in gpu.get("xid_events", [])),
    )
    host = dict(data.get("host", {}))
    host["mounts"] = tuple(MountReading(**m) for m in host.get("mounts", []))
    return NodeReading(
        node=data["node"],
        taken_at_s=float(data["taken_at_s"]),
        gpu=snapshot,
        nics=tuple(NicReading(**n) for n in data.get("nics", [])),
        host=HostReading(**host),
        kernel_xids=tuple(XidEvent(**e) for e in data.get("kernel_xids", [])),
        processes=tuple(_process_from_dict(p) for p in data.get("processes", [])),
        errors=dict(data.get("errors", {})),
    )
