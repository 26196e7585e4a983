"""GPU inventory and memory-reliability checks: count, model, driver, NVML, ECC, remaps, XIDs.

Limits follow DCGM's health watches (``DcgmHealthWatch.cpp``, ``DcgmGPUHardwareLimits.h``)
and NVIDIA's XID catalog ("Analyzing Xid Catalog", docs.nvidia.com/deploy/xid-errors).
"""

from __future__ import annotations

from collections import Counter

from clusterforge.ops.checks.base import (
    CheckResult,
    Status,
    Thresholds,
    counter_increase,
    result,
    worst,
)
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import GpuReading, GpuSnapshot, NodeReading, XidEvent
from clusterforge.ops.xid import XidPolicy

__all__ = [
    "check_driver",
    "check_ecc",
    "check_gpu_count",
    "check_gpu_model",
    "check_memory_repair",
    "check_nvml",
    "check_recovery_action",
    "check_xids",
]

# nvmlGpuRecoveryAction_t (NVML API reference; nvidia-ml-py's pynvml.py).
RECOVERY_ACTIONS = {
    0: "none",
    1: "GPU reset",
    2: "node reboot",
    3: "drain P2P",
    4: "drain and reset",
    5: "recover IMEX domain",
    6: "bus reset",
    7: "system reboot",
}


_XID_STATUS: dict[str, Status] = {"drain": "fail", "warn": "warn", "ignore": "pass"}


def check_gpu_count(snapshot: GpuSnapshot, expect: NodeExpectation) -> list[CheckResult]:
    if expect.num_gpus is None:
        return []
    seen = snapshot.num_gpus_reported
    if seen is None:
        return [
            result(
                "gpu.count",
                "unknown",
                severity="critical",
                subject="node",
                observed="NVML gave no count",
                expected=str(expect.num_gpus),
                remedy="see the gpu.nvml result",
            )
        ]
    status: Status = (
        "fail" if seen < expect.num_gpus else "warn" if seen > expect.num_gpus else "pass"
    )
    return [
        result(
            "gpu.count",
            status,
            severity="critical",
            subject="node",
            observed=f"{seen} GPUs",
            expected=f"{expect.num_gpus} GPUs",
            remedy="a GPU is missing from the bus: check `lspci | grep -i nvidia` and dmesg for "
            "XID 79; reseat or RMA the board",
        )
    ]


def check_gpu_model(gpus: tuple[GpuReading, ...], expect: NodeExpectation) -> list[CheckResult]:
    if not expect.gpu_nvml_names:
        return []
    wanted = " or ".join(repr(n) for n in expect.gpu_nvml_names)
    out = []
    for gpu in gpus:
        status: Status = (
            "unknown"
            if gpu.name is None
            else "pass"
            if gpu.name in expect.gpu_nvml_names
            else "fail"
        )
        out.append(
            result(
                "gpu.model",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=repr(gpu.name),
                expected=wanted,
                remedy="this node carries a different GPU than the design "
                f"({expect.gpu_id}); fix the inventory or the spec",
                gpu=gpu.index,
            )
        )
    return out


def check_driver(snapshot: GpuSnapshot, expect: NodeExpectation) -> list[CheckResult]:
    """Driver and CUDA versions must match the cluster's (given with --driver-version)."""
    out = []
    pairs = (
        ("driver", snapshot.driver_version, expect.driver_version),
        ("CUDA driver", snapshot.cuda_driver_version, expect.cuda_driver_version),
    )
    for label, seen, wanted in pairs:
        if wanted is None:
            continue
        status: Status = "unknown" if seen is None else "pass" if seen == wanted else "fail"
        out.append(
            result(
                "gpu.driver",
                status,
                severity="warning",
                subject="node",
                observed=f"{label} {seen}",
                expected=f"{label} {wanted}",
                remedy="install the cluster's driver version so every node runs the same stack",
            )
        )
    return out


