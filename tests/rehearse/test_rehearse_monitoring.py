"""The monitoring pieces of ``rehearse`` without a cluster: the rehearsal copy of the rules,
the scrape configuration, the stand-in exporters' readings, the rerun rule of acceptance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.accept.suite import AcceptReport
from clusterforge.accept.verdicts import TestResult as Result
from clusterforge.design import plan
from clusterforge.generate.monitoring.files import monitoring_files
from clusterforge.rehearse import netns, standins
from clusterforge.rehearse.acceptance import TwoRuns, stand_in_failures
from clusterforge.rehearse.model import DrillResult
from clusterforge.rehearse.prom import ScrapeTargets, prometheus_config, rehearsal_rules
from tests.conftest import make_spec


def _generated() -> dict[str, str]:
    design = plan(make_spec(num_gpus=16, spare_fraction=0))
    return {f.path: f.content for f in monitoring_files(design)}


def test_the_rehearsal_rules_shorten_only_the_longer_for_durations() -> None:
    generated = _generated()["monitoring/rules/node.yml"]
    copy, num_changed = rehearsal_rules(generated, 15)
    assert num_changed == 2  # NodeUnhealthy and ExporterDown: 5m each
    rules = yaml.safe_load(copy)["groups"][0]["rules"]
    assert [r["for"] for r in rules] == ["15s", "15s"]
    before = yaml.safe_load(generated)["groups"][0]["rules"]
    assert [{k: v for k, v in r.items() if k != "for"} for r in rules] == [
        {k: v for k, v in r.items() if k != "for"} for r in before
    ]
    # a 'for:' already shorter than the rehearsal's stays as generated
    assert rehearsal_rules(generated, 600) == (generated.rstrip("\n") + "\n", 0)


def test_every_generated_rule_file_survives_the_rehearsal_copy() -> None:
    for path, content in _generated().items():
        if path.startswith("monitoring/rules/"):
            copy, _ = rehearsal_rules(content, 15)
            assert len(copy.splitlines()) == len(content.splitlines())
            assert "for: 1m" not in copy and "for: 5m" not in copy and "for: 10m" not in copy


def test_scrape_config_keeps_the_generated_jobs_that_have_local_exporters() -> None:
    generated = yaml.safe_load(_generated()["monitoring/prometheus.yml"])
    targets = ScrapeTargets(
        clusterforge={"gpu-0001": "127.0.0.1:1", "gpu-0002": "127.0.0.1:2"},
        node={"gpu-0001": "127.0.0.1:3", "gpu-0002": "127.0.0.1:4"},
    )
    config = prometheus_config(generated, targets)
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert set(jobs) == {"clusterforge", "node"}  # no dcgm stand-ins asked for, no PDU here
    (node_job,) = [j for j in generated["scrape_configs"] if j["job_name"] == "node"]
    assert jobs["node"]["metric_relabel_configs"] == node_job["metric_relabel_configs"]
    assert "relabel_configs" not in jobs["node"]  # the node label is set per target instead
    assert [c["labels"]["node"] for c in jobs["node"]["static_configs"]] == [
        "gpu-0001",
        "gpu-0002",
    ]


def _netdev(tmp_path: Path, *, flags: str, carrier: str | None, downs: int) -> Path:
    dev = tmp_path / "mlx5_0"
    dev.mkdir(exist_ok=True)
    (dev / "flags").write_text(flags + "\n")
    (dev / "carrier_down_count").write_text(f"{downs}\n")
    (dev / "speed").write_text("400000\n")
    if carrier is None:
        (dev / "carrier").unlink(missing_ok=True)  # reading it fails when administratively down
    else:
        (dev / "carrier").write_text(carrier + "\n")
    return dev


def _series(text: str) -> dict[str, float]:
    return {
        line.split("{")[0]: float(line.split()[-1])
        for line in text.splitlines()
        if not line.startswith("#")
    }


@pytest.mark.parametrize(
    ("flags", "carrier", "state", "phys"),
    [("0x1003", "1", 4, 5), ("0x1003", "0", 1, 3), ("0x1002", None, 1, 3)],
)
def test_a_roce_port_is_active_only_when_its_netdev_is_up_with_carrier(
    tmp_path: Path, flags: str, carrier: str | None, state: int, phys: int
) -> None:
    dev = _netdev(tmp_path, flags=flags, carrier=carrier, downs=3)
    series = _series(standins.link_metrics(dev, "mlx5_0"))
    assert series["node_infiniband_state_id"] == state
    assert series["node_infiniband_physical_state_id"] == phys
    assert series["node_infiniband_link_downed_total"] == 3
    assert series["node_infiniband_rate_bytes_per_second"] == 400e9 / 8
    assert 'device="mlx5_0",port="1"' in standins.link_metrics(dev, "mlx5_0")


def test_the_clock_stand_in_reports_the_share_it_ran_and_the_clock_it_implies(
    tmp_path: Path,
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2400.000\n")
    assert standins.nominal_clock_mhz(cpuinfo) == 2400.0
    assert standins.nominal_clock_mhz(tmp_path / "missing") == 1000.0
    share = standins._Clock.burst()
    assert 0 < share <= 1


def test_no_netns_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    reason = netns.netns_missing()
    assert reason is not None and ("not root" in reason or "ip" in reason)


def _run(gemm: dict[str, float], *fails: tuple[str, str]) -> AcceptReport:
    results = [Result("gemm", n, "pass", v, "TFLOP/s") for n, v in gemm.items()]
    results += [Result(test, node, "fail", 0.0, "") for test, node in fails]
    targets: Any = None
    return AcceptReport(tuple(gemm), targets, results, [], None)


HEALTHY = {"a": 1.0, "b": 0.45, "c": 1.1}  # b: 45 % of the median, noise on a shared machine


def test_stand_ins_fail_a_peer_figure_only_under_a_third_of_the_median() -> None:
    assert stand_in_failures(_run(HEALTHY)) == set()
    assert stand_in_failures(_run({**HEALTHY, "b": 0.2})) == {"gemm on b"}  # median 1.0
    # a failure that is not a peer comparison counts as accept gave it
    assert stand_in_failures(_run(HEALTHY, ("burn-in", "c"))) == {"burn-in on c"}


def test_a_failure_counts_only_when_the_rerun_repeats_it() -> None:
    noise = TwoRuns(_run({**HEALTHY, "b": 0.2}), _run({**HEALTHY, "a": 0.1}))
    assert noise.confirmed == set()
    assert any("a failure counts when a rerun repeats it" in line for line in noise.evidence())
    real = TwoRuns(_run({**HEALTHY, "c": 0.1}), _run({**HEALTHY, "c": 0.12}, ("burn-in", "a")))
    assert real.confirmed == {"gemm on c"}
    clean = TwoRuns(_run(HEALTHY), None)
    assert clean.confirmed == set() and clean.evidence()[-1] == "confirmed failures: none"


def test_the_nic_flap_drill_is_skipped_with_the_reason_where_namespaces_cannot_be_made(
    tmp_path: Path,
) -> None:
    from clusterforge.rehearse import run
    from clusterforge.rehearse.model import RehearseOptions
    from clusterforge.rehearse.prom import Monitoring

    lab: Any = None
    stage = run._Stage(lab, RehearseOptions(spec=tmp_path / "spec.yaml"))
    stage.monitoring = Monitoring("http://127.0.0.1:9")  # started, without link namespaces
    stage.link_skip = "not root: creating a network namespace needs CAP_SYS_ADMIN"
    result = run._guarded("nic-flap", stage, 0.0)
    assert (result.verdict, result.evidence) == ("skip", (stage.link_skip,))


def test_monitoring_that_failed_to_start_is_not_waited_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterforge.rehearse import run
    from clusterforge.rehearse.model import RehearseOptions

    calls: list[int] = []

    def fail(_stage: object) -> None:
        calls.append(1)
        raise TimeoutError("targets not all up")

    monkeypatch.setattr(run, "_start_monitoring", fail)
    monkeypatch.setattr(run.shutil, "which", lambda _name: "/usr/bin/prometheus")
    lab: Any = None
    stage = run._Stage(lab, RehearseOptions(spec=tmp_path / "spec.yaml"))
    first = run._guarded("prometheus", stage, 0.0)
    second = run._guarded("nic-flap", stage, 0.0)
    assert first.verdict == second.verdict == "fail" and len(calls) == 1
    assert "targets not all up" in second.evidence[0]


def test_the_accept_drill_runs_the_suite_then_reruns_only_after_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drill's own wiring, with accept's runs recorded: the suite it asks for, no
    localization, a rerun only when the first run fails, and a verdict from the confirmed
    failures.  (The suite itself runs through an emulated Slurm in
    tests/accept/test_accept_slurm_system.py, and through the rehearsal's cluster in the
    slow-node drill of tests/rehearse/test_rehearse_system.py.)"""
    from clusterforge.rehearse import acceptance
    from clusterforge.rehearse.model import RehearseOptions

    options = RehearseOptions(spec=tmp_path / "spec.yaml")
    lab: Any = None

    def drill(*runs: AcceptReport) -> tuple[DrillResult, list[tuple[Any, ...]]]:
        calls: list[tuple[Any, ...]] = []
        queue = list(runs)

        def once(_lab: Any, _options: Any, tests: Any, tag: str, *, localize: str) -> Any:
            calls.append((tests, tag, localize))
            return queue.pop(0)

        monkeypatch.setattr(acceptance, "accept_once", once)
        return acceptance.accept_drill(lab, options), calls

    clean, calls = drill(_run(HEALTHY))
    assert clean.verdict == "pass" and clean.name == "accept"
    assert calls == [(("node", "nccl", "net", "storage"), "accept", "never")]
    noise, calls = drill(_run({**HEALTHY, "b": 0.2}), _run(HEALTHY))
    assert noise.verdict == "pass" and [c[1] for c in calls] == ["accept", "accept-rerun"]
    assert any(line.startswith("run 2: ") for line in noise.evidence)
    real, _ = drill(_run({**HEALTHY, "c": 0.1}), _run({**HEALTHY, "c": 0.1}))
    assert real.verdict == "fail" and "confirmed failures: gemm on c" in real.evidence
    targets: Any = None
    empty, _ = drill(AcceptReport(("a",), targets, [], [], None))
    assert empty.verdict == "fail"  # a suite that measured nothing is no pass
