"""The NVML adapter: recorded replay, the never-hanging collector, and the pynvml mapping."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.errors import CheckError
from clusterforge.ops.nvml import GPU_FIELDS, RecordedNvml, collect_gpu_snapshot
from clusterforge.ops.nvml_pynvml import PynvmlApi


def test_recorded_overlay_applies_patches_and_removals(
    recorded: Callable[[str], RecordedNvml],
) -> None:
    snapshot = collect_gpu_snapshot(recorded("h100-missing-gpu.json"))
    assert snapshot.num_gpus_reported == 7 and len(snapshot.gpus) == 7
    snapshot = collect_gpu_snapshot(recorded("h100-ecc-dbe.json"))
    assert snapshot.gpus[2].ecc_dbe_volatile == 2 and snapshot.gpus[1].ecc_dbe_volatile == 0


def test_not_supported_becomes_none_not_an_error(recorded: Callable[[str], RecordedNvml]) -> None:
    gpu = collect_gpu_snapshot(recorded("h100-healthy.json")).gpus[0]
    assert gpu.retired_pages_pending is None  # "NOT_SUPPORTED" in the fixture
    assert gpu.errors == {}
    assert gpu.nvlink_active == (True,) * 18


def test_gpu_is_lost_is_an_error_on_that_gpu(recorded: Callable[[str], RecordedNvml]) -> None:
    snapshot = collect_gpu_snapshot(recorded("h100-xid79.json"))
    assert "GPU is lost" in snapshot.gpus[3].errors["power_w"]
    assert snapshot.gpus[3].power_w is None and snapshot.gpus[2].power_w is not None
    assert [(e.gpu_index, e.xid) for e in snapshot.xid_events] == [(3, 79)]


def test_init_failure_is_reported(recorded: Callable[[str], RecordedNvml]) -> None:
    snapshot = collect_gpu_snapshot(recorded("nvml-missing.json"))
    assert snapshot.error is not None and "not usable" in snapshot.error and snapshot.gpus == ()


def test_a_hung_call_returns_within_the_per_call_budget(
    recorded: Callable[[str], RecordedNvml],
) -> None:
    start = time.monotonic()
    snapshot = collect_gpu_snapshot(recorded("h100-hung.json"), budget_s=10.0, per_call_s=0.5)
    elapsed_s = time.monotonic() - start
    assert 0.5 <= elapsed_s < 2.0
    assert (
        snapshot.error is not None
        and "power_w of GPU 4" in snapshot.error
        and "hung" in snapshot.error
    )
    assert len(snapshot.gpus) == 5  # GPUs 0-3 complete, GPU 4 partial
    assert snapshot.gpus[4].temperature_c is not None and snapshot.gpus[4].power_w is None


def test_the_overall_budget_bounds_many_slow_calls() -> None:
    class Slow(RecordedNvml):
        def gpu_field(self, index: int, name: str) -> Any:
            time.sleep(0.01)
            return super().gpu_field(index, name)

    api = Slow(RecordedNvml.from_file(NVML_FIXTURES / "h100-healthy.json").data)
    snapshot = collect_gpu_snapshot(api, budget_s=0.3, per_call_s=5.0)
    assert snapshot.error is not None and "budget of 0.3 s" in snapshot.error


def test_missing_fixture_is_a_check_error(tmp_path: Any) -> None:
    with pytest.raises(CheckError, match="does not exist"):
        RecordedNvml.from_file(tmp_path / "nope.json")


# --- the real pynvml mapping, against a fake library built from the real binding's names ---


def _nvml_error(code: int) -> Exception:
    return pynvml.NVMLError(code)


def _fake_pynvml(overrides: dict[str, Callable[..., Any]]) -> SimpleNamespace:
    """A stand-in for the pynvml module: real constants and error classes, fake calls."""

    def not_supported(*args: Any) -> Any:
        raise _nvml_error(pynvml.NVML_ERROR_NOT_SUPPORTED)

    names = {
        n: getattr(pynvml, n)
        for n in dir(pynvml)
        if n.startswith(("NVML_", "nvmlEventType", "NVMLError"))
    }
    names.update(
        {
            n: not_supported
            for n in dir(pynvml)
            if n.startswith("nvml") and callable(getattr(pynvml, n))
        }
    )
    names.update(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "570.124.06",
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}",
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=b"00000000:18:00.0"),
        nvmlDeviceGetPowerUsage=lambda h: 123456,
        nvmlDeviceGetRemappedRows=lambda h: (0, 0, 0, 0),
    )
    names.update(overrides)
    names["NVMLError"] = pynvml.NVMLError
    names["c_nvmlGpuFabricInfo_t"] = pynvml.c_nvmlGpuFabricInfo_t
    return SimpleNamespace(**names)


def test_pynvml_adapter_maps_values_and_not_supported() -> None:
    api = PynvmlApi(_fake_pynvml({}))  # type: ignore[arg-type]
    snapshot = collect_gpu_snapshot(api)
    assert snapshot.error is None
    assert (snapshot.driver_version, snapshot.cuda_driver_version) == ("570.124.06", "12.8")
    gpu = snapshot.gpus[0]
    assert gpu.name == "NVIDIA H200" and gpu.pci_bus_id == "0000:18:00"
    assert gpu.power_w == pytest.approx(123.456)  # mW -> W
    assert gpu.remapped_rows_failure is False
    # everything the fake does not implement raised NOT_SUPPORTED: None, no error, no crash
    assert gpu.temperature_c is None and gpu.nvlink_active is None and gpu.recovery_action is None
    assert gpu.errors == {}


def test_pynvml_adapter_reports_gpu_lost_as_an_error() -> None:
    def lost(*args: Any) -> Any:
        raise _nvml_error(pynvml.NVML_ERROR_GPU_IS_LOST)

    api = PynvmlApi(_fake_pynvml({"nvmlDeviceGetPowerUsage": lost}))  # type: ignore[arg-type]
    gpu = collect_gpu_snapshot(api).gpus[0]
    assert "lost" in gpu.errors["power_w"].lower()


def test_pynvml_adapter_reads_nvlink_states_until_the_links_end() -> None:
    def state(handle: Any, link: int) -> int:
        if link >= 18:
            raise _nvml_error(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0 if link == 5 else pynvml.NVML_FEATURE_ENABLED

    api = PynvmlApi(_fake_pynvml({"nvmlDeviceGetNvLinkState": state}))  # type: ignore[arg-type]
    gpu = collect_gpu_snapshot(api).gpus[0]
    assert (
        gpu.nvlink_active is not None
        and len(gpu.nvlink_active) == 18
        and sum(gpu.nvlink_active) == 17
    )


def test_real_nvml_on_a_machine_without_a_driver_is_not_usable() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        snapshot = collect_gpu_snapshot(PynvmlApi())
        assert snapshot.error is not None and "not usable" in snapshot.error
        return
    pynvml.nvmlShutdown()
    pytest.skip("a real NVIDIA driver is present; covered by scripts/device_check.sh")


def test_every_reading_field_has_a_pynvml_getter() -> None:
    api = PynvmlApi(_fake_pynvml({}))  # type: ignore[arg-type]
    assert set(GPU_FIELDS) <= set(api._getters)


def test_snapshot_round_trips_through_the_fixture_format(
    recorded: Callable[[str], RecordedNvml],
) -> None:
    from clusterforge.ops.nvml import snapshot_to_fixture

    original = collect_gpu_snapshot(recorded("h100-ecc-dbe.json"))
    replayed = collect_gpu_snapshot(RecordedNvml(snapshot_to_fixture(original, "round trip")))
    assert replayed.gpus == original.gpus
    assert replayed.driver_version == original.driver_version


def test_an_unexpected_adapter_exception_is_reported_not_raised() -> None:
    class Buggy(RecordedNvml):
        def gpu_field(self, index: int, name: str) -> Any:
            if name == "fabric_state":
                raise AttributeError("binding has no c_nvmlGpuFabricInfo_t")
            return super().gpu_field(index, name)

    snapshot = collect_gpu_snapshot(
        Buggy(RecordedNvml.from_file(NVML_FIXTURES / "h100-healthy.json").data)
    )
    assert (
        len(snapshot.gpus) == 8 and snapshot.gpus[7].recovery_action == 0
    )  # later fields still read
    assert "unexpected AttributeError" in snapshot.gpus[0].errors["fabric_state"]