def check_nvml(snapshot: GpuSnapshot) -> list[CheckResult]:
    """NVML usable, no hung call, and no GPU reporting 'GPU is lost'."""
    out = []
    if snapshot.error:
        out.append(
            result(
                "gpu.nvml",
                "unknown",
                severity="critical",
                subject="node",
                observed=snapshot.error,
                expected="NVML answers",
                remedy="check the driver (`nvidia-smi`); a hung NVML often follows XID 79 or 119",
            )
        )
    for gpu in snapshot.gpus:
        if not gpu.errors:
            out.append(
                result(
                    "gpu.nvml",
                    "pass",
                    severity="critical",
                    subject=f"gpu{gpu.index}",
                    observed="all reads answered",
                    expected="NVML answers",
                    gpu=gpu.index,
                )
            )
            continue
        lost = any("lost" in e.lower() for e in gpu.errors.values())
        first, *rest = sorted(gpu.errors.items())
        detail = f"{first[0]}: {first[1]}" + (f" (+{len(rest)} more reads)" if rest else "")
        out.append(
            result(
                "gpu.nvml",
                "fail" if lost else "unknown",
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=detail,
                expected="NVML answers",
                remedy="GPU is lost: drain and reboot the node (XID 79 bucket RESTART_BM)"
                if lost
                else "re-run; check the driver",
                gpu=gpu.index,
            )
        )
    return out


def _ecc_status(
    gpu: GpuReading, before: GpuReading | None, limits: Thresholds
) -> tuple[Status, str]:
    vol, agg = gpu.ecc_dbe_volatile, gpu.ecc_dbe_aggregate
    observed = f"DBE volatile {vol}, aggregate {agg}"
    if vol is None and agg is None:
        return "unknown", observed
    if vol:
        return "fail", observed
    if before is not None and before.ecc_dbe_aggregate is not None:
        new = counter_increase(agg, before.ecc_dbe_aggregate)
        return ("warn", f"{observed} (+{new} since last run)") if new else ("pass", observed)
    if (agg or 0) >= limits.baseline_max_ecc_dbe_aggregate:
        return "warn", f"{observed} (baseline run: lifetime total)"
    return "pass", observed


def check_ecc(
    gpus: tuple[GpuReading, ...],
    limits: Thresholds | None = None,
    previous: dict[int, GpuReading] | None = None,
) -> list[CheckResult]:
    """Volatile double-bit errors fail (DCGM MEM watch); aggregate ones (since manufacture)
    warn when they rose since the last run, or on a baseline run when the total is absurd."""
    limits, previous = limits or Thresholds(), previous or {}
    out = []
    for gpu in gpus:
        status, observed = _ecc_status(gpu, previous.get(gpu.index), limits)
        out.append(
            result(
                "gpu.ecc",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=observed,
                expected="DBE volatile 0, aggregate not rising",
                remedy="uncorrectable ECC errors: drain, reset the GPU, run `dcgmi diag -r 3`; "
                "RMA if they recur",
                gpu=gpu.index,
            )
        )
    return out


def _repair_problems(gpu: GpuReading, limits: Thresholds) -> list[str]:
    problems = []
    if gpu.remapped_rows_failure:
        problems.append("row remapping failed")
    if gpu.remapped_rows_pending:
        problems.append("row remap pending (needs a GPU reset)")
    if (gpu.remapped_rows_uncorrectable or 0) > limits.max_uncorrectable_remapped_rows:
        problems.append(f"{gpu.remapped_rows_uncorrectable} uncorrectable remapped rows")
    if gpu.retired_pages_pending:
        problems.append("page retirement pending")
    retired = (gpu.retired_pages_sbe or 0) + (gpu.retired_pages_dbe or 0)
    if retired >= limits.max_retired_pages:
        problems.append(f"{retired} retired pages")
    return problems


def check_memory_repair(gpus: tuple[GpuReading, ...], limits: Thresholds) -> list[CheckResult]:
    """Row remapping (Ampere+) and page retirement (older GPUs): DCGM's MEM watch limits."""
    out = []
    for gpu in gpus:
        fields = (gpu.remapped_rows_failure, gpu.remapped_rows_pending, gpu.retired_pages_pending)
        problems = _repair_problems(gpu, limits)
        status: Status = (
            "fail" if problems else "unknown" if all(f is None for f in fields) else "pass"
        )
        observed = "; ".join(problems) or (
            f"remapped rows: {gpu.remapped_rows_uncorrectable} uncorrectable, no failure, none pending"
        )
        out.append(
            result(
                "gpu.memory_repair",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=observed,
                expected="no remap failure, none pending",
                remedy="pending: reset the GPU (`nvidia-smi -r`) "
                "to apply the remap; failure: the bank has no spare rows, RMA the GPU",
                gpu=gpu.index,
            )
        )
    return out


