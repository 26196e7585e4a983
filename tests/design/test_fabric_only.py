"""A spec without a workload section plans the hardware and says what needs a workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.errors import PlanError, SpecError
from tests.conftest import make_spec

# 3 DGX H100: 24 GPUs. The default workload (TP 8, global batch 1,024) would need DP = 3 to
# divide 1,024, so only a spec without a workload section can describe this fabric.
FABRIC_ONLY = "name: fabric-only\nnum_gpus: 24\nnode: dgx-h100\n"


def test_the_default_workload_would_not_fit_this_size():
    with pytest.raises(SpecError, match="global_batch"):
        make_spec(num_gpus=24, workload={})


def test_fabric_only_spec_plans_the_hardware():
    design = plan(make_spec(num_gpus=24))
    assert design.job is None
    assert design.compute.num_training_gpus == 24
    assert design.fabric.num_switches > 0 and design.bom
    with pytest.raises(PlanError, match="needs a workload"):
        design.require_workload("predict")


def test_plan_command_prints_hardware_and_says_no_workload(tmp_path: Path, capsys):
    spec = tmp_path / "fabric.yaml"
    spec.write_text(FABRIC_ONLY)
    assert main(["plan", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "Compute" in out and "Cost and TCO" in out
    assert "needs a workload" in out


def test_predict_command_asks_for_a_workload(tmp_path: Path, capsys):
    spec = tmp_path / "fabric.yaml"
    spec.write_text(FABRIC_ONLY)
    assert main(["predict", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "needs a workload" in err


def test_generate_writes_the_cluster_files_without_a_job(tmp_path: Path, capsys):
    spec = tmp_path / "fabric.yaml"
    spec.write_text(FABRIC_ONLY)
    out = tmp_path / "out"
    assert main(["generate", str(spec), "-o", str(out)]) == 0
    assert (out / "slurm" / "slurm.conf").is_file()
    assert (out / "kubernetes" / "kueue.yaml").is_file()
    assert not (out / "slurm" / "train.sbatch").exists()
    assert not (out / "kubernetes" / "training-job.yaml").exists()
