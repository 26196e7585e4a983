"""Each target Slurm release gets what it can read: blocks and per-job IMEX channels for
rack-scale NVLink where the release has them, the leaf-switch tree everywhere else."""

from __future__ import annotations

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.spec import SLURM_VERSIONS, SlurmSpec, load_spec
from tests.generate.conftest import GOLDEN_SPEC, SPECS


def _settings(design: Design, version: str) -> tuple[dict[str, str], dict[str, str]]:
    spec = design.spec.model_copy(update={"slurm": SlurmSpec.model_validate({"version": version})})
    files = {f.path: f.content for f in render(design.model_copy(update={"spec": spec}), ["slurm"])}
    conf = dict(
        line.split("=", 1)
        for line in files["slurm/slurm.conf"].splitlines()
        if line.startswith(("TopologyPlugin=", "SwitchType="))
    )
    return conf, files


@pytest.fixture(scope="module")
def nvl72() -> Design:
    return plan(load_spec(SPECS / "gb200-nvl72.yaml"))


@pytest.fixture(scope="module")
def lab() -> Design:
    return plan(load_spec(GOLDEN_SPEC))


EXPECTED_RACK_SCALE = {
    "22.05": ("topology/tree", "switch/none"),
    "23.02": ("topology/tree", "switch/none"),
    "23.11": ("topology/block", "switch/none"),
    "24.05": ("topology/block", "switch/nvidia_imex"),
    "24.11": ("topology/block", "switch/nvidia_imex"),
    "25.05": ("topology/block", "switch/nvidia_imex"),
    "25.11": ("topology/block", "switch/nvidia_imex"),
}


def test_every_release_is_covered() -> None:
    assert set(EXPECTED_RACK_SCALE) == set(SLURM_VERSIONS)


@pytest.mark.parametrize("version", SLURM_VERSIONS)
def test_rack_scale_placement_per_release(nvl72: Design, version: str) -> None:
    conf, files = _settings(nvl72, version)
    topology, switch = EXPECTED_RACK_SCALE[version]
    assert (conf["TopologyPlugin"], conf["SwitchType"]) == (topology, switch)
    block = topology == "topology/block"
    assert ("BlockName=" in files["slurm/topology.conf"]) is block
    assert ("SwitchName=" in files["slurm/topology.conf"]) is not block
    assert ("slurm/topology-block.conf" in files) is not block
    assert ("--switches=" in files["slurm/train.sbatch"]) is not block
    sizes = [ln for ln in files["slurm/topology.conf"].splitlines() if ln.startswith("BlockSizes")]
    assert sizes == (["BlockSizes=18"] if block and version != "23.11" else [])


@pytest.mark.parametrize("version", SLURM_VERSIONS)
def test_one_node_nvlink_domains_keep_the_tree(lab: Design, version: str) -> None:
    conf, files = _settings(lab, version)
    assert conf == {"TopologyPlugin": "topology/tree", "SwitchType": "switch/none"}
    assert "slurm/topology-block.conf" not in files
    assert "--switches=" in files["slurm/train.sbatch"]
