"""GPU clocks, temperature, power, PCIe, NVLink and fabric-manager checks.

Clock-event bits are NVML's ``nvmlClocksEventReason*`` (NVML API reference, "Clocks Event
Reasons"); NVLink and PCIe limits follow DCGM's health watches (``DcgmHealthWatch.cpp``).
"""

from __future__ import annotations

from clusterforge.ops.checks.base import (
    CheckResult,
    Status,
    Thresholds,
    counter_increase,
    result,
)
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import GpuReading

__all__ = [
    "check_clocks",
    "check_fabric",
    "check_nvlink",
    "check_pcie",
    "check_power",
    "check_thermal",
]

# nvmlClocksEventReason* bits (NVML API reference; the same values in nvidia-ml-py's pynvml.py).
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80

# nvmlGpuFabricState_t (pynvml.py): 0 not supported, 1 not started, 2 in progress, 3 completed.
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


def check_thermal(gpus: tuple[GpuReading, ...], limits: Thresholds) -> list[CheckResult]:
    """Temperature against the GPU's own slowdown threshold, and thermal clock events."""
    out = []
    for gpu in gpus:
        temp, slow, reasons = gpu.temperature_c, gpu.temperature_slowdown_c, gpu.clock_event_reasons
        status: Status = "unknown" if temp is None and reasons is None else "pass"
        if reasons is not None and reasons & SW_THERMAL:
            status = "warn"
        if temp is not None and slow is not None and temp >= slow - limits.temperature_margin_c:
            status = "warn"
        if (reasons is not None and reasons & HW_THERMAL) or (
            temp is not None and slow is not None and temp >= slow
        ):
            status = "fail"
        bits = [
            n
            for b, n in ((SW_THERMAL, "SW thermal"), (HW_THERMAL, "HW thermal"))
            if (reasons or 0) & b
        ]
        observed = f"{temp} C" + (f", {' + '.join(bits)} slowdown" if bits else "")
        expected = (
            f"< {slow - limits.temperature_margin_c:g} C, no thermal slowdown"
            if slow
            else "no thermal slowdown"
        )
        out.append(
            result(
                "gpu.thermal",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=observed,
                expected=expected,
                remedy="check airflow / coolant flow and inlet temperature; a single hot GPU "
                "points at its heatsink or cold plate",
                gpu=gpu.index,
            )
        )
    return out


def check_clocks(gpus: tuple[GpuReading, ...]) -> list[CheckResult]:
    """HW slowdown and HW power brake cut clocks for the whole job (IBM Autopilot gpupower)."""
    out = []
    for gpu in gpus:
        reasons = gpu.clock_event_reasons
        bad = [
            n
            for b, n in ((HW_SLOWDOWN, "HW slowdown"), (HW_POWER_BRAKE, "HW power brake"))
            if (reasons or 0) & b
        ]
        status: Status = "unknown" if reasons is None else "fail" if bad else "pass"
        observed = (
            "not reported" if reasons is None else (" + ".join(bad) or f"reasons 0x{reasons:x}")
        )
        out.append(
            result(
                "gpu.clocks",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=observed,
                expected="no HW slowdown or power brake",
                remedy="power brake is asserted by the board: "
                "check PSUs and the power shelf; HW slowdown: check `nvidia-smi -q -d "
                "PERFORMANCE`",
                gpu=gpu.index,
            )
        )
    return out


def _designed_limit_w(expect: NodeExpectation) -> float | None:
    return expect.gpu_power_limit_w or expect.gpu_tdp_w


def check_power(
    gpus: tuple[GpuReading, ...], expect: NodeExpectation, limits: Thresholds
) -> list[CheckResult]:
    """Enforced power limit against the design (its cap, else the TDP), and draw vs the limit.

    Warnings only: a lower limit costs throughput, it does not break jobs.
    """
    designed_w = _designed_limit_w(expect)
    out = []
    for gpu in gpus:
        draw, limit = gpu.power_w, gpu.power_limit_w
        status: Status = "unknown" if limit is None else "pass"
        notes = []
        if limit is not None and designed_w and limit < designed_w * limits.power_cap_ratio:
            status, notes = "warn", [f"capped at {limit:g} W"]
        if (
            limit is not None
            and expect.gpu_power_limit_w
            and limit > expect.gpu_power_limit_w / limits.power_cap_ratio
        ):
            status, notes = "warn", [f"limit {limit:g} W above the designed cap"]
        if draw is not None and limit is not None and draw > limit * limits.power_over_limit_ratio:
            status, notes = "warn", [*notes, f"drawing {draw:g} W over the {limit:g} W limit"]
        observed = "; ".join(notes) or f"{draw} W of {limit} W"
        expected = f"limit ~ {designed_w:g} W" if designed_w else "draw <= limit"
        out.append(
            result("gpu.power", status, severity="warning", subject=f"gpu{gpu.index}", observed=observed, expected=expected,
                   remedy="set the designed limit with `nvidia-smi -pl` (the design caps GPUs only to fit "
                   "the rack power budget)", gpu=gpu.index)
        )  # fmt: skip
    return out


