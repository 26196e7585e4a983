"""Replayed NVML readings for the emulated nodes: what each node's health check and exporter see.

The emulated nodes have no GPUs, so ``clusterforge check --nvml-fixture`` replays readings in
:class:`clusterforge.ops.nvml.RecordedNvml`'s format.  The healthy readings are built from the
design's own expectation of a node (GPU count, NVML name, power limit, NVLink count), so a
healthy node passes every GPU check by construction of the design, not of a hand-made file.

XID 79 ("GPU has fallen off the bus") is injected as NVML reports it on real hardware: an
XID event from ``nvmlEventSetWait`` and ``NVML_ERROR_GPU_IS_LOST`` from the lost GPU's queries
(NVIDIA XID catalog, "XID 79"; NVML API reference, ``nvmlReturn_t``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterforge.design import Design
from clusterforge.ops.expect import expectation_from_design

__all__ = ["healthy_readings", "write_readings", "xid_readings"]

# Fields NVML reports as lost once a GPU fell off the bus (queries that touch the device).
_LOST_FIELDS = (
    "temperature_c",
    "power_w",
    "power_limit_w",
    "clock_event_reasons",
    "ecc_dbe_volatile",
    "nvlink_active",
)
_IDLE_POWER_FRACTION = 0.1  # an idle SXM board draws ~10 % of its limit (71.5 W of 700 W)
_IDLE_TEMPERATURE_C = 35.0
_SLOWDOWN_TEMPERATURE_C = 87.0
_FABRIC_COMPLETED = 3  # nvmlGpuFabricState_t NVML_GPU_FABRIC_STATE_COMPLETED
_CLOCKS_IDLE = 1  # nvmlClocksEventReasonGpuIdle


def _gpu(design: Design, index: int) -> dict[str, Any]:
    expect = expectation_from_design(design)
    assert expect.num_gpus and expect.gpu_nvml_names and expect.gpu_tdp_w
    limit_w = expect.gpu_power_limit_w or expect.gpu_tdp_w
    half = max(1, expect.num_gpus // 2)
    return {
        "name": expect.gpu_nvml_names[0],
        "uuid": f"GPU-cf{index:06x}-0000-0000-0000-000000000000",
        "pci_bus_id": f"0000:{0x18 + 0x10 * index:02x}:00",
        "numa_node": index // half,
        **dict.fromkeys(("ecc_dbe_volatile", "ecc_dbe_aggregate", "ecc_sbe_volatile"), 0),
        **dict.fromkeys(("remapped_rows_correctable", "remapped_rows_uncorrectable"), 0),
        "remapped_rows_pending": False,
        "remapped_rows_failure": False,
        "temperature_c": _IDLE_TEMPERATURE_C,
        "temperature_slowdown_c": _SLOWDOWN_TEMPERATURE_C,
        "clock_event_reasons": _CLOCKS_IDLE,
        "power_w": round(limit_w * _IDLE_POWER_FRACTION, 1),
        "power_limit_w": float(limit_w),
        **{"pcie_gen": 5, "pcie_gen_max": 5, "pcie_width": 16, "pcie_width_max": 16},
        "nvlink_active": [True] * (expect.num_nvlinks_per_gpu or 0),
        **dict.fromkeys(("nvlink_replay_errors", "nvlink_recovery_errors"), 0),
        "nvlink_crc_errors": 0,
        "fabric_state": _FABRIC_COMPLETED,
        "fabric_status": 0,
        "recovery_action": 0,
    }


def healthy_readings(design: Design) -> dict[str, Any]:
    """One idle, healthy node of ``design`` in RecordedNvml's format."""
    return {
        "description": f"healthy {design.compute.gpu.id} node (rehearsal)",
        "driver_version": "550.90.07",
        "cuda_driver_version": "12.4",
        "gpus": [_gpu(design, i) for i in range(design.compute.gpus_per_node)],
        "xid_events": [],
    }


def xid_readings(design: Design, *, gpu_index: int, xid: int = 79) -> dict[str, Any]:
    """The healthy node after ``xid`` on GPU ``gpu_index``: the event, and the GPU lost."""
    data = healthy_readings(design)
    data["description"] = f"XID {xid} on GPU {gpu_index} (rehearsal)"
    data["gpus"][gpu_index].update(dict.fromkeys(_LOST_FIELDS, "GPU_IS_LOST"))
    data["xid_events"] = [{"gpu_index": gpu_index, "xid": xid}]
    return data


def write_readings(path: Path, data: dict[str, Any]) -> None:
    """Replace the file atomically: a check reading it mid-write must see old or new."""
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(data, indent=1) + "\n")
    staging.replace(path)
