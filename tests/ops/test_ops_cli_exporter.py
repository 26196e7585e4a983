"""`clusterforge check` / `clusterforge exporter` end to end on recorded readings."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from ops_fixtures import NVML_FIXTURES
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.ops.checker import build_checker
from clusterforge.ops.expect import ExpectOverrides, node_facts
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.serve import serve_metrics
from clusterforge.spec import load_spec

EXPECT = ["--gpu", "h100-sxm", "--num-gpus", "8", "--num-nics", "8", "--nic-gbit-per-s", "400",
          "--fabric", "infiniband", "--mount", "/scratch"]  # fmt: skip


def check_args(nvml: str, root: Path, *extra: str) -> list[str]:
    return ["check", "--nvml-fixture", str(NVML_FIXTURES / nvml), "--sysfs-root", str(root),
            "--node", "gpu-0001", "--timeout-s", "4", *EXPECT, *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("nvml", "code", "status"),
    [
        ("h100-healthy.json", 0, "pass"),
        ("h100-xid79.json", 1, "fail"),
        ("nvml-missing.json", 2, "unknown"),
    ],
)
def test_check_json_exit_codes(
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
    nvml: str,
    code: int,
    status: str,
) -> None:
    assert main(check_args(nvml, fake_root("ib-8x400-healthy.json"), "--json")) == code
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == status and data["exit_code"] == code and data["node"] == "gpu-0001"
    assert {"check", "status", "severity", "subject", "observed", "expected", "remedy"} <= set(
        data["results"][0]
    )
    assert data["reading"]["gpu"]["driver_version"] in (None, "550.90.07")


def test_check_table_shows_failures_and_remedies(
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    assert main(check_args("h100-row-remap-failure.json", fake_root("ib-nic-200g.json"))) == 1
    out = capsys.readouterr().out
    assert "gpu.memory_repair" in out and "row remapping failed" in out and "RMA" in out
    assert "mlx5_2/1" in out and "200.0 Gb/s" in out


def test_check_with_spec_and_site_xid_policy(
    fake_root: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("num_gpus: 64\nnode: dgx-h100\n")
    policy = tmp_path / "xid.yaml"
    policy.write_text("xids:\n  79: ignore\n")
    root = fake_root("ib-8x400-healthy.json")
    args = ["check", "--json", "--expect", str(spec), "--nvml-fixture", str(NVML_FIXTURES / "h100-xid48.json"),
            "--sysfs-root", str(root), "--node", "gpu-0001"]  # fmt: skip
    assert main(args) == 1
    capsys.readouterr()
    args[5] = str(NVML_FIXTURES / "h200-healthy.json")
    assert main(args) == 1  # an H200 where the design has H100s
    assert "gpu.model" in capsys.readouterr().out
    xid79 = ["check", "--json", "--nvml-fixture", str(NVML_FIXTURES / "h100-xid79-healed.json"), "--sysfs-root",
             str(fake_root("ib-xid-kernel.json")), "--node", "n1"]  # fmt: skip
    capsys.readouterr()
    assert main(xid79) == 1  # XID 79 in the kernel log
    report = json.loads(capsys.readouterr().out)
    assert (report["schema_version"], report["command"]) == (1, "check")
    assert main([*xid79, "--xid-policy", str(policy)]) == 0


def test_bad_spec_is_one_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("num_gpus: 64\nnode: dgx-h1000\n")
    assert (
        main(
            [
                "check",
                "--expect",
                str(spec),
                "--nvml-fixture",
                str(NVML_FIXTURES / "h100-healthy.json"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "dgx-h1000" in err and "Traceback" not in err


OVERRIDES = ExpectOverrides(gpu_id="h100-sxm", num_gpus=8, num_compute_nics=8,
                            nic_gbit_per_s=400.0, fabric="infiniband", mounts=("/scratch",))  # fmt: skip


def _options(root: Path, nvml: str) -> SourceOptions:
    return SourceOptions(node="gpu-0001", nvml_fixture=NVML_FIXTURES / nvml, sysfs_root=root,
                         budget_s=4.0, overrides=OVERRIDES)  # fmt: skip


def _families(exporter: Exporter) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = generate_latest(exporter.registry).decode()
    return {
        f.name: [(s.labels, s.value) for s in f.samples if not s.name.endswith("_created")]
        for f in text_string_to_metric_families(text)
    }


def test_exporter_metrics_carry_node_gpu_check_nic_labels(fake_root: Callable[[str], Path]) -> None:
    exporter = Exporter(
        build_checker(_options(fake_root("ib-error-counters.json"), "h100-xid48.json"))
    )
    exporter.refresh()
    families = _families(exporter)
    statuses = {
        (s["check"], s["gpu"], s["nic"]): v for s, v in families["clusterforge_check_status"]
    }
    assert statuses[("gpu.xid", "5", "")] == 3  # fail
    severities = {s["check"]: s["severity"] for s, _v in families["clusterforge_check_status"]}
    assert severities["gpu.xid"] == "critical" and severities["nic.errors"] == "warning"
    assert statuses[("gpu.xid", "4", "")] == 0  # pass
    assert statuses[("nic.errors", "", "mlx5_1")] == 1  # warn
    assert families["clusterforge_node_healthy"] == [({"node": "gpu-0001"}, 0.0)]
    counters = {(s["nic"], s["counter"]): v for s, v in families["clusterforge_nic_counter"]}
    assert counters[("mlx5_1", "symbol_error")] == 1543
    temps = {s["gpu"]: v for s, v in families["clusterforge_gpu_temperature_celsius"]}
    assert len(temps) == 8 and all(20 < t < 90 for t in temps.values())
    assert families["clusterforge_driver_info"][0][0]["driver_version"] == "550.90.07"


def test_exporter_second_run_judges_counter_increase(fake_root: Callable[[str], Path]) -> None:
    # the first run sees 1543 symbol errors since boot (warn); the second sees no increase
    checker = build_checker(_options(fake_root("ib-error-counters.json"), "h100-healthy.json"))
    exporter = Exporter(checker)
    first, second = exporter.refresh(), exporter.refresh()
    pick = [
        lambda r: next(
            x.status for x in r.results if x.check == "nic.errors" and x.subject == "mlx5_1/1"
        )
    ]
    assert (pick[0](first), pick[0](second)) == ("warn", "pass")


def test_exporter_serves_http(fake_root: Callable[[str], Path]) -> None:
    exporter = Exporter(
        build_checker(_options(fake_root("ib-8x400-healthy.json"), "h100-healthy.json"))
    )
    exporter.refresh()
    port = _free_port()
    server = serve_metrics(exporter, "127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'clusterforge_node_healthy{node="gpu-0001"} 1.0' in body


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text("num_gpus: 64\nnode: dgx-h100\n")  # 8 training nodes + 1 spare
    return spec


def test_node_not_in_the_design_could_not_be_checked_with_suggestions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--expect", str(_spec(tmp_path)), "--node", "gpu-009",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json")]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "could not check: node 'gpu-009' is not in the design" in err
    assert "did you mean 'gpu-0009'" in err and "Traceback" not in err


def test_design_facts_of_the_node_are_in_the_report_and_metrics(
    fake_root: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = fake_root("ib-8x400-healthy.json")
    # 16 training nodes and a spare on a free leaf port (at 8 nodes the fabric is one
    # 64-port switch and the spare stays cold, on no leaf)
    spec = tmp_path / "big.yaml"
    spec.write_text("num_gpus: 128\nnode: dgx-h100\n")
    args = ["check", "--json", "--expect", str(spec), "--node", "gpu-0017",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"), "--sysfs-root", str(root)]  # fmt: skip
    assert main(args) == 0
    facts = json.loads(capsys.readouterr().out)["node_facts"]
    assert facts["name"] == "gpu-0017" and facts["spare"] is True
    assert facts["rack"] and facts["leaves"][0].startswith("leaf-")
    assert main([a for a in args if a != "--json"]) == 0
    assert "spare" in capsys.readouterr().out
    options = SourceOptions(node="gpu-0001", spec_path=_spec(tmp_path), sysfs_root=root,
                            nvml_fixture=NVML_FIXTURES / "h100-healthy.json", budget_s=4.0)  # fmt: skip
    exporter = Exporter(build_checker(options))
    exporter.refresh()
    (info,) = _families(exporter)["clusterforge_node_info"]
    wanted = node_facts(plan(load_spec(_spec(tmp_path))), "gpu-0001")
    assert (info[0]["role"], info[0]["rack"]) == ("training", wanted.rack)


def test_unreachable_scheduler_is_an_alert_not_a_crash(
    fake_root: Callable[[str], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    args = check_args("h100-xid79.json", fake_root("ib-8x400-healthy.json"), "--json",
                      "--action", "slurm-drain")  # fmt: skip
    assert main(args) == 1  # the verdict stands
    captured = capsys.readouterr()
    action = json.loads(captured.out)["action"]
    assert action["kind"] == "error" and "sinfo not found" in action["detail"]
    assert "ALERT" in captured.err


def test_exporter_for_a_node_not_in_the_design_is_one_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["exporter", "--expect", str(_spec(tmp_path)), "--node", "gpu-01",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json")]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "not in the design" in err and "Traceback" not in err


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_the_exporter_command_serves_at_once_and_stops_on_ctrl_c(
    fake_root: Callable[[str], Path], stop_signal: signal.Signals
) -> None:
    port = _free_port()
    args = [sys.executable, "-m", "clusterforge.cli.main", "exporter", "--address", "127.0.0.1",
            "--port", str(port), "--node", "gpu-0001", "--interval-s", "3600",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"),
            "--sysfs-root", str(fake_root("ib-8x400-healthy.json")), "--timeout-s", "4"]  # fmt: skip
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        body = ""
        deadline = time.monotonic() + 30
        while "clusterforge_node_healthy" not in body and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.1)
        assert 'clusterforge_node_healthy{node="gpu-0001"} 1.0' in body
        process.send_signal(stop_signal)  # SIGTERM: what systemctl stop sends
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        _out, err = process.communicate()
    assert f"on http://127.0.0.1:{port}/metrics" in err and "Traceback" not in err


def test_a_signal_while_the_exporter_starts_stops_it_cleanly(
    fake_root: Callable[[str], Path],
) -> None:
    """A Ctrl-C that came before the wait (while the banner was printed) raised in the
    middle of the start; now it is the same orderly stop at any moment."""
    port = _free_port()
    args = [sys.executable, "-m", "clusterforge.cli.main", "exporter", "--address", "127.0.0.1",
            "--port", str(port), "--node", "gpu-0001", "--interval-s", "3600",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"),
            "--sysfs-root", str(fake_root("ib-8x400-healthy.json")), "--timeout-s", "4"]  # fmt: skip
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the moment the port is bound, before the wait
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
        _out, err = process.communicate()
    assert "Traceback" not in err and "Aborted" not in err
