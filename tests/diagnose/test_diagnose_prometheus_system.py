"""Each verdict from a real Prometheus: every scenario produces exactly its verdicts."""

from __future__ import annotations

import pytest
from scenarios import SCENARIOS, Scenario

from clusterforge.diagnose import (
    DiagnoseRequest,
    DiagnoseResult,
    JobSelector,
    NoSeriesError,
    PrometheusUnreachableError,
    run_diagnose,
)
from conftest import LoadedPrometheus

pytestmark = pytest.mark.system


def _diagnose(
    prom: LoadedPrometheus, selector: JobSelector, tokens_query: str | None = None
) -> DiagnoseResult:
    request = DiagnoseRequest(
        prometheus_url=prom.url,
        selector=selector,
        window="30m",
        at_s=prom.at_s,
        tokens_query=tokens_query,
    )
    return run_diagnose(request)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.key)
def test_each_scenario_gives_exactly_its_verdicts(
    loaded_prometheus: LoadedPrometheus, scenario: Scenario
) -> None:
    result = _diagnose(loaded_prometheus, JobSelector(job=scenario.job))
    diagnosis = result.diagnosis
    assert diagnosis.verdicts == scenario.expected
    assert diagnosis.num_gpus == scenario.num_nodes * scenario.gpus_per_node
    assert {n.node for n in diagnosis.nodes} == {
        scenario.node(i) for i in range(scenario.num_nodes)
    }


def _scenario(key: str) -> Scenario:
    return next(s for s in SCENARIOS if s.key == key)


def test_straggler_names_the_slow_node_and_the_slow_gpu(
    loaded_prometheus: LoadedPrometheus,
) -> None:
    node = _diagnose(loaded_prometheus, JobSelector(job=_scenario("slownode").job))
    gpu = _diagnose(loaded_prometheus, JobSelector(job=_scenario("slowgpu").job))
    lagging = [f for f in node.diagnosis.findings if f.verdict == "straggler"]
    assert [f.subject for f in lagging] == ["slownode-02"]
    assert lagging[0].evidence["sm_clock_mhz"] == 1500.0
    assert lagging[0].evidence["median_sm_clock_mhz"] == 1980.0
    lagging = [f for f in gpu.diagnosis.findings if f.verdict == "straggler"]
    assert [f.subject for f in lagging] == ["slowgpu-01/gpu1"]


def test_readings_carry_the_generated_numbers(loaded_prometheus: LoadedPrometheus) -> None:
    result = _diagnose(loaded_prometheus, JobSelector(job=_scenario("congested").job))
    host = result.readings.nodes[0]
    assert host.pause_share == pytest.approx(0.3)
    assert host.drop_share == pytest.approx(0.01)  # 20k of 2M packets per second
    assert host.nic_line_share == pytest.approx(0.2)
    assert host.cpu_busy_share == pytest.approx(0.3)
    assert host.tcp_retransmit_share == pytest.approx(1e-4)
    gpu = result.readings.gpus[0]
    assert gpu.pcie_gbyte_per_s == pytest.approx(4.0)
    assert gpu.fb_used_share == pytest.approx(0.75)
    assert gpu.nvlink_gbyte_per_s is None  # not collected: no reading, no rule


def test_violation_nanoseconds_read_as_a_share_of_time(
    loaded_prometheus: LoadedPrometheus,
) -> None:
    """0.4 s of power violation per second, counted in nanoseconds, is a 0.4 share."""
    result = _diagnose(loaded_prometheus, JobSelector(job=_scenario("throttled").job))
    for gpu in result.readings.gpus:
        assert gpu.power_violation_share == pytest.approx(0.4)
        assert gpu.thermal_violation_share == pytest.approx(0.0)


def test_host_list_selects_the_same_gpus_as_the_job(loaded_prometheus: LoadedPrometheus) -> None:
    by_nodes = _diagnose(loaded_prometheus, JobSelector(nodes=("memory-00", "memory-01")))
    assert by_nodes.diagnosis.verdicts == {"memory-bound"}
    assert by_nodes.diagnosis.num_gpus == 4


def test_tokens_query_is_read(loaded_prometheus: LoadedPrometheus) -> None:
    query = 'sum(avg_over_time(train_tokens_per_second{hpc_job="101"}[30m]))'
    result = _diagnose(loaded_prometheus, JobSelector(job="101"), tokens_query=query)
    assert result.readings.tokens_per_s == pytest.approx(2.0e5)


def test_unknown_job_says_no_series(loaded_prometheus: LoadedPrometheus) -> None:
    with pytest.raises(NoSeriesError, match="Slurm job 999"):
        _diagnose(loaded_prometheus, JobSelector(job="999"))


def test_unreachable_prometheus_is_one_clear_error() -> None:
    request = DiagnoseRequest(
        prometheus_url="http://127.0.0.1:9", selector=JobSelector(job="1"), at_s=0.0
    )
    with pytest.raises(PrometheusUnreachableError, match="cannot reach Prometheus"):
        run_diagnose(request)
