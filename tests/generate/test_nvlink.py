"""Rack-scale NVLink domains (GB200 NVL72): Slurm blocks, Prometheus labels and IMEX domains
follow the design's racks, never N consecutive node numbers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterforge.design import Design, plan
from clusterforge.design.facility.racks import Rack
from clusterforge.generate import render
from clusterforge.generate.layout import node_placements
from clusterforge.spec import SlurmSpec, SlurmVersion, load_spec
from tests.generate.conftest import SPECS
from tests.generate.emulated_slurm import expand_hostlist


@pytest.fixture(scope="module")
def nvl72() -> Design:
    return plan(load_spec(SPECS / "gb200-nvl72.yaml"))


def _rack_nodes(design: Design) -> dict[str, set[str]]:
    return {
        r.name: {d.name for d in r.devices if d.kind == "node"}
        for r in design.racks
        if any(d.kind == "node" for d in r.devices)
    }


def _swap_two_trays(design: Design) -> Design:
    """The same design with one tray of the first two racks exchanged: rack membership is no
    longer consecutive node numbers."""
    racks = list(design.racks)
    firsts = [i for i, r in enumerate(racks) if any(d.kind == "node" for d in r.devices)][:2]
    a, b = (racks[i] for i in firsts)
    na = next(d for d in a.devices if d.kind == "node")
    nb = next(d for d in b.devices if d.kind == "node")
    swap = {na.name: nb.name, nb.name: na.name}

    def renamed(rack: Rack) -> Rack:
        devices = [
            d.model_copy(update={"name": swap[d.name]}) if d.name in swap else d
            for d in rack.devices
        ]
        return rack.model_copy(update={"devices": devices})

    racks[firsts[0]], racks[firsts[1]] = renamed(a), renamed(b)
    return design.model_copy(update={"racks": racks})


def _on_slurm(design: Design, version: SlurmVersion) -> Design:
    spec = design.spec.model_copy(update={"slurm": SlurmSpec(version=version)})
    return design.model_copy(update={"spec": spec})


# Slurm 23.11+ reads the blocks as topology.conf; on 22.05 they wait in topology-block.conf.
BLOCK_FILE: dict[SlurmVersion, str] = {
    "25.11": "slurm/topology.conf",
    "23.11": "slurm/topology.conf",
    "22.05": "slurm/topology-block.conf",
}


def _blocks(design: Design) -> dict[str, set[str]]:
    path = BLOCK_FILE[design.spec.slurm.version]
    text = {f.path: f.content for f in render(design, ["slurm"])}[path]
    blocks = {}
    for line in text.splitlines():
        if line.startswith("BlockName="):
            fields = dict(part.split("=", 1) for part in line.split())
            blocks[fields["BlockName"]] = set(expand_hostlist(fields["Nodes"]))
    return blocks


@pytest.mark.parametrize("version", list(BLOCK_FILE))
@pytest.mark.parametrize("swapped", [False, True], ids=["as-planned", "trays-swapped"])
def test_slurm_blocks_are_the_racks(nvl72: Design, swapped: bool, version: SlurmVersion) -> None:
    design = _on_slurm(_swap_two_trays(nvl72) if swapped else nvl72, version)
    racks = _rack_nodes(design)
    assert all(len(nodes) <= 18 for nodes in racks.values())
    assert sorted(map(sorted, _blocks(design).values())) == sorted(map(sorted, racks.values()))


def test_prometheus_nvlink_labels_follow_the_racks(nvl72: Design) -> None:
    design = _swap_two_trays(nvl72)
    files = {f.path: f.content for f in render(design, ["monitoring"])}
    config = yaml.safe_load(files["monitoring/prometheus.yml"])
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "dcgm")
    rack_of = {n: rack for rack, nodes in _rack_nodes(design).items() for n in nodes}
    for group in job["static_configs"]:
        labels = group["labels"]
        for target in group["targets"]:
            node = target.split(":")[0]
            assert labels["rack"] == rack_of[node]
            assert labels["nvlink_block"] == f"nvl-{rack_of[node]}"


def test_kubernetes_nvlink_label_is_the_rack(nvl72: Design) -> None:
    for p in node_placements(_swap_two_trays(nvl72)):
        assert p.nvlink_block == f"nvl-{p.rack}"


REPO = Path(__file__).parents[2]
IMEX_MAJOR = 509  # what a GB200 tray's /proc/devices might list; the script must read it


def _imex_scratch(design: Design, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The generated script in a scratch root (a fake /proc/devices) with stand-ins for
    scontrol, getent and systemctl on PATH; returns the script and its environment."""
    files = {f.path: f.content for f in render(design, ["slurm"])}
    script = tmp_path / "imex.sh"
    script.write_text(files["slurm/clusterforge-imex-setup.sh"])
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "devices").write_text(
        f"Character devices:\n  1 mem\n195 nvidia\n{IMEX_MAJOR} nvidia-caps-imex-channels\n"
        "510 nvidia-uvm\n"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hostnames = "\n".join(
        [
            f"#!{sys.executable}",
            "import sys",
            f"sys.path[:0] = [{str(REPO)!r}, {str(REPO / 'src')!r}]",
            "from tests.generate.emulated_slurm import expand_hostlist",
            "print('\\n'.join(expand_hostlist(sys.argv[3])))",
        ]
    )
    (bin_dir / "scontrol").write_text(hostnames + "\n")
    (bin_dir / "getent").write_text('#!/bin/sh\necho "10.0.0.${2#gpu-} STREAM $2"\n')
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "systemctl.log"}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return script, {"PATH": f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "IMEX_ROOT": str(root)}


