"""The pure parts of ``rehearse``: drill results and report, readings, CLI parsing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from rich.console import Console

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.errors import AdapterError
from clusterforge.rehearse import cluster
from clusterforge.rehearse.emulated import EmulatedSlurm, Ports
from clusterforge.rehearse.fixtures import healthy_readings, write_readings, xid_readings
from clusterforge.rehearse.model import DrillResult, RehearseReport
from clusterforge.report.rehearse import print_rehearse, rehearse_json, seconds
from tests.conftest import make_spec

SPEC_YAML = "name: lab\nnum_gpus: 16\nnode: dgx-h100\nspare_fraction: 0\n"


def _report(*drills: DrillResult, kept: bool = False) -> RehearseReport:
    reach = {"SLURM_CONF": "/w/slurm/slurm.conf"} if kept else {}
    return RehearseReport("cf", ("gpu-0001", "gpu-0002"), drills, Path("/w"), kept, reach)


def test_a_failed_drill_fails_the_rehearsal_and_a_skipped_one_does_not() -> None:
    passed = DrillResult("bring-up", "pass", ("2/2 idle",), 3.0)
    skipped = DrillResult("prometheus", "skip", ("no DCGM",))
    failed = DrillResult("xid", "fail", ("not drained",), 30.0, detect_s=2.0)
    assert _report(passed, skipped).exit_code == 0
    assert _report(passed, skipped, failed).exit_code == 1


def test_json_carries_every_drill_with_its_timing_rounded() -> None:
    drill = DrillResult("xid", "pass", ("drained",), 4.321, 2.04, 2.061, 2.255)
    data = json.loads(rehearse_json(_report(drill)))
    assert data["exit_code"] == 0 and data["nodes"] == ["gpu-0001", "gpu-0002"]
    assert data["drills"] == [
        {
            "drill": "xid",
            "verdict": "pass",
            "evidence": ["drained"],
            "duration_s": 4.32,
            "detect_s": 2.04,
            "drain_s": 2.06,
            "recover_s": 2.25,
        }
    ]


def test_table_shows_verdicts_times_evidence_and_how_to_reach_a_kept_cluster() -> None:
    console = Console(record=True, width=200)
    drill = DrillResult("xid", "fail", ("sinfo: idle|[none]",), 31.0, detect_s=2.0)
    print_rehearse(_report(drill, kept=True), console)
    text = console.export_text()
    assert "xid" in text and "fail" in text and "31.0 s" in text and "2.0 s" in text
    assert "sinfo: idle|[none]" in text  # evidence printed literally, not as markup
    assert "SLURM_CONF: /w/slurm/slurm.conf" in text
    assert seconds(None) == ""


def _check(
    readings: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> tuple[int, set[str]]:
    sysfs = tmp_path / "sys"
    sysfs.mkdir(exist_ok=True)
    code = main(["check", "--json", "--node", "gpu-0001", "--nvml-fixture", str(readings),
                 "--sysfs-root", str(sysfs), "--gpu", "h100-sxm", "--num-gpus", "8",
                 "--num-nics", "0", "--state-file", "none"])  # fmt: skip
    results = json.loads(capsys.readouterr().out)["results"]
    return code, {r["check"] for r in results if r["status"] == "fail"}


def test_healthy_readings_pass_the_check_and_xid79_fails_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    design = plan(make_spec(num_gpus=16, spare_fraction=0))
    path = tmp_path / "node.json"
    write_readings(path, healthy_readings(design))
    assert _check(path, capsys, tmp_path) == (0, set())
    write_readings(path, xid_readings(design, gpu_index=3))
    assert _check(path, capsys, tmp_path) == (1, {"gpu.xid", "gpu.nvml"})
    assert not path.with_suffix(".tmp").exists()


def test_the_design_is_resized_to_the_rehearsed_nodes(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: big\nnum_gpus: 512\nnode: dgx-h100\n")
    design = cluster.rehearsal_design(spec, 3)
    assert design.compute.node_names == ["gpu-0001", "gpu-0002", "gpu-0003"]


def test_missing_slurm_or_root_exits_2_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_YAML)
    monkeypatch.setattr(
        cluster, "missing_requirements", lambda drills=(): ["slurmctld (apt-get install)"]
    )
    assert main(["rehearse", str(spec), "--nodes", "2"]) == 2
    assert "needs slurmctld (apt-get install)" in capsys.readouterr().err


def test_a_drill_that_needs_torch_says_so_before_the_lab_opens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without torch the accept worker's all_reduce cannot run; a fresh install used to learn
    it from an opaque 'gave no result' minutes into the rehearsal."""
    real = cluster.importlib.util.find_spec
    monkeypatch.setattr(
        cluster.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )
    missing = " ".join(cluster.missing_requirements(("bring-up", "slow-node")))
    assert "torch for the slow-node drill" in missing and "pip install torch" in missing
    assert "torch" not in " ".join(cluster.missing_requirements(("bring-up", "xid")))


