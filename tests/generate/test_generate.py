"""Generators on every example spec, Slurm and NCCL details, and the CLI's atomic writes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.cli.main import main
from clusterforge.design import Design, plan
from clusterforge.errors import GenerateError
from clusterforge.generate import TARGETS, bundle, parse_targets, render, write_files
from clusterforge.generate.common import GeneratedFile
from clusterforge.generate.slurm.gres import gres_type
from clusterforge.generate.training.launch import launch_plan
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS, spec_paths
from tests.generate.leak_scan import secrets_in

EXAMPLES = Path(__file__).parents[2] / "examples"


def _all_specs() -> list[Path]:
    examples = sorted(EXAMPLES.glob("*.yaml"))
    assert examples, f"no example specs under {EXAMPLES}"
    return spec_paths() + examples


@pytest.mark.parametrize("spec_path", _all_specs(), ids=lambda p: p.stem)
def test_every_example_spec_generates_every_target(spec_path: Path, tmp_path: Path) -> None:
    design = plan(load_spec(spec_path))
    files = write_files(render(design), tmp_path)
    tops = {p.relative_to(tmp_path).parts[0] for p in files}
    assert tops == set(TARGETS)
    leaked = secrets_in(tmp_path, files)
    assert not leaked, "\n".join(leaked)  # nothing secret is ever written (test_no_secrets)
    for script in tmp_path.glob("**/*.sh"):
        subprocess.run(["sh", "-n", str(script)], check=True)
    subprocess.run(["bash", "-n", str(tmp_path / "slurm" / "train.sbatch")], check=True)


def test_default_spec_generates(tmp_path: Path) -> None:
    assert main(["generate", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "slurm" / "slurm.conf").read_text().count("NodeName=") >= 1
    assert (tmp_path / "inventory" / "13-cables.csv").exists()


@pytest.mark.parametrize("gpu_id", load_catalog().gpus.ids())
def test_gres_type_is_found_in_the_nvml_name(gpu_id: str) -> None:
    gpu = load_catalog().gpus[gpu_id]
    kind = gres_type(gpu)
    assert kind.isalnum() and kind == kind.lower()
    for name in gpu.nvml_names:
        assert kind in name.lower()


def test_roce_gets_gid_index_and_ib_does_not() -> None:
    roce = plan(load_spec(SPECS / "roce-rail-optimized.yaml"))
    env = dict(launch_plan(roce, 1).nccl_env)
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert env["NCCL_IB_HCA"] == "=" + ",".join(
        f"{name}:1" for name in roce.compute.node.compute_hca_names
    )
    ib = plan(load_spec(SPECS / "lab-leaf-spine.yaml"))
    assert "NCCL_IB_GID_INDEX" not in dict(launch_plan(ib, 1).nccl_env)


def test_nvl72_gets_a_block_topology_file() -> None:
    """Slurm 25.11 (the default target) reads the blocks as topology.conf."""
    design = plan(load_spec(SPECS / "gb200-nvl72.yaml"))
    files = {f.path: f.content for f in render(design, ["slurm"])}
    block = files["slurm/topology.conf"]
    assert block.count("BlockName=") == -(-design.compute.num_nodes // 18)
    assert "BlockSizes=18" in block
    assert "Gres=gpu:gb200:4" in files["slurm/slurm.conf"]


def test_three_tier_fabric_gets_pods_and_cores() -> None:
    design = plan(load_spec(SPECS / "fat-tree-3tier.yaml"))
    topo = {f.path: f.content for f in render(design, ["slurm"])}["slurm/topology.conf"]
    assert "SwitchName=cores Switches=pod-[" in topo
    assert (
        topo.count("SwitchName=pod-")
        == design.fabric.connectivity.num_spines // design.fabric.connectivity.spines_per_pod
    )


def test_spare_nodes_stay_out_of_the_job(lab_design: Design) -> None:
    script = {f.path: f.content for f in render(lab_design, ["slurm"])}["slurm/train.sbatch"]
    assert f"#SBATCH --nodes={lab_design.compute.num_training_nodes}\n" in script
    assert (
        "PartitionName=spare Nodes=gpu-0007"
        in {f.path: f.content for f in render(lab_design, ["slurm"])}["slurm/slurm.conf"]
    )


def test_spec_copy_reads_back(lab_design: Design, tmp_path: Path) -> None:
    text = {f.path: f.content for f in render(lab_design, ["slurm"])}[
        "slurm/clusterforge-spec.yaml"
    ]
    (tmp_path / "spec.yaml").write_text(text)
    assert load_spec(tmp_path / "spec.yaml") == lab_design.spec


def test_unknown_target_is_one_clear_error() -> None:
    with pytest.raises(GenerateError, match="did you mean 'slurm'"):
        parse_targets("slurmm")
    assert parse_targets("monitoring, slurm") == ["monitoring", "slurm"]


def test_cli_only_writes_chosen_targets(tmp_path: Path) -> None:
    spec = str(SPECS / "lab-leaf-spine.yaml")
    assert main(["generate", spec, "-o", str(tmp_path), "--only", "slurm,monitoring"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["monitoring", "slurm"]
    assert main(["generate", spec, "-o", str(tmp_path), "--only", "bogus"]) == 1


def test_failure_leaves_the_output_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = str(SPECS / "lab-leaf-spine.yaml")
    assert main(["generate", spec, "-o", str(tmp_path), "--only", "slurm"]) == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def broken(design: Design) -> list[GeneratedFile]:
        raise GenerateError("broken generator")

    monkeypatch.setitem(bundle.TARGETS, "monitoring", broken)
    assert main(["generate", spec, "-o", str(tmp_path), "--only", "slurm,monitoring"]) == 1
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before


def test_rewrite_replaces_a_target_folder(tmp_path: Path) -> None:
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "stale.conf").write_text("old")
    (tmp_path / "notes.txt").write_text("mine")
    write_files([GeneratedFile("slurm/slurm.conf", "new\n")], tmp_path)
    assert sorted(p.name for p in (tmp_path / "slurm").iterdir()) == ["slurm.conf"]
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_paths_cannot_escape_the_output(tmp_path: Path) -> None:
    with pytest.raises(GenerateError):
        write_files([GeneratedFile("../evil", "x")], tmp_path / "out")


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("bad", ["gpu-0001;reboot", "gpu-$(id)", "gpu-0001 Gres=gpu:x:99"])
def test_unsafe_node_names_stop_every_generator(target: str, bad: str, lab_design: Design) -> None:
    """The spec restricts its own name; a name from anywhere else is checked again here."""
    names = [bad, *lab_design.compute.node_names[1:]]
    compute = lab_design.compute.model_copy(update={"node_names": names})
    racks = [
        rack.model_copy(
            update={
                "devices": [
                    d.model_copy(update={"name": bad}) if d.name == "gpu-0001" else d
                    for d in rack.devices
                ]
            }
        )
        for rack in lab_design.racks
    ]
    design = lab_design.model_copy(update={"compute": compute, "racks": racks})
    with pytest.raises(GenerateError, match="not a valid name"):
        render(design, [target])