def check_pcie(gpus: tuple[GpuReading, ...]) -> list[CheckResult]:
    """Link width below the maximum fails; generation below it warns.

    Idle GPUs lower their PCIe generation to save power ("may be reduced when the GPU is not
    in use", nvidia-smi(1) [unverified wording, from memory]), so a low generation alone is
    only a warning; confirm under load with ``dcgmi diag -r 2`` (its pcie plugin checks the
    minimum generation and width per SKU: DCGM diagnostics documentation, "pcie" plugin).
    """
    out = []
    for gpu in gpus:
        gen, gen_max, width, width_max = (
            gpu.pcie_gen,
            gpu.pcie_gen_max,
            gpu.pcie_width,
            gpu.pcie_width_max,
        )
        status: Status = "unknown" if width is None or width_max is None else "pass"
        if gen is not None and gen_max is not None and gen < gen_max:
            status = "warn"
        if width is not None and width_max is not None and width < width_max:
            status = "fail"
        out.append(
            result(
                "gpu.pcie",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=f"Gen{gen} x{width}",
                expected=f"Gen{gen_max} x{width_max}",
                remedy="a narrow link: reseat the GPU/riser, check "
                "`dmesg | grep 'limited by'`; a low Gen at idle is normal, re-check under load",
                gpu=gpu.index,
            )
        )
    return out


def check_nvlink(
    gpus: tuple[GpuReading, ...],
    expect: NodeExpectation,
    limits: Thresholds,
    previous: dict[int, GpuReading],
    elapsed_s: float | None,
) -> list[CheckResult]:
    """Every NVLink up; CRC errors rising faster than DCGM's 100/s limit fail, replays warn."""
    out = []
    for gpu in gpus:
        links = gpu.nvlink_active
        if links is None:
            out.append(
                result(
                    "gpu.nvlink",
                    "unknown",
                    severity="critical",
                    subject=f"gpu{gpu.index}",
                    observed="not reported",
                    expected="all NVLinks up",
                    gpu=gpu.index,
                )
            )
            continue
        wanted = expect.num_nvlinks_per_gpu or len(links)
        down = (len(links) - sum(links)) + max(0, wanted - len(links))
        status: Status = "fail" if down else "pass"
        observed = f"{sum(links)}/{wanted} links up"
        before = previous.get(gpu.index)
        if before is not None and elapsed_s and status == "pass":
            status, observed = _nvlink_rates(gpu, before, elapsed_s, limits, observed)
        out.append(
            result(
                "gpu.nvlink",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=observed,
                expected=f"{wanted}/{wanted} links up, errors not rising",
                remedy="NVLink down: reset the "
                "GPU, then check the NVSwitch tray and fabric manager log; RMA if it stays down",
                gpu=gpu.index,
            )
        )
    return out


def _nvlink_rates(
    gpu: GpuReading, before: GpuReading, elapsed_s: float, limits: Thresholds, observed: str
) -> tuple[Status, str]:
    crc = _delta(gpu.nvlink_crc_errors, before.nvlink_crc_errors)
    replays = _delta(gpu.nvlink_replay_errors, before.nvlink_replay_errors)
    recoveries = _delta(gpu.nvlink_recovery_errors, before.nvlink_recovery_errors)
    if crc is not None and crc / elapsed_s > limits.max_nvlink_crc_per_s:
        return "fail", f"{observed}; CRC errors +{crc / elapsed_s:.0f}/s"
    if (replays or 0) > 0 or (recoveries or 0) > 0:
        return "warn", f"{observed}; replays +{replays}, recoveries +{recoveries}"
    return "pass", observed


def _delta(now: int | None, before: int | None) -> int | None:
    return counter_increase(now, before)


def check_fabric(gpus: tuple[GpuReading, ...], expect: NodeExpectation) -> list[CheckResult]:
    """On NVSwitch systems the fabric manager must have finished training the fabric."""
    out = []
    for gpu in gpus:
        state = gpu.fabric_state
        if not expect.nvswitch and state in (None, 0):
            continue
        if state in (None, 0):
            status: Status = "unknown"
        elif state == 3 and not gpu.fabric_status:
            status = "pass"
        else:
            status = "fail"
        name = "not reported" if state is None else FABRIC_STATES.get(state, f"state {state}")
        out.append(
            result(
                "gpu.fabric",
                status,
                severity="critical",
                subject=f"gpu{gpu.index}",
                observed=f"fabric {name}, status {gpu.fabric_status}",
                expected="fabric completed, status 0",
                remedy="start nvidia-fabricmanager (`systemctl status nvidia-fabricmanager`) and "
                "check its log; its version must match the driver",
                gpu=gpu.index,
            )
        )
    return out
