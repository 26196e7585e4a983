"""Rack-scale NVLink domains (GB200 NVL72): Slurm blocks, Prometheus labels and IMEX domains
follow the design's racks, never N consecutive node numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clusterforge.design import Design, plan
from clusterforge.design.facility.racks import Rack
from clusterforge.generate import render
from clusterforge.generate.layout import node_placements
from clusterforge.spec import load_spec
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


def _blocks(design: Design) -> dict[str, set[str]]:
    text = {f.path: f.content for f in render(design, ["slurm"])}["slurm/topology-block.conf"]
    blocks = {}
    for line in text.splitlines():
        if line.startswith("BlockName="):
            fields = dict(part.split("=", 1) for part in line.split())
            blocks[fields["BlockName"]] = set(expand_hostlist(fields["Nodes"]))
    return blocks


@pytest.mark.parametrize("swapped", [False, True], ids=["as-planned", "trays-swapped"])
def test_slurm_blocks_are_the_racks(nvl72: Design, swapped: bool) -> None:
    design = _swap_two_trays(nvl72) if swapped else nvl72
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


def test_imex_setup_writes_the_trays_of_its_own_rack(nvl72: Design, tmp_path: Path) -> None:
    """Run the script with stand-ins for scontrol, getent and systemctl: the tray's
    nodes_config.cfg lists the addresses of exactly the trays in its rack."""
    design = _swap_two_trays(nvl72)
    files = {f.path: f.content for f in render(design, ["slurm"])}
    script = files["slurm/clusterforge-imex-setup.sh"]
    config = tmp_path / "nodes_config.cfg"
    script = script.replace("config=/etc/nvidia-imex/nodes_config.cfg", f"config={config}")
    (tmp_path / "imex.sh").write_text(script)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hostnames = "\n".join(
        [
            f"#!{sys.executable}",
            "import sys",
            f"sys.path.insert(0, {str(Path(__file__).parents[2])!r})",
            "from tests.generate.emulated_slurm import expand_hostlist",
            "print('\\n'.join(expand_hostlist(sys.argv[3])))",
        ]
    )
    (bin_dir / "scontrol").write_text(hostnames + "\n")
    (bin_dir / "getent").write_text('#!/bin/sh\necho "10.0.0.${2#gpu-} STREAM $2"\n')
    (bin_dir / "systemctl").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    rack, nodes = next(iter(_rack_nodes(design).items()))
    tray = sorted(nodes)[0]
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    subprocess.run(["sh", str(tmp_path / "imex.sh"), tray], check=True, env=env)
    addresses = config.read_text().split()
    assert sorted(addresses) == sorted(f"10.0.0.{n.removeprefix('gpu-')}" for n in nodes), rack
