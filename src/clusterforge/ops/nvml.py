"""The NVML adapter: a small interface, a watchdog that never hangs, and a recorded replay.

:class:`NvmlApi` is the interface the checks need from NVML: a handful of node values and one
value per (GPU, field).  Two implementations exist: :class:`RecordedNvml` replays a JSON
fixture (tests, demos), and ``clusterforge.ops.nvml_pynvml.PynvmlApi`` calls the real library.

:func:`collect_gpu_snapshot` reads every field of every GPU in a worker thread.  Each call has
a budget (``per_call_s``) and the whole collection has one too (``budget_s``); a call that
does not return in time is reported as hung and the readings taken so far are kept.  The
worker is a daemon thread: a hung NVML call (a GPU that fell off the bus can block the driver)
cannot keep the process alive, and Slurm's kill of a HealthCheckProgram that runs over 60 s
(slurm.conf(5), HealthCheckProgram) is never reached.  "Not supported" becomes ``None``, never an exception:
a field an older GPU or driver lacks (NVML_ERROR_NOT_SUPPORTED, NVML API reference "Error
Codes") says nothing about the node's health.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from clusterforge.errors import CheckError
from clusterforge.ops.readings import GpuProcess, GpuReading, GpuSnapshot, XidEvent, to_jsonable
from clusterforge.userfiles import read_capped

__all__ = [
    "GPU_FIELDS",
    "NvmlApi",
    "NvmlCallError",
    "NvmlNotSupported",
    "RecordedNvml",
    "collect_gpu_snapshot",
    "load_fixture",
    "snapshot_to_fixture",
]

# Every GpuReading field the adapter is asked for, in reading order.
GPU_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(GpuReading) if f.name not in ("index", "errors")
)


class NvmlNotSupported(Exception):
    """The GPU or driver does not provide this value (NVML_ERROR_NOT_SUPPORTED and kin)."""


class NvmlCallError(Exception):
    """An NVML call failed (e.g. NVML_ERROR_GPU_IS_LOST); the message says how."""


class NvmlApi(Protocol):
    """What the checks need from NVML.  Methods raise the two exceptions above."""

    def init(self) -> None: ...
    def shutdown(self) -> None: ...
    def driver_version(self) -> str: ...
    def cuda_driver_version(self) -> str: ...
    def device_count(self) -> int: ...
    def gpu_field(self, index: int, name: str) -> Any: ...
    def xid_events(self, listen_s: float) -> list[XidEvent]: ...


@dataclass
class _Progress:
    """Shared between the worker and the watchdog; guarded by ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    call: str | None = None
    call_started_s: float = 0.0
    node: dict[str, Any] = field(default_factory=dict)
    gpus: dict[int, dict[str, Any]] = field(default_factory=dict)
    gpu_errors: dict[int, dict[str, str]] = field(default_factory=dict)
    xids: list[XidEvent] = field(default_factory=list)
    error: str | None = None

    def start(self, call: str) -> None:
        with self.lock:
            self.call, self.call_started_s = call, time.monotonic()

    def done(self) -> None:
        with self.lock:
            self.call = None

    def put(self, index: int, name: str, value: Any, error: str | None) -> None:
        with self.lock:
            self.call = None
            self.gpus.setdefault(index, {})[name] = value
            if error is not None:
                self.gpu_errors.setdefault(index, {})[name] = error


def _node_value(api: NvmlApi, progress: _Progress, key: str, call: str) -> None:
    progress.start(call)
    try:
        value = getattr(api, key)()
    except NvmlNotSupported:
        value = None
    except Exception as exc:  # NvmlCallError, or an adapter bug: reported, not raised
        value = None
        progress.error = progress.error or f"NVML {call} failed: {exc}"
    with progress.lock:
        progress.call = None
        progress.node[key] = value


def _gpu_values(api: NvmlApi, progress: _Progress, index: int) -> None:
    for name in GPU_FIELDS:
        progress.start(f"{name} of GPU {index}")
        value, error = None, None
        try:
            value = api.gpu_field(index, name)
        except NvmlNotSupported:
            pass
        except NvmlCallError as exc:
            error = str(exc)
        except Exception as exc:  # an adapter bug must not stop the other readings
            error = f"unexpected {type(exc).__name__}: {exc}"
        progress.put(index, name, value, error)


