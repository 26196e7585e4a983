"""``clusterforge diagnose`` end to end: exit codes, the text and JSON reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.cli.main import main
from conftest import LoadedPrometheus

EXAMPLE = Path(__file__).parents[2] / "examples" / "lab-8-gpu.yaml"


def test_unreachable_prometheus_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--prometheus", "http://127.0.0.1:9", "--job", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("could not diagnose: cannot reach Prometheus at http://127.0.0.1:9")
    assert len(err.strip().splitlines()) == 1


def test_bad_window_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--prometheus", "http://127.0.0.1:9", "--job", "1", "--since", "5"])
    assert code == 1
    assert "window '5' is not a duration" in capsys.readouterr().err


def test_job_and_nodes_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["diagnose", "--prometheus", "http://x", "--job", "1", "--nodes", "gpu-01"]
    assert main(argv) == 2
    assert "exactly one of --job and --nodes" in capsys.readouterr().err


@pytest.mark.system
def test_json_report_with_expectation(
    loaded_prometheus: LoadedPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diagnose", "--prometheus", loaded_prometheus.url, "--job", "101", "--json",
            "--at", str(loaded_prometheus.at_s), "--expect", str(EXAMPLE),
            "--tokens-query", 'sum(avg_over_time(train_tokens_per_second{hpc_job="101"}[30m]))']  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["schema_version"], data["command"]) == (1, "diagnose")
    assert data["verdict"] == "compute-bound"
    assert [n["verdict"] for n in data["nodes"]] == ["compute-bound", "compute-bound"]
    comparison = data["comparison"]
    assert comparison["basis"] == "tokens-per-s-per-gpu"
    assert comparison["achieved"] == pytest.approx(2.0e5 / 4)  # 4 GPUs in the scenario
    assert comparison["ratio"] == pytest.approx(comparison["achieved"] / comparison["predicted"])


@pytest.mark.system
def test_text_report_names_the_straggler_and_the_gap(
    loaded_prometheus: LoadedPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diagnose", "--prometheus", loaded_prometheus.url, "--nodes", "slownode-0[0-3]",
            "--at", str(loaded_prometheus.at_s), "--expect", str(EXAMPLE)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "8 GPUs on 4 nodes: straggler" in out
    assert "straggler slownode-02: " in out
    assert "sm_clock_mhz=1500" in out
    assert "tensor-active vs HFU" in out  # no tokens series: the proxy


@pytest.mark.system
def test_host_list_without_series_exits_2(
    loaded_prometheus: LoadedPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diagnose", "--prometheus", loaded_prometheus.url, "--nodes", "nope-[1-2]",
            "--at", str(loaded_prometheus.at_s)]  # fmt: skip
    assert main(argv) == 2
    assert "no DCGM_FI_PROF_GR_ENGINE_ACTIVE series for the named hosts" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("setting", "message"),
    [("memory_bound_dram=0.7", "does not exist (did you mean 'memory_bound_dram_min'?)"),
     ("memory_bound_dram_min=lots", "is not a number"),
     ("memory_bound_dram_min=80", "must be a share between 0 and 1"),
     ("min_peers=1", "at least 2 peers")],
)  # fmt: skip
def test_bad_threshold_is_a_user_error(
    setting: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diagnose", "--prometheus", "http://x", "--job", "1", "--threshold", setting]
    assert main(argv) == 1
    assert message in capsys.readouterr().err


@pytest.mark.system
def test_threshold_changes_the_verdict(
    loaded_prometheus: LoadedPrometheus, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["diagnose", "--prometheus", loaded_prometheus.url, "--job", "101", "--json",
            "--at", str(loaded_prometheus.at_s)]  # fmt: skip
    assert main([*base, "--threshold", "memory_bound_dram_min=0.4"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "memory-bound"  # DRAM 45 %


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--prometheus", "file:///etc/passwd", "--job", "1"], "must start with http://"),
     (["--prometheus", "http://x", "--job", '1"} or vector(1)'], "is not a Slurm job id"),
     (["--prometheus", "http://x", "--nodes", "gpu-[1-2"], "unbalanced brackets")],
)  # fmt: skip
def test_unsafe_input_never_reaches_a_query(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", *argv]) == 1
    assert message in capsys.readouterr().err
