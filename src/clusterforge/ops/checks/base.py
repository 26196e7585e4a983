"""The result vocabulary of every check, and the thresholds they use.

A check result has an id (``gpu.ecc``), a severity, a status (pass / warn / fail / unknown,
the PASS/WARN/FAIL of DCGM's health results plus "unknown" for a reading that failed; a
check with no expectation is not emitted),
the observed and expected values as short text, and a remedy for the operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "STATUS_ORDER",
    "CheckResult",
    "Severity",
    "Status",
    "Thresholds",
    "counter_increase",
    "result",
    "worst",
]

Status = Literal["pass", "warn", "fail", "unknown"]
Severity = Literal["critical", "warning", "info"]

# Worst first when aggregating: a failure outranks "could not read", which outranks a warning.
STATUS_ORDER: dict[str, int] = {"pass": 0, "warn": 1, "unknown": 2, "fail": 3}


@dataclass(frozen=True)
class CheckResult:
    """One verdict about one subject (a GPU, a NIC port, a mount, or the node)."""

    check: str
    status: Status
    severity: Severity
    subject: str
    observed: str
    expected: str
    remedy: str = ""
    gpu: int | None = None
    nic: str | None = None


def result(
    check: str,
    status: Status,
    *,
    severity: Severity,
    subject: str,
    observed: str,
    expected: str,
    remedy: str = "",
    gpu: int | None = None,
    nic: str | None = None,
) -> CheckResult:
    """Build a CheckResult; the remedy is dropped on a pass so reports stay short.

    Everything after the status is keyword-only: ``observed`` and ``expected`` are both short
    text, and a positional call could swap them without any type error.
    """
    return CheckResult(
        check=check,
        status=status,
        severity=severity,
        subject=subject,
        observed=observed,
        expected=expected,
        remedy="" if status == "pass" else remedy,
        gpu=gpu,
        nic=nic,
    )


def worst(statuses: list[Status] | tuple[Status, ...]) -> Status:
    """The worst status of several (pass when there are none)."""
    return max(statuses, key=STATUS_ORDER.__getitem__, default="pass")


def counter_increase(now: int | None, before: int | None) -> int | None:
    """Increase of a cumulative counter; a value below the previous one means it was reset
    (reboot, driver reload, ``perfquery -x``), so the increase is the new value, as
    Prometheus' ``increase()`` treats counter resets."""
    if now is None or before is None:
        return None
    return now - before if now >= before else now


@dataclass(frozen=True)
class Thresholds:
    """Limits the checks compare against; each default names its source."""

    # DCGM health watch limits (NVIDIA/DCGM common/DcgmGPUHardwareLimits.h).
    max_retired_pages: int = 63  # DCGM_LIMIT_MAX_RETIRED_PAGES
    max_uncorrectable_remapped_rows: int = 512  # DCGM_LIMIT_MAX_ROW_REMAP_UNCORRECTABLE
    max_nvlink_crc_per_s: float = 100.0  # DCGM_LIMIT_MAX_NVLINK_CRC_ERROR
    # A NIC dropping over 0.1 % of its packets fails: a reliable RDMA connection resends
    # everything from the lost packet on (go-back-N; InfiniBand Architecture Specification
    # vol. 1, ch. 9, reliable service), so goodput falls much faster than the loss rate.  A
    # site default, not a published threshold.
    max_drop_ratio: float = 0.001
    # Site defaults, not published figures: change them per site.
    max_pause_ratio: float = 0.01  # pause frames per received packet before a warning
    temperature_margin_c: float = 5.0  # warn this close to the slowdown threshold
    power_cap_ratio: float = 0.95  # enforced limit below 95 % of the design TDP: capped
    power_over_limit_ratio: float = 1.05  # draw above the limit by more than 5 %
    min_memory_ratio: float = 0.9  # MemTotal below 90 % of installed: a DIMM is missing
    min_available_memory_ratio: float = 0.05
    # Baseline runs (no previous reading: the exporter's first run, a check without a state
    # file or with a new one) cannot see a rate, only totals since the counters were reset,
    # which may be months old.  They warn only on totals this large; site defaults.
    baseline_max_nic_errors: int = 1000  # any one InfiniBand error counter
    baseline_max_ecc_dbe_aggregate: int = 15  # as DCGM's DBE retired-page soft limit
    # Kernel-log XIDs count for 2 h, the default of Azure HPC health checks' check_gpu_xid.
    xid_window_s: float = 7200.0