def test_an_unknown_drill_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_YAML)
    assert main(["rehearse", str(spec), "--drills", "bring-up,nic-flop"]) == 1
    err = capsys.readouterr().err
    assert "drills: unknown nic-flop" in err and "nic-flap" in err and "slow-node" in err


def test_a_running_checker_sees_its_replayed_readings_change(tmp_path: Path) -> None:
    """The exporter builds its checker once; a drill breaks the node by rewriting the file."""
    from clusterforge.ops.checker import build_checker
    from clusterforge.ops.expect import ExpectOverrides
    from clusterforge.ops.options import SourceOptions

    design = plan(make_spec(num_gpus=16, spare_fraction=0))
    path = tmp_path / "node.json"
    write_readings(path, healthy_readings(design))
    (tmp_path / "sys").mkdir()
    overrides = ExpectOverrides(gpu_id="h100-sxm", num_gpus=8, num_compute_nics=0)
    source = SourceOptions(node="gpu-0001", nvml_fixture=path, sysfs_root=tmp_path / "sys",
                           budget_s=10, overrides=overrides)  # fmt: skip
    checker = build_checker(source)
    assert checker.run().exit_code == 0
    write_readings(path, xid_readings(design, gpu_index=3))
    assert checker.run().exit_code == 1


def test_prometheus_config_keeps_the_generated_rules_and_points_at_the_local_exporters() -> None:
    import yaml

    from clusterforge.generate.monitoring.files import monitoring_files
    from clusterforge.rehearse.prom import FAST_INTERVAL_S, ScrapeTargets, prometheus_config

    design = plan(make_spec(num_gpus=16, spare_fraction=0))
    files = {f.path: f.content for f in monitoring_files(design)}
    generated = yaml.safe_load(files["monitoring/prometheus.yml"])
    targets = {"gpu-0001": "127.0.0.1:18951", "gpu-0002": "127.0.0.1:18952"}
    config = prometheus_config(generated, ScrapeTargets(clusterforge=targets))
    assert config["rule_files"] == generated["rule_files"]
    assert "alerting" not in config
    assert config["global"]["external_labels"] == generated["global"]["external_labels"]
    assert config["global"]["scrape_interval"] == f"{FAST_INTERVAL_S}s"
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "clusterforge"
    assert [(c["targets"], c["labels"]["node"]) for c in job["static_configs"]] == [
        (["127.0.0.1:18951"], "gpu-0001"),
        (["127.0.0.1:18952"], "gpu-0002"),
    ]
    assert all(c["labels"]["cluster"] == design.spec.name for c in job["static_configs"])


def test_a_port_left_listening_by_a_killed_run_is_a_clear_error(tmp_path: Path) -> None:
    holder = socket.create_server(("", 0))  # stands for a slurmd an earlier run left
    taken = holder.getsockname()[1]
    slurm = EmulatedSlurm(
        tmp_path, tmp_path, ports=Ports(taken - 1, taken - 1, 1), nodes=["n1", "n2"]
    )
    try:
        with pytest.raises(AdapterError, match=rf"port\(s\) {taken} of this emulated") as err:
            slurm.start()
    finally:
        holder.close()
    assert f"sport = :{taken}" in str(err.value)
    assert slurm.processes == []  # nothing started