def _worker(api: NvmlApi, progress: _Progress, listen_s: float) -> None:
    try:
        progress.start("nvmlInit")
        api.init()
        progress.done()
    except Exception as exc:  # library missing, driver not loaded, or an adapter bug
        progress.error = f"NVML is not usable on this node: {exc}"
        progress.done()
        return
    try:
        _node_value(api, progress, "driver_version", "driver version")
        _node_value(api, progress, "cuda_driver_version", "CUDA driver version")
        _node_value(api, progress, "device_count", "device count")
        for index in range(progress.node.get("device_count") or 0):
            _gpu_values(api, progress, index)
        progress.start("XID event wait")
        with contextlib.suppress(Exception):  # events are a bonus; the kernel log has XIDs too
            progress.xids.extend(api.xid_events(listen_s))
        progress.done()
    finally:
        api.shutdown()


def _watch(
    thread: threading.Thread, progress: _Progress, per_call_s: float, budget_s: float
) -> str | None:
    """Wait for the worker; return why we stopped waiting, or None when it finished."""
    deadline = time.monotonic() + budget_s
    while thread.is_alive():
        thread.join(timeout=0.02)
        now = time.monotonic()
        with progress.lock:
            call, started = progress.call, progress.call_started_s
        if call is not None and now - started > per_call_s:
            return f"NVML call '{call}' did not return within {per_call_s:g} s (hung)"
        if now > deadline:
            return f"NVML readings did not finish within the budget of {budget_s:g} s"
    return None


def _snapshot(progress: _Progress, error: str | None) -> GpuSnapshot:
    with progress.lock:
        gpus = tuple(
            GpuReading(
                index=i,
                errors=dict(progress.gpu_errors.get(i, {})),
                **{k: _freeze(v) for k, v in dict(values).items()},
            )
            for i, values in sorted(dict(progress.gpus).items())
        )
        node = dict(progress.node)
        xids = tuple(progress.xids)
    return GpuSnapshot(
        driver_version=node.get("driver_version"),
        cuda_driver_version=node.get("cuda_driver_version"),
        num_gpus_reported=node.get("device_count"),
        gpus=gpus,
        xid_events=xids,
        error=error or progress.error,
    )