def _first_tray(design: Design) -> tuple[str, set[str]]:
    nodes = next(iter(_rack_nodes(design).values()))
    return sorted(nodes)[0], nodes


def test_imex_setup_writes_the_trays_of_its_own_rack(nvl72: Design, tmp_path: Path) -> None:
    """The tray's nodes_config.cfg lists the addresses of exactly the trays in its rack."""
    design = _swap_two_trays(nvl72)
    script, env = _imex_scratch(design, tmp_path)
    tray, nodes = _first_tray(design)
    subprocess.run(["sh", str(script), tray], check=True, env=env)
    config = Path(env["IMEX_ROOT"]) / "etc" / "nvidia-imex" / "nodes_config.cfg"
    addresses = config.read_text().split()
    assert sorted(addresses) == sorted(f"10.0.0.{n.removeprefix('gpu-')}" for n in nodes)
    assert (tmp_path / "systemctl.log").read_text().splitlines() == [
        "enable nvidia-imex",
        "restart nvidia-imex",
    ]


def _mknod_denied(tmp_path: Path) -> str | None:
    probe = tmp_path / "probe"
    try:
        os.mknod(probe, stat.S_IFCHR | 0o600, os.makedev(IMEX_MAJOR, 0))
    except OSError as exc:
        return str(exc)
    probe.unlink()
    return None


def test_imex_setup_creates_channel0_from_the_registered_major(
    nvl72: Design, tmp_path: Path
) -> None:
    """channel0 is a character device (major from /proc/devices, minor 0), crw-rw-rw- root:root
    in a drwxr-xr-x folder; a second run keeps the same node; a node with the wrong major (a
    driver reloaded with another number) is replaced."""
    if reason := _mknod_denied(tmp_path):
        pytest.skip(f"cannot create character devices here: {reason}")
    script, env = _imex_scratch(nvl72, tmp_path)
    tray, _ = _first_tray(nvl72)
    channel_dir = Path(env["IMEX_ROOT"]) / "dev" / "nvidia-caps-imex-channels"
    channel = channel_dir / "channel0"

    subprocess.run(["sh", str(script), tray], check=True, env=env)
    info = channel.stat()
    assert stat.S_ISCHR(info.st_mode)
    assert (os.major(info.st_rdev), os.minor(info.st_rdev)) == (IMEX_MAJOR, 0)
    assert stat.S_IMODE(info.st_mode) == 0o666
    assert (info.st_uid, info.st_gid) == (0, 0)
    assert stat.S_IMODE(channel_dir.stat().st_mode) == 0o755
    assert [p.name for p in channel_dir.iterdir()] == ["channel0"]

    subprocess.run(["sh", str(script), tray], check=True, env=env)
    assert channel.stat().st_ino == info.st_ino

    channel.unlink()
    os.mknod(channel, stat.S_IFCHR | 0o600, os.makedev(IMEX_MAJOR + 1, 0))
    subprocess.run(["sh", str(script), tray], check=True, env=env)
    again = channel.stat()
    assert os.major(again.st_rdev) == IMEX_MAJOR and stat.S_IMODE(again.st_mode) == 0o666


def test_imex_setup_refuses_without_the_driver(nvl72: Design, tmp_path: Path) -> None:
    """No nvidia-caps-imex-channels in /proc/devices (driver not loaded): exit 1, no IMEX start."""
    script, env = _imex_scratch(nvl72, tmp_path)
    (Path(env["IMEX_ROOT"]) / "proc" / "devices").write_text("Character devices:\n195 nvidia\n")
    tray, _ = _first_tray(nvl72)
    out = subprocess.run(["sh", str(script), tray], env=env, capture_output=True, text=True)
    assert out.returncode == 1
    assert "nvidia-caps-imex-channels" in out.stderr
    assert not (tmp_path / "systemctl.log").exists()
