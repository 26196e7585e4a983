"""The real NVML behind :class:`~clusterforge.ops.nvml.NvmlApi`, through ``pynvml``.

``pynvml`` is the module of the PyPI package ``nvidia-ml-py`` (the package named ``pynvml``
is deprecated: its README points to nvidia-ml-py) and is imported lazily, with an install
hint.  Function and constant names below are those of nvidia-ml-py 13.615.71 (its
``pynvml.py``, which follows the NVML API reference).  Every
NVML error code that means "this GPU or driver does not have it" becomes
:class:`NvmlNotSupported`; "GPU is lost" and the rest become :class:`NvmlCallError`.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from clusterforge.errors import AdapterError
from clusterforge.ops.nvml import NvmlCallError, NvmlNotSupported
from clusterforge.ops.readings import GpuProcess, XidEvent, normalize_pci_bus_id

__all__ = ["PynvmlApi", "import_pynvml"]

# NVML return codes that mean "absent here" rather than "broken" (pynvml.py constants):
# NOT_SUPPORTED 3, INVALID_ARGUMENT 2 (e.g. an NVLink index past the GPU's links),
# FUNCTION_NOT_FOUND 13 (a driver older than the binding), NOT_FOUND 6.
_ABSENT_CODES = {2, 3, 6, 13}


def import_pynvml() -> ModuleType:
    """Import pynvml or raise an AdapterError that says how to install it."""
    try:
        import pynvml
    except ImportError:
        raise AdapterError(
            "the NVML checks need the 'nvidia-ml-py' package; "
            "install it with: pip install 'clusterforge[nvml]'"
        ) from None
    module: ModuleType = pynvml
    return module


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class PynvmlApi:
    """NvmlApi over the real library."""

    def __init__(self, pynvml: ModuleType | None = None) -> None:
        self.nv = pynvml or import_pynvml()
        self._handles: dict[int, Any] = {}
        self._getters: dict[str, Callable[[Any], Any]] = self._build_getters()

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in _ABSENT_CODES:
                raise NvmlNotSupported(str(exc)) from None
            raise NvmlCallError(f"{getattr(fn, '__name__', 'NVML')}: {exc}") from None
        except AttributeError as exc:  # a binding older than the function
            raise NvmlNotSupported(str(exc)) from None

    def init(self) -> None:
        self._call(self.nv.nvmlInit)

    def shutdown(self) -> None:
        with contextlib.suppress(self.nv.NVMLError):
            self.nv.nvmlShutdown()

    def driver_version(self) -> str:
        return _text(self._call(self.nv.nvmlSystemGetDriverVersion))

    def cuda_driver_version(self) -> str:
        version = int(self._call(self.nv.nvmlSystemGetCudaDriverVersion))
        return f"{version // 1000}.{(version % 1000) // 10}"  # 12040 -> "12.4" (NVML docs)

    def device_count(self) -> int:
        return int(self._call(self.nv.nvmlDeviceGetCount))

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = self._call(self.nv.nvmlDeviceGetHandleByIndex, index)
        return self._handles[index]

    def gpu_field(self, index: int, name: str) -> Any:
        getter = self._getters.get(name)
        if getter is None:
            raise NvmlNotSupported(f"no reader for {name}")
        return getter(self._handle(index))

    # --- one getter per GpuReading field --------------------------------------------------

    def _build_getters(self) -> dict[str, Callable[[Any], Any]]:
        """One getter per :class:`~clusterforge.ops.readings.GpuReading` field, from a handle, grouped by what it reads."""
        return {
            **self._identity_getters(),
            **self._memory_error_getters(),
            **self._thermal_power_pcie_getters(),
            **self._nvlink_fabric_getters(),
            "recovery_action": self._recovery_action,
            "processes": self._processes,
        }

    def _identity_getters(self) -> dict[str, Callable[[Any], Any]]:
        """Which GPU: its name, UUID, PCI address and NUMA node."""
        nv, c = self.nv, self._call
        return {
            "name": lambda h: _text(c(nv.nvmlDeviceGetName, h)),
            "uuid": lambda h: _text(c(nv.nvmlDeviceGetUUID, h)),
            "pci_bus_id": lambda h: normalize_pci_bus_id(c(nv.nvmlDeviceGetPciInfo, h).busId),
            "numa_node": self._numa_node,
        }

    def _memory_error_getters(self) -> dict[str, Callable[[Any], Any]]:
        """HBM errors and what the GPU did about them: ECC counts, retired pages (before
        Ampere) and remapped rows (Ampere and later)."""
        nv, c = self.nv, self._call
        unc, cor = nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED
        vol, agg = nv.NVML_VOLATILE_ECC, nv.NVML_AGGREGATE_ECC
        return {
            "ecc_dbe_volatile": lambda h: int(c(nv.nvmlDeviceGetTotalEccErrors, h, unc, vol)),
            "ecc_dbe_aggregate": lambda h: int(c(nv.nvmlDeviceGetTotalEccErrors, h, unc, agg)),
            "ecc_sbe_volatile": lambda h: int(c(nv.nvmlDeviceGetTotalEccErrors, h, cor, vol)),
            "retired_pages_sbe": lambda h: len(
                c(
                    nv.nvmlDeviceGetRetiredPages,
                    h,
                    nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                )
            ),
            "retired_pages_dbe": lambda h: len(
                c(
                    nv.nvmlDeviceGetRetiredPages,
                    h,
                    nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                )
            ),
            "retired_pages_pending": lambda h: (
                c(nv.nvmlDeviceGetRetiredPagesPendingStatus, h) == nv.NVML_FEATURE_ENABLED
            ),
            # nvmlDeviceGetRemappedRows -> (corrected, uncorrected, isPending, failureOccurred)
            "remapped_rows_correctable": lambda h: int(c(nv.nvmlDeviceGetRemappedRows, h)[0]),
            "remapped_rows_uncorrectable": lambda h: int(c(nv.nvmlDeviceGetRemappedRows, h)[1]),
            "remapped_rows_pending": lambda h: bool(c(nv.nvmlDeviceGetRemappedRows, h)[2]),
            "remapped_rows_failure": lambda h: bool(c(nv.nvmlDeviceGetRemappedRows, h)[3]),
        }

    def _thermal_power_pcie_getters(self) -> dict[str, Callable[[Any], Any]]:
        """Temperature and its slowdown threshold, clock throttling, power and the PCIe link."""
        nv, c = self.nv, self._call
        return {
            "temperature_c": lambda h: float(
                c(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
            ),
            "temperature_slowdown_c": lambda h: float(
                c(nv.nvmlDeviceGetTemperatureThreshold, h, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
            ),
            "clock_event_reasons": self._clock_event_reasons,
            "power_w": lambda h: c(nv.nvmlDeviceGetPowerUsage, h) / 1000.0,  # mW -> W
            "power_limit_w": lambda h: c(nv.nvmlDeviceGetEnforcedPowerLimit, h) / 1000.0,
            "pcie_gen": lambda h: int(c(nv.nvmlDeviceGetCurrPcieLinkGeneration, h)),
            "pcie_gen_max": lambda h: int(c(nv.nvmlDeviceGetMaxPcieLinkGeneration, h)),
            "pcie_width": lambda h: int(c(nv.nvmlDeviceGetCurrPcieLinkWidth, h)),
            "pcie_width_max": lambda h: int(c(nv.nvmlDeviceGetMaxPcieLinkWidth, h)),
        }

    def _nvlink_fabric_getters(self) -> dict[str, Callable[[Any], Any]]:
        """NVLink links up and their error counters, and the GPU's NVLink fabric state."""
        nv = self.nv
        return {
            "nvlink_active": self._nvlink_active,
            "nvlink_replay_errors": lambda h: self._nvlink_errors(
                h, nv.NVML_NVLINK_ERROR_DL_REPLAY
            ),
            "nvlink_recovery_errors": lambda h: self._nvlink_errors(
                h, nv.NVML_NVLINK_ERROR_DL_RECOVERY
            ),
            "nvlink_crc_errors": lambda h: self._nvlink_errors(h, nv.NVML_NVLINK_ERROR_DL_CRC_FLIT),
            "fabric_state": lambda h: self._fabric_info(h)[0],
            "fabric_status": lambda h: self._fabric_info(h)[1],
        }

    def _numa_node(self, handle: Any) -> int:
        """NVML's NUMA node (newer drivers), else the PCI device's numa_node in sysfs."""
        try:
            return int(self._call(self.nv.nvmlDeviceGetNumaNodeId, handle))
        except NvmlNotSupported:
            bus_id = normalize_pci_bus_id(self._call(self.nv.nvmlDeviceGetPciInfo, handle).busId)
            path = Path(f"/sys/bus/pci/devices/{bus_id}.0/numa_node")
            try:
                return int(path.read_text().strip())
            except (OSError, ValueError):
                raise NvmlNotSupported(f"no NUMA node for {bus_id}") from None

    def _clock_event_reasons(self, handle: Any) -> int:
        fn = getattr(self.nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if fn is None:  # bindings before the rename
            fn = self.nv.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(self._call(fn, handle))

    def _links(self, handle: Any) -> list[tuple[int, bool]]:
        """(link, active) for every link index the GPU answers for."""
        links = []
        for link in range(int(getattr(self.nv, "NVML_NVLINK_MAX_LINKS", 18))):
            try:
                state = self._call(self.nv.nvmlDeviceGetNvLinkState, handle, link)
            except NvmlNotSupported:
                continue
            links.append((link, state == self.nv.NVML_FEATURE_ENABLED))
        return links

    def _nvlink_active(self, handle: Any) -> list[bool]:
        links = self._links(handle)
        if not links:
            raise NvmlNotSupported("no NVLink on this GPU")
        return [active for _, active in links]

    def _nvlink_errors(self, handle: Any, counter: int) -> int:
        values = []
        for link, active in self._links(handle):
            if not active:
                continue
            try:
                values.append(
                    int(self._call(self.nv.nvmlDeviceGetNvLinkErrorCounter, handle, link, counter))
                )
            except NvmlNotSupported:
                continue
        if not values:
            raise NvmlNotSupported("NVLink error counters not available")
        return sum(values)

    def _fabric_info(self, handle: Any) -> tuple[int, int]:
        struct = getattr(self.nv, "c_nvmlGpuFabricInfo_t", None)
        if struct is None:
            raise NvmlNotSupported("binding has no GPU fabric info")
        info = struct()
        self._call(self.nv.nvmlDeviceGetGpuFabricInfo, handle, ctypes.byref(info))
        return int(info.state), int(info.status)

    def _recovery_action(self, handle: Any) -> int:
        field_id = getattr(self.nv, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", None)
        if field_id is None:
            raise NvmlNotSupported("binding has no NVML_FI_DEV_GET_GPU_RECOVERY_ACTION")
        value = self._call(self.nv.nvmlDeviceGetFieldValues, handle, [field_id])[0]
        if value.nvmlReturn != 0:
            raise NvmlNotSupported(f"recovery action field returned {value.nvmlReturn}")
        return int(value.value.uiVal)

    def _processes(self, handle: Any) -> list[GpuProcess]:
        """Every process with a context on the GPU: nvmlDeviceGetComputeRunningProcesses and
        nvmlDeviceGetGraphicsRunningProcesses (NVML API reference, "Device Queries"), one entry
        per PID.  pynvml gives ``usedGpuMemory`` in bytes, or None where NVML answers
        NVML_VALUE_NOT_AVAILABLE.  A GPU without graphics support answers NOT_SUPPORTED for
        the graphics list; that leaves the compute list."""
        by_pid: dict[int, GpuProcess] = {}
        for name in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            try:
                infos = self._call(getattr(self.nv, name), handle)
            except NvmlNotSupported:
                if name == "nvmlDeviceGetComputeRunningProcesses":
                    raise
                continue
            for info in infos:
                used = getattr(info, "usedGpuMemory", None)
                mib = None if used is None else int(used) / (1024 * 1024)
                by_pid.setdefault(int(info.pid), GpuProcess(pid=int(info.pid), used_memory_mib=mib))
        return list(by_pid.values())

    # --- XID events -----------------------------------------------------------------------

    def xid_events(self, listen_s: float) -> list[XidEvent]:
        """XIDs that arrive while we listen (earlier ones are only in the kernel log)."""
        nv = self.nv
        event_set = self._call(nv.nvmlEventSetCreate)
        uuids: dict[str, int] = {}
        try:
            for index in range(self.device_count()):
                handle = self._handle(index)
                uuids[_text(self._call(nv.nvmlDeviceGetUUID, handle))] = index
                try:
                    self._call(
                        nv.nvmlDeviceRegisterEvents,
                        handle,
                        nv.nvmlEventTypeXidCriticalError,
                        event_set,
                    )
                except NvmlNotSupported:
                    continue
            return self._wait_events(event_set, uuids, listen_s)
        finally:
            self._call(nv.nvmlEventSetFree, event_set)

    def _wait_events(
        self, event_set: Any, uuids: dict[str, int], listen_s: float
    ) -> list[XidEvent]:
        events: list[XidEvent] = []
        deadline = time.monotonic() + listen_s
        while (left_s := deadline - time.monotonic()) > 0:
            try:
                data = self.nv.nvmlEventSetWait_v2(event_set, max(1, int(left_s * 1000)))
            except self.nv.NVMLError:  # NVML_ERROR_TIMEOUT: nothing arrived
                break
            uuid = _text(self._call(self.nv.nvmlDeviceGetUUID, data.device))
            events.append(
                XidEvent(xid=int(data.eventData), gpu_index=uuids.get(uuid), source="nvml")
            )
        return events
