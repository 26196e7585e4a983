"""Network and host readings from sysfs, procfs, ``ethtool -S`` and ``dmesg``.

Everything is read below a configurable ``root`` so tests point it at a fake tree.  Paths
(Linux kernel ABI, Documentation/ABI/stable/sysfs-class-infiniband):
``/sys/class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer}``,
``.../counters/*`` and ``.../hw_counters/*``, ``/sys/class/infiniband/<dev>/device/numa_node``
and ``.../device/net/<netdev>``.  Command output is read from a file when the tree has one
(``<root>/ethtool-S/<netdev>`` for ``ethtool -S``, ``<root>/dmesg`` for ``dmesg``), which is
how fake trees record it; otherwise the command runs.

Every read that can block (a mount on a dead NFS server, a command) runs under a timeout;
a timeout is recorded as an error, never waited out.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from clusterforge.ops.readings import HostReading, MountReading, NicReading

__all__ = ["SysfsReader", "parse_ethtool_stats", "run_with_timeout"]

T = TypeVar("T")
_GIB = 1024**3


def run_with_timeout(fn: Callable[[], T], timeout_s: float) -> T:
    """Run ``fn`` in a daemon thread; raise TimeoutError if it has not returned in time."""
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(fn())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, name="clusterforge-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"did not return within {timeout_s:g} s")
    if errors:
        raise errors[0]
    return values[0]


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """``ethtool -S`` output ("     rx_discards_phy: 12") -> {name: value}."""
    stats = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and value.strip().lstrip("-").isdigit():
            stats[name.strip()] = int(value)
    return stats


def _rate_gbit_per_s(text: str | None) -> float | None:
    """sysfs ``rate``: "400 Gb/sec (4X NDR)" -> 400.0."""
    match = re.match(r"\s*([\d.]+)\s*Gb/sec", text or "")
    return float(match.group(1)) if match else None


def _state_name(text: str | None) -> str | None:
    """sysfs ``state`` "4: ACTIVE" -> "ACTIVE"; ``phys_state`` "5: LinkUp" -> "LinkUp"."""
    if text is None:
        return None
    return text.split(":", 1)[-1].strip()


class SysfsReader:
    """Reads NICs, mounts and host facts below ``root`` (``/`` on a real node)."""

    def __init__(
        self,
        root: str | Path = "/",
        timeout_s: float = 5.0,
        statvfs: Callable[[str], os.statvfs_result] = os.statvfs,
    ) -> None:
        self.root = Path(root)
        self.timeout_s = timeout_s
        self.statvfs = statvfs

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def _read(self, path: Path) -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None

    def _int(self, path: Path) -> int | None:
        text = self._read(path)
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None

    def _command(self, argv: list[str], recorded: Path) -> str | None:
        """The command's output, or the recorded output file when the tree has one."""
        if recorded.is_file():
            return self._read(recorded)
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    # --- NICs -----------------------------------------------------------------------------

    def nics(self) -> list[NicReading]:
        """Every RDMA port under /sys/class/infiniband (InfiniBand and RoCE)."""
        base = self.path("/sys/class/infiniband")
        if not base.is_dir():
            return []
        readings = []
        for device in sorted(base.iterdir()):
            ports = device / "ports"
            for port in sorted(ports.iterdir() if ports.is_dir() else [], key=lambda p: p.name):
                readings.append(self._port(device, port))
        return readings

    def _port(self, device: Path, port: Path) -> NicReading:
        counters = self._counters(port / "counters") | self._counters(port / "hw_counters")
        net = device / "device" / "net"
        netdevs = sorted(p.name for p in net.iterdir()) if net.is_dir() else []
        netdev = netdevs[0] if netdevs else None
        link_layer = self._read(port / "link_layer")
        errors: dict[str, str] = {}
        if netdev and link_layer == "Ethernet":
            stats = self._command(["ethtool", "-S", netdev], self.path(f"/ethtool-S/{netdev}"))
            if stats is None:
                errors["ethtool"] = (
                    f"ethtool -S {netdev} gave no output (not installed or timed out)"
                )
            counters |= parse_ethtool_stats(stats or "")
        rate = _rate_gbit_per_s(self._read(port / "rate"))
        if rate is None and netdev:
            speed_mbit = self._int(self.path(f"/sys/class/net/{netdev}/speed"))
            rate = speed_mbit / 1000.0 if speed_mbit and speed_mbit > 0 else None
        return NicReading(
            name=device.name,
            port=int(port.name) if port.name.isdigit() else 1,
            link_layer=link_layer,
            state=_state_name(self._read(port / "state")),
            phys_state=_state_name(self._read(port / "phys_state")),
            rate_gbit_per_s=rate,
            netdev=netdev,
            numa_node=self._int(device / "device" / "numa_node"),
            counters=counters,
            errors=errors,
        )

    def _counters(self, folder: Path) -> dict[str, int]:
        if not folder.is_dir():
            return {}
        values = {}
        for file in sorted(folder.iterdir()):
            value = self._int(file)
            if value is not None:
                values[file.name] = value
        return values

    # --- host -----------------------------------------------------------------------------

    def host(self, hostname: str | None, mount_paths: tuple[str, ...]) -> HostReading:
        meminfo = self._meminfo()
        nodes = self.path("/sys/devices/system/node")
        numa = (
            [p for p in nodes.iterdir() if re.fullmatch(r"node\d+", p.name)]
            if nodes.is_dir()
            else []
        )
        return HostReading(
            hostname=hostname,
            mem_total_gib=meminfo.get("MemTotal"),
            mem_available_gib=meminfo.get("MemAvailable"),
            num_numa_nodes=len(numa) or None,
            mounts=tuple(self.mount(p) for p in mount_paths),
        )

    def _meminfo(self) -> dict[str, float]:
        values = {}
        for line in (self._read(self.path("/proc/meminfo")) or "").splitlines():
            match = re.match(r"(\w+):\s+(\d+)\s*kB", line)
            if match:
                values[match.group(1)] = int(match.group(2)) * 1024 / _GIB
        return values

    def _mount_table(self) -> dict[str, str]:
        table = {}
        for line in (self._read(self.path("/proc/mounts")) or "").splitlines():
            parts = line.split()
            if len(parts) >= 3:
                table[parts[1].replace("\\040", " ")] = parts[2]
        return table

    def mount(self, path: str) -> MountReading:
        """Is ``path`` a mount point, writable, and how much is free?  Never blocks.

        ``statvfs`` runs first so an automount is triggered before /proc/mounts is read.
        """
        path = path.rstrip("/") or "/"
        local = str(self.path(path))
        try:
            stat = run_with_timeout(lambda: self.statvfs(local), self.timeout_s)
            writable = run_with_timeout(lambda: self._writable(local), self.timeout_s)
        except TimeoutError as exc:
            return self._unreadable(path, f"{path}: {exc}")
        except OSError as exc:
            return self._unreadable(path, f"{path}: {exc.strerror}")
        fstype = self._mount_table().get(path)
        return MountReading(
            path=path,
            mounted=fstype is not None,
            fstype=fstype,
            writable=writable,
            free_gib=stat.f_bavail * stat.f_frsize / _GIB,
            total_gib=stat.f_blocks * stat.f_frsize / _GIB,
        )

    def _unreadable(self, path: str, error: str) -> MountReading:
        fstype = self._mount_table().get(path)
        return MountReading(path=path, mounted=fstype is not None, fstype=fstype, error=error)

    @staticmethod
    def _writable(directory: str) -> bool:
        probe = os.path.join(directory, f".clusterforge-probe-{uuid.uuid4().hex}")
        try:
            with open(probe, "w", encoding="utf-8") as handle:
                handle.write("ok")
            os.unlink(probe)
        except OSError:
            return False
        return True

    def kernel_log(self) -> str | None:
        """The kernel ring buffer with ISO timestamps (``dmesg`` needs root on most distros)."""
        return self._command(["dmesg", "--time-format", "iso"], self.path("/dmesg"))