def _freeze(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def collect_gpu_snapshot(
    api: NvmlApi, budget_s: float = 30.0, per_call_s: float = 5.0, listen_s: float = 0.2
) -> GpuSnapshot:
    """Read every GPU through ``api``; a hung call or an exhausted budget is reported, not waited on."""
    progress = _Progress()
    thread = threading.Thread(
        target=_worker, args=(api, progress, listen_s), name="clusterforge-nvml", daemon=True
    )
    thread.start()
    return _snapshot(progress, _watch(thread, progress, per_call_s, budget_s))


# --- recorded readings ------------------------------------------------------------------

NOT_SUPPORTED = "NOT_SUPPORTED"
GPU_IS_LOST = "GPU_IS_LOST"
HANG = "HANG"


_MAX_FIXTURE_DEPTH = 8  # fixtures built on fixtures ("base"), to stop a file naming itself
MAX_FIXTURE_BYTES = 16 * 1024 * 1024  # a recorded node of 8 GPUs is a few KiB


def _read_fixture(path: Path) -> dict[str, Any]:
    """One fixture file as a JSON object; every way it can be unreadable is a CheckError."""
    name = repr(str(path))
    try:
        data = json.loads(read_capped(path, MAX_FIXTURE_BYTES, "NVML fixture", CheckError).decode())
    except UnicodeDecodeError as exc:
        raise CheckError(
            f"NVML fixture {name} is not a text file (byte {exc.start} is not UTF-8); "
            "give a JSON file of recorded readings"
        ) from None
    except json.JSONDecodeError as exc:
        raise CheckError(f"NVML fixture {name} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise CheckError(f"NVML fixture {name} cannot be read: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise CheckError(
            f"NVML fixture {name} holds a JSON {type(data).__name__}; expected an object with "
            "'driver_version' and 'gpus'"
        )
    return data


def _apply_patches(base: dict[str, Any], data: dict[str, Any], name: str) -> dict[str, Any]:
    gpus = [dict(g) for g in base.get("gpus", [])]
    for index, patch in data.get("gpu_patches", {}).items():
        if not (str(index).isdigit() and int(index) < len(gpus)):
            raise CheckError(f"NVML fixture {name}: gpu_patches: no GPU {index!r} in its base")
        gpus[int(index)].update(patch)
    removed = set(data.get("remove_gpus", []))
    base["gpus"] = [g for i, g in enumerate(gpus) if i not in removed]
    base.update({k: v for k, v in data.items() if k not in ("base", "gpu_patches", "remove_gpus")})
    return base


def load_fixture(path: Path, depth: int = 0) -> dict[str, Any]:
    """A recorded NVML fixture (see :class:`RecordedNvml`), its ``base`` chain applied."""
    data = _read_fixture(path)
    if "base" not in data:
        return dict(data)
    if depth >= _MAX_FIXTURE_DEPTH:
        raise CheckError(f"NVML fixture {str(path)!r}: 'base' fixtures nest too deep (a loop?)")
    base = load_fixture(path.parent / str(data["base"]), depth + 1)
    return _apply_patches(base, data, repr(str(path)))


class RecordedNvml:
    """Replays a JSON fixture as if it were NVML.

    Format: ``driver_version``, ``cuda_driver_version``, ``gpus`` (list of GpuReading field
    values; a missing key is "not supported"; ``processes`` is a list of ``{"pid",
    "used_memory_mib"}``, NVML's running compute and graphics processes), ``xid_events`` (``{"gpu_index", "xid"}``) and
    ``init_error``.  A value may be ``"NOT_SUPPORTED"``, ``"GPU_IS_LOST"`` or ``"HANG"`` (the
    call blocks until :meth:`release`).  A fixture with ``base`` names another fixture in the
    same folder and applies ``gpu_patches`` (by GPU index) and ``remove_gpus`` on top of it.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self._released = threading.Event()

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedNvml:
        return cls(load_fixture(Path(path)))

    def release(self) -> None:
        """Let every hanging call return (tests call this at teardown)."""
        self._released.set()

    def _value(self, value: Any) -> Any:
        if value == NOT_SUPPORTED:
            raise NvmlNotSupported("not supported")
        if value == GPU_IS_LOST:
            raise NvmlCallError("GPU is lost (NVML_ERROR_GPU_IS_LOST)")
        if value == HANG:
            self._released.wait(timeout=3600.0)
            raise NvmlCallError("call released after hanging")
        return value

    def init(self) -> None:
        if self.data.get("init_error"):
            raise NvmlCallError(str(self.data["init_error"]))

    def shutdown(self) -> None:
        return None

    def driver_version(self) -> str:
        return str(self._value(self.data.get("driver_version", NOT_SUPPORTED)))

    def cuda_driver_version(self) -> str:
        return str(self._value(self.data.get("cuda_driver_version", NOT_SUPPORTED)))

    def device_count(self) -> int:
        return int(self._value(self.data.get("device_count", len(self.data.get("gpus", [])))))

    def gpu_field(self, index: int, name: str) -> Any:
        value = self._value(self.data["gpus"][index].get(name, NOT_SUPPORTED))
        if name == "processes":
            return [_gpu_process(p, index) for p in value]
        return value

    def xid_events(self, listen_s: float) -> list[XidEvent]:
        return [
            XidEvent(xid=int(e["xid"]), gpu_index=e.get("gpu_index"), source="nvml")
            for e in self.data.get("xid_events", [])
        ]


def _gpu_process(data: Any, index: int) -> GpuProcess:
    """One ``{"pid", "used_memory_mib"}`` entry of a fixture's process list."""
    if not (isinstance(data, dict) and isinstance(data.get("pid"), int)):
        raise CheckError(
            f"NVML fixture: GPU {index} processes: {data!r} is not "
            '{"pid": <integer>, "used_memory_mib": <number or null>}'
        )
    memory = data.get("used_memory_mib")
    return GpuProcess(pid=data["pid"], used_memory_mib=None if memory is None else float(memory))


def snapshot_to_fixture(snapshot: GpuSnapshot, description: str) -> dict[str, Any]:
    """A snapshot in RecordedNvml's format (None -> "NOT_SUPPORTED"), to keep a real node's readings."""
    gpus = []
    for gpu in snapshot.gpus:
        row: dict[str, Any] = {}
        for name in GPU_FIELDS:
            value = getattr(gpu, name)
            if name in gpu.errors:
                value = GPU_IS_LOST if "lost" in gpu.errors[name].lower() else NOT_SUPPORTED
            row[name] = (
                NOT_SUPPORTED
                if value is None
                else to_jsonable(value)
                if isinstance(value, tuple)
                else value
            )
        gpus.append(row)
    return {
        "description": description,
        "driver_version": snapshot.driver_version or NOT_SUPPORTED,
        "cuda_driver_version": snapshot.cuda_driver_version or NOT_SUPPORTED,
        "gpus": gpus,
        "xid_events": [{"gpu_index": e.gpu_index, "xid": e.xid} for e in snapshot.xid_events],
        **({"init_error": snapshot.error} if snapshot.error and not snapshot.gpus else {}),
    }