def _gpu_of(event: XidEvent, gpus: tuple[GpuReading, ...]) -> int | None:
    if event.gpu_index is not None:
        return event.gpu_index
    for gpu in gpus:
        if event.pci_bus_id and gpu.pci_bus_id == event.pci_bus_id:
            return gpu.index
    return None


def _xid_counts(
    events: tuple[XidEvent, ...], gpus: tuple[GpuReading, ...]
) -> dict[int | None, Counter[int]]:
    counts: dict[int | None, Counter[int]] = {}
    for event in events:
        counts.setdefault(_gpu_of(event, gpus), Counter())[event.xid] += 1
    return counts


def _new_xids(now: Counter[int], before: Counter[int] | None) -> str:
    """'; new since last run: XID 79 x1' (empty on a baseline run or when nothing is new)."""
    if before is None:
        return ""
    new = {x: n - before[x] for x, n in sorted(now.items()) if n > before[x]}
    return (
        "; new since last run: " + ", ".join(f"XID {x} x{n}" for x, n in new.items()) if new else ""
    )


def check_xids(
    reading: NodeReading,
    policy: XidPolicy,
    limits: Thresholds,
    previous: NodeReading | None = None,
) -> list[CheckResult]:
    """XIDs from NVML events and the kernel log, judged by the XID policy.

    With a previous reading (the state file), the XIDs that are new since then are named
    (counted over the whole kernel log, so one ageing out of the window hides no new one).
    """
    gpus = reading.gpu.gpus
    before = (
        None
        if previous is None
        else _xid_counts((*previous.gpu.xid_events, *previous.kernel_xids), gpus)
    )
    now = _xid_counts((*reading.gpu.xid_events, *reading.kernel_xids), gpus)
    recent = [e for e in reading.kernel_xids if e.age_s is None or e.age_s <= limits.xid_window_s]
    by_gpu: dict[int | None, list[XidEvent]] = {g.index: [] for g in gpus}
    for event in (*reading.gpu.xid_events, *recent):
        by_gpu.setdefault(_gpu_of(event, gpus), []).append(event)
    out = []
    for index, events in sorted(by_gpu.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        rules = [policy.rule(e.xid) for e in events]
        statuses = [_XID_STATUS[r.action] for r in rules]
        seen = sorted({(r.xid, r.mnemonic, r.catalog) for r in rules})
        observed = (
            ", ".join(f"XID {x} ({m}{'; ' + c if c else ''})" for x, m, c in seen) or "no XID"
        ) + _new_xids(
            now.get(index, Counter()), None if before is None else before.get(index, Counter())
        )
        subject = "node" if index is None else f"gpu{index}"
        out.append(
            result(
                "gpu.xid",
                worst(statuses),
                severity="critical",
                subject=subject,
                observed=observed,
                expected="no XID that the policy drains on",
                remedy="follow the XID catalog's action: "
                "RESET_GPU -> `nvidia-smi -r`, RESTART_BM -> reboot; RMA if it recurs",
                gpu=index,
            )
        )
    return out


def check_recovery_action(gpus: tuple[GpuReading, ...]) -> list[CheckResult]:
    """NVML's GPU recovery action: anything but 'none' needs the operator (NVIDIA XID catalog,
    "GPU recovery action" linked to XID 154)."""
    out = []
    for gpu in gpus:
        action = gpu.recovery_action
        status: Status = "unknown" if action is None else "pass" if action == 0 else "fail"
        name = "not reported" if action is None else RECOVERY_ACTIONS.get(action, f"code {action}")
        out.append(
            result(
                "gpu.recovery_action",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=name,
                expected="none",
                remedy=f"the driver asks for: {name}",
                gpu=gpu.index,
            )
        )
    return out
