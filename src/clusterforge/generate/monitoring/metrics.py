"""Metric names, scrape ports and the dcgm-exporter counters file.

dcgm-exporter reads a CSV of ``DCGM field, Prometheus type, help`` (dcgm-exporter README,
"Changing Metrics") and serves each listed field as a metric of the same name; a field that
is not listed is never served, so an alert or a ``diagnose`` query on it silently finds
nothing.  Its default file leaves out ECC, NVLink errors, violation times, the windowed XID
count, SM activity, NVLink bytes and the clock-event bitmask that the alert rules, the
dashboards and ``clusterforge diagnose`` read.  :data:`DCGM_COUNTERS` is the default active
set plus those, spelled as the go-dcgm field table that dcgm-exporter looks names up in: a
name missing from it stops the exporter ("could not find DCGM field").
"""

from __future__ import annotations

from clusterforge.design import Design
from clusterforge.errors import GenerateError

__all__ = [
    "CLUSTERFORGE_EXPORTER_PORT",
    "DCGM_COUNTERS",
    "DCGM_COUNTERS_FILE",
    "DCGM_EXPORTER_PORT",
    "EXPORTER_FOREIGN_PROCESS_METRIC",
    "EXPORTER_HEALTH_METRIC",
    "NODE_EXPORTER_PORT",
    "VIOLATION_NS_PER_S",
    "dcgm_counters_csv",
]

DCGM_EXPORTER_PORT = 9400  # dcgm-exporter's default `-a :9400`
NODE_EXPORTER_PORT = 9100
CLUSTERFORGE_EXPORTER_PORT = 9410  # `clusterforge exporter --port 9410`
DCGM_COUNTERS_FILE = "dcgm-counters.csv"
# 1 when the node passes every check of `clusterforge check`, 0 otherwise (the exporter's).
EXPORTER_HEALTH_METRIC = "clusterforge_node_healthy"
# Processes on a GPU outside any running job or pod, by kind ("outside_job", "miner").
EXPORTER_FOREIGN_PROCESS_METRIC = "clusterforge_gpu_foreign_processes"
# The DCGM_FI_DEV_*_VIOLATION counters add up nanoseconds of clocks held back (DCGM
# dcgm_fields.h, "Violation time in ns"; NVML nvmlViolationTime_t.violationTime, "in
# Nanoseconds"), so their rate divided by this is the share of time throttled (0 to 1).
VIOLATION_NS_PER_S = 1_000_000_000

# (field, type, help).  "default" = active in dcgm-exporter's etc/default-counters.csv at
# d5e5f51; "enabled" = commented out there and switched on here for a rule or a panel.
DCGM_COUNTERS: tuple[tuple[str, str, str], ...] = (
    # default
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Energy since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "NVLink bandwidth counter for all lanes."),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Rows remapped for uncorrectable errors.",
    ),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Rows remapped for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver version."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the memory interface is active."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "PCIe bytes transmitted per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "PCIe bytes received per second."),
    # enabled for the rules, the dashboards and `diagnose`
    # DCGM User Guide, "Profiling Metrics": SM active is the share of cycles an SM has at
    # least one warp assigned; NVLink bytes are a rate, like the PCIe bytes above.
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "Ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge", "NVLink bytes transmitted per second."),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", "gauge", "NVLink bytes received per second."),
    # dcgm_fields.h (DCGM 4.0+): field 112 is DCGM_FI_DEV_CLOCKS_EVENT_REASONS, a bitmask of
    # DCGM_CLOCKS_EVENT_REASON_*; DCGM_FI_DEV_CLOCK_THROTTLE_REASONS is its deprecated alias,
    # missing from go-dcgm's name table in dcgm-exporter releases 4.4.2-4.7.1 to 4.5.2-4.8.1,
    # so the old name would stop those exporters.  The new name resolves in every 4.x release.
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask)."),
    # dcgm_fields.h since DCGM 4.1: violation times count nanoseconds (NVML's
    # nvmlViolationTime_t.violationTime), as dcgm-exporter's own file says since 4.4.2.
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling due to power constraints (in ns)."),
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling due to thermal constraints (in ns)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Volatile single-bit ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Volatile double-bit ECC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "NVLink replay errors."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "NVLink recovery errors."),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe current link generation."),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe current link width."),
    ("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "gauge", "PCIe maximum link generation."),
    ("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "gauge", "PCIe maximum link width."),
    ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "XID errors within the window (label xid)."),
)

_TYPES = {"gauge", "counter", "label"}


def dcgm_counters_csv(design: Design) -> str:
    """The counters file: one ``field, type, help`` line each (exactly two commas)."""
    lines = [
        f"# dcgm-exporter counters for cluster {design.spec.name}, written by `clusterforge generate`.",
        "# Format: DCGM field, Prometheus type, help message.",
    ]
    for field, kind, help_text in DCGM_COUNTERS:
        if kind not in _TYPES or "," in help_text:
            raise GenerateError(f"bad counter line for {field}")  # an internal data error
        lines.append(f"{field}, {kind}, {help_text}")
    return "\n".join(lines) + "\n"
