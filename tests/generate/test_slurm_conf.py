"""slurm.conf policy: controllers and their state, accounting and fair share, spare nodes."""

from __future__ import annotations

import re

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.generate.slurm.accounting import (
    LOCAL_STATE_SAVE,
    SHARED_STATE_SAVE,
    management_roles,
)
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS
from tests.generate.emulated_slurm import expand_hostlist


@pytest.fixture(scope="module")
def roce_design() -> Design:
    """34 nodes: two head nodes and two dedicated Slurm controllers."""
    return plan(load_spec(SPECS / "roce-rail-optimized.yaml"))


def _slurm(design: Design) -> dict[str, str]:
    return {f.path: f.content for f in render(design, ["slurm"])}


def _settings(conf: str) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in conf.splitlines():
        match = re.match(r"^(\w+)=(\S+)", line)
        if match:
            values.setdefault(match[1], []).append(match[2])
    return values


def test_two_controllers_share_their_state(roce_design: Design) -> None:
    conf = _slurm(roce_design)["slurm/slurm.conf"]
    settings = _settings(conf)
    assert settings["SlurmctldHost"] == management_roles(roce_design)["slurm"]
    assert len(settings["SlurmctldHost"]) == 2
    assert settings["StateSaveLocation"] == [SHARED_STATE_SAVE]
    assert "mounted read-write on both" in conf


def test_one_head_node_gives_one_controller_with_local_state(lab_design: Design) -> None:
    assert management_roles(lab_design) == {"head": ["mgmt-01"]}
    settings = _settings(_slurm(lab_design)["slurm/slurm.conf"])
    assert settings["SlurmctldHost"] == ["mgmt-01"]
    assert settings["StateSaveLocation"] == [LOCAL_STATE_SAVE]


def test_accounting_and_fair_share_are_configured(lab_design: Design) -> None:
    files = _slurm(lab_design)
    settings = _settings(files["slurm/slurm.conf"])
    controller = settings["SlurmctldHost"][0]
    assert settings["AccountingStorageType"] == ["accounting_storage/slurmdbd"]
    assert settings["AccountingStorageHost"] == [controller]
    assert "associations" in settings["AccountingStorageEnforce"][0]
    assert settings["AccountingStorageTRES"] == ["gres/gpu"]
    assert settings["PriorityType"] == ["priority/multifactor"]
    assert int(settings["PriorityWeightFairshare"][0]) > int(settings["PriorityWeightAge"][0])
    dbd = _settings(files["slurm/slurmdbd.conf"])
    assert dbd["DbdHost"] == [controller]
    assert dbd["StorageType"] == ["accounting_storage/mysql"]
    assert "StoragePass" not in dbd  # no password is ever written


def test_slurmdbd_conf_is_private(lab_design: Design) -> None:
    modes = {f.path: f.mode for f in render(lab_design, ["slurm"])}
    assert modes["slurm/slurmdbd.conf"] == 0o600


def test_spare_nodes_are_only_in_the_spare_partition(lab_design: Design) -> None:
    settings = _settings(_slurm(lab_design)["slurm/slurm.conf"])
    lines = [
        line
        for line in _slurm(lab_design)["slurm/slurm.conf"].splitlines()
        if line.startswith("PartitionName=")
    ]
    gpu = next(line for line in lines if line.startswith("PartitionName=gpu "))
    spare = next(line for line in lines if line.startswith("PartitionName=spare "))
    assert "Nodes=gpu-[0001-0006] Default=YES" in gpu
    assert "Nodes=gpu-0007 Default=NO" in spare
    assert "ALL" not in settings["PartitionName"]


def test_spares_outside_the_fabric_are_their_own_tree_group() -> None:
    """Spares the fabric does not cable with the training nodes (the reference design's spare
    ports are full) get a level-0 group under no spine, so no job spans them and training."""
    design = plan(load_spec(SPECS / "fat-tree-3tier.yaml"))
    outside = design.compute.node_names[design.fabric.connectivity.num_nodes :]
    assert outside, "the spec should leave spares outside the compute fabric"
    files = _slurm(design)
    topology = files["slurm/topology.conf"]
    line = next(x for x in topology.splitlines() if x.startswith("SwitchName=spare-pool "))
    assert set(expand_hostlist(line.split("Nodes=")[1])) == set(outside)
    assert not any("spare-pool" in x for x in topology.splitlines() if "Switches=" in x)
    spare = next(
        x for x in files["slurm/slurm.conf"].splitlines() if x.startswith("PartitionName=spare ")
    )
    assert set(outside) <= set(expand_hostlist(spare.split()[1].removeprefix("Nodes=")))
