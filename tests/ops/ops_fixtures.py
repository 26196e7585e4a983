"""Helpers for the ops tests: fixture paths and the fake sysfs tree builder."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ops"
NVML_FIXTURES = FIXTURES / "nvml"
ETHTOOL_FIXTURES = FIXTURES / "ethtool"  # `ethtool -S <netdev>` output as the command prints it
SYSFS_FIXTURES = FIXTURES / "sysfs"


def _merge_nic(nic: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    merged = dict(nic)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def load_sysfs_fixture(name: str) -> dict[str, Any]:
    """A fake-tree description; ``base`` + ``nic_patches``/``remove_nics``/``unmount`` overlays."""
    data = json.loads((SYSFS_FIXTURES / name).read_text())
    if "base" not in data:
        return data
    base = load_sysfs_fixture(data["base"])
    patches = data.get("nic_patches", {})
    removed = set(data.get("remove_nics", []))
    base["nics"] = [
        _merge_nic(n, patches.get(n["name"], {})) for n in base["nics"] if n["name"] not in removed
    ]
    unmount = set(data.get("unmount", []))
    base["unmounted_dirs"] = sorted(unmount)
    base["mounts"] = [m for m in base["mounts"] if m["path"] not in unmount]
    for key in ("meminfo_kb", "dmesg", "numa_nodes", "processes", "cgroup_files", "passwd"):
        if key in data:
            base[key] = data[key]
    return base


def _timestamps(text: str) -> str:
    """'{ago:600}' -> the ISO time 600 s before now, as ``dmesg --time-format iso`` prints it
    (kernel-log XIDs count for 2 h, so fixed dates would expire)."""
    now = datetime.now(UTC)

    def stamp(match: re.Match[str]) -> str:
        when = now - timedelta(seconds=int(match.group(1)))
        return when.strftime("%Y-%m-%dT%H:%M:%S,%f+00:00")

    return re.sub(r"\{ago:(\d+)\}", stamp, text)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _build_nic(root: Path, nic: dict[str, Any]) -> None:
    device = root / "sys/class/infiniband" / nic["name"]
    port = device / "ports" / str(nic["port"])
    for key in ("state", "phys_state", "rate", "link_layer"):
        _write(port / key, str(nic[key]) + "\n")
    for folder in ("counters", "hw_counters"):
        for counter, value in nic.get(folder, {}).items():
            _write(port / folder / counter, f"{value}\n")
    _write(device / "device/numa_node", f"{nic['numa_node']}\n")
    (device / "device/net" / nic["netdev"]).mkdir(parents=True, exist_ok=True)
    if "ethtool_file" in nic:
        text = (ETHTOOL_FIXTURES / nic["ethtool_file"]).read_text()
        _write(root / "ethtool-S" / nic["netdev"], text)
    elif "ethtool" in nic:
        lines = ["NIC statistics:"] + [f"     {k}: {v}" for k, v in nic["ethtool"].items()]
        _write(root / "ethtool-S" / nic["netdev"], "\n".join(lines) + "\n")


def build_fake_root(root: Path, data: dict[str, Any]) -> Path:
    """Write the tree SysfsReader reads: /sys/class/infiniband, /proc, mount dirs, dmesg."""
    for nic in data["nics"]:
        _build_nic(root, nic)
    mem = data["meminfo_kb"]
    _write(root / "proc/meminfo", "".join(f"{k}:  {v} kB\n" for k, v in mem.items()))
    _write(
        root / "proc/mounts",
        "".join(f"dev{i} {m['path']} {m['fstype']} rw 0 0\n" for i, m in enumerate(data["mounts"])),
    )
    for path in [m["path"] for m in data["mounts"]] + data.get("unmounted_dirs", []):
        (root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for n in range(data["numa_nodes"]):
        (root / f"sys/devices/system/node/node{n}").mkdir(parents=True, exist_ok=True)
    _write(root / "dmesg", _timestamps(data.get("dmesg", "")))
    _build_processes(root, data)
    return root


def _build_processes(root: Path, data: dict[str, Any]) -> None:
    """/proc/<pid>/{comm,cmdline,status,cgroup}, /etc/passwd and files under /sys/fs/cgroup,
    as the kernel writes them (proc(5): cmdline is NUL-separated; status has 'Uid:' with the
    real, effective, saved and filesystem uid)."""
    for proc in data.get("processes", []):
        folder = root / "proc" / str(proc["pid"])
        _write(folder / "comm", proc["comm"] + "\n")
        _write(folder / "cmdline", "\0".join(proc["cmdline"]) + "\0")
        uid = proc["uid"]
        _write(folder / "status", f"Name:\t{proc['comm']}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        _write(folder / "cgroup", proc["cgroup"] + "\n")
    for path, text in data.get("cgroup_files", {}).items():
        _write(root / "sys/fs/cgroup" / path, text)
    if "passwd" in data:
        _write(root / "etc/passwd", data["passwd"])
