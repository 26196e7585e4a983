"""The counter state a one-shot ``clusterforge check`` keeps between runs.

Error counters (ECC, NVLink, InfiniBand, RoCE) are cumulative since a reset or a reboot, so
their lifetime totals say little about the node *now*: a cable that threw 2,000 symbol errors
last month and none since is fine.  The exporter keeps its previous reading in memory; a
one-shot check (Slurm's HealthCheckProgram, a DaemonSet loop) keeps it in a small JSON file
instead, so the checks judge the increase since the last run (rate per time), as DCGM's
health watches judge deltas over a window (DCGM ``DcgmHealthWatch.cpp``).

The file holds one node's counters with the time they were read.  It is written atomically
(a temporary file in the same folder, then renamed by :func:`clusterforge.userfiles.write_file`),
so a check killed mid-write leaves the old state; it is read through a size cap.  A missing file starts a baseline; a corrupt, foreign (another node's) or
unreadable file is reported in the notes, treated as missing and replaced; nothing here
raises.  Every file access runs under a time budget (the file may sit on a hung NFS mount).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.errors import CheckError, SpecError
from clusterforge.ops.readings import GpuReading, GpuSnapshot, NicReading, NodeReading, XidEvent
from clusterforge.ops.sysfs import run_with_timeout
from clusterforge.userfiles import read_capped, write_file

__all__ = [
    "DEFAULT_STATE_DIR",
    "GPU_COUNTER_FIELDS",
    "STATE_VERSION",
    "StateLoad",
    "default_state_path",
    "load_state",
    "save_state",
    "state_from_reading",
    "xid_key",
]

STATE_VERSION = 1
DEFAULT_STATE_DIR = Path("/var/lib/clusterforge")
# Cumulative GPU counters whose increase the checks judge (GpuReading field names).
GPU_COUNTER_FIELDS = (
    "ecc_dbe_volatile",
    "ecc_dbe_aggregate",
    "ecc_sbe_volatile",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "nvlink_replay_errors",
    "nvlink_recovery_errors",
    "nvlink_crc_errors",
)
_IO_TIMEOUT_S = 2.0  # a local file takes milliseconds; a hung NFS mount must not eat Slurm's 60 s


@dataclass(frozen=True)
class StateLoad:
    """The previous run's counters as a reading (None: this run is a baseline), and notes."""

    previous: NodeReading | None
    notes: tuple[str, ...] = ()


def default_state_path(node: str, folder: Path = DEFAULT_STATE_DIR) -> Path | None:
    """``/var/lib/clusterforge/check-state-<node>.json`` when that folder is writable, else None.

    One file per node name, because emulated Slurm nodes (``slurmd -N``) share one host.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", node)
    target = folder / f"check-state-{safe}.json"
    if folder.is_dir():
        return target if os.access(folder, os.W_OK | os.X_OK) else None
    parent = folder.parent
    return target if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK) else None


def xid_key(event: XidEvent) -> str:
    """'gpu3:79' (or 'pci0000:18:00:79', 'node:79' when the GPU is not known)."""
    where = (
        f"gpu{event.gpu_index}"
        if event.gpu_index is not None
        else f"pci{event.pci_bus_id}"
        if event.pci_bus_id
        else "node"
    )
    return f"{where}:{event.xid}"


def state_from_reading(reading: NodeReading) -> dict[str, Any]:
    """The JSON document for ``reading``: counters only, with the time they were read."""
    gpus = {
        str(g.index): {
            "uuid": g.uuid,
            **{n: getattr(g, n) for n in GPU_COUNTER_FIELDS if getattr(g, n) is not None},
        }
        for g in reading.gpu.gpus
    }
    nics = {f"{n.name}/{n.port}": dict(n.counters) for n in reading.nics if n.counters}
    xids = Counter(xid_key(e) for e in (*reading.gpu.xid_events, *reading.kernel_xids))
    return {
        "version": STATE_VERSION,
        "node": reading.node,
        "taken_at_s": reading.taken_at_s,
        "gpus": gpus,
        "nics": nics,
        "xids": dict(sorted(xids.items())),
    }


def _xid_events(counts: dict[str, Any]) -> tuple[XidEvent, ...]:
    events = []
    for key, count in counts.items():
        where, _, xid = str(key).rpartition(":")
        gpu = int(where[3:]) if re.fullmatch(r"gpu\d+", where) else None
        bus = where[3:] if where.startswith("pci") else None
        events += [XidEvent(xid=int(xid), gpu_index=gpu, pci_bus_id=bus, source="state")] * int(
            count
        )
    return tuple(events)


def _reading_from_state(data: dict[str, Any]) -> NodeReading:
    """Inverse of :func:`state_from_reading`; raises KeyError/TypeError/ValueError when malformed."""
    if data.get("version") != STATE_VERSION:
        raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
    gpus = []
    for index, values in data["gpus"].items():
        counters: dict[str, Any] = {
            n: int(values[n]) for n in GPU_COUNTER_FIELDS if values.get(n) is not None
        }
        gpus.append(GpuReading(index=int(index), uuid=values.get("uuid"), **counters))
    nics = []
    for key, counters in data["nics"].items():
        name, _, port = str(key).rpartition("/")
        nics.append(
            NicReading(name=name, port=int(port), counters={k: int(v) for k, v in counters.items()})
        )
    return NodeReading(
        node=str(data["node"]),
        taken_at_s=float(data["taken_at_s"]),
        gpu=GpuSnapshot(gpus=tuple(gpus)),
        nics=tuple(nics),
        kernel_xids=_xid_events(data.get("xids", {})),
    )


MAX_STATE_BYTES = 4 * 1024 * 1024  # one node's counters: a few KiB for 8 GPUs and 8 NICs


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    return read_capped(path, MAX_STATE_BYTES, "state file", CheckError).decode("utf-8")


def load_state(path: Path, node: str, now_s: float) -> StateLoad:
    """The previous counters of ``node`` from ``path``; never raises."""
    try:
        text = run_with_timeout(lambda: _read(path), _IO_TIMEOUT_S)
    except (OSError, TimeoutError, CheckError, UnicodeDecodeError) as exc:
        return StateLoad(None, (f"state file {path} unreadable ({exc}); starting a baseline",))
    if text is None:
        return StateLoad(None, (f"no state file {path} yet: this run is the baseline",))
    try:
        previous = _reading_from_state(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return StateLoad(
            None, (f"state file {path} is corrupt ({exc}); replacing it, this run is a baseline",)
        )
    if previous.node != node:
        return StateLoad(
            None,
            (f"state file {path} belongs to node {previous.node!r}; starting a baseline for {node!r}",),
        )  # fmt: skip
    if previous.taken_at_s >= now_s:
        return StateLoad(
            None, (f"state file {path} is from the future (clock changed?); starting a baseline",)
        )
    return StateLoad(previous)


def _write_state(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, text, "state file")


def save_state(path: Path, reading: NodeReading) -> str | None:
    """Write ``reading``'s counters to ``path`` atomically; returns a note on failure."""
    text = json.dumps(state_from_reading(reading), indent=1, sort_keys=True)
    try:
        run_with_timeout(lambda: _write_state(path, text), _IO_TIMEOUT_S)
    except (OSError, TimeoutError, SpecError) as exc:
        return f"could not write state file {path}: {exc}"
    return None
