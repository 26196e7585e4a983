"""Goodput: Daly's model, the Monte Carlo that must agree with it, spares, the design link."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clusterforge.errors import CapacityError
from clusterforge.goodput import (
    GoodputInputs,
    LifeParams,
    daly_interval_s,
    expected_goodput,
    expected_wall_s,
    failure_classes,
    job_rates,
    simulate_lives,
    spare_pool,
)

H = 3600.0


def test_rates_reproduce_the_llama3_interruption_count() -> None:
    # 16,384 H100 in 2,048 nodes for 54 days: 419 unexpected interruptions (Table 5).
    rates = job_rates(num_gpus=16384, num_nodes=2048, num_nics=16384)
    assert rates.total_per_hour * 54 * 24 == pytest.approx(419, rel=0.005)
    assert {c.id for c in failure_classes()} >= {"gpu", "hbm", "host", "software"}
    assert rates.spare_per_hour < rates.total_per_hour


def test_daly_reduces_to_young_when_checkpoints_are_cheap() -> None:
    delta, mtbf = 10.0, 1e6
    assert daly_interval_s(delta, mtbf) == pytest.approx(math.sqrt(2 * delta * mtbf), rel=0.01)
    assert daly_interval_s(3.0 * H, 1.0 * H) == 1.0 * H  # delta >= 2M: tau = M


def test_daly_interval_minimises_expected_wall_time() -> None:
    delta, restart, mtbf = 120.0, 900.0, 3 * H
    best = daly_interval_s(delta, mtbf)

    def wall(tau: float) -> float:
        return expected_wall_s(1e6, tau_s=tau, delta_s=delta, restart_s=restart, mtbf_s=mtbf)

    assert wall(best) <= wall(best * 0.7)
    assert wall(best) <= wall(best * 1.4)


def test_no_failures_means_no_loss_beyond_checkpoints() -> None:
    wall = expected_wall_s(1000.0, tau_s=100.0, delta_s=5.0, restart_s=60.0, mtbf_s=math.inf)
    assert wall == 1050.0


@pytest.mark.parametrize("mtbf_h", [1.5, 6.0])
def test_monte_carlo_agrees_with_the_expected_model(mtbf_h: float) -> None:
    work, delta, restart = 20 * 24 * H, 90.0, 1200.0
    tau = daly_interval_s(delta, mtbf_h * H)
    params = LifeParams(
        work_s=work,
        tau_s=tau,
        delta_s=delta,
        restart_s=restart,
        mtbf_s=mtbf_h * H,
        p_spare=0.0,
        num_spares=0,
        repair_s=0.0,
    )
    lives = simulate_lives(params, runs=400, seed=1)
    # Whole segments in the simulation, the same count in the model.
    segments = math.ceil(work / tau)
    expected = expected_wall_s(
        segments * tau, tau_s=tau, delta_s=delta, restart_s=restart, mtbf_s=mtbf_h * H
    )
    stderr = lives.wall_s.std() / math.sqrt(lives.wall_s.size)
    assert abs(lives.wall_s.mean() - expected) < 4 * stderr + 0.002 * expected
    assert lives.failures.mean() == pytest.approx(expected / (mtbf_h * H), rel=0.05)


def test_spare_pool_queue_and_exhaustion_waits() -> None:
    pool = spare_pool(num_spares=2, spare_failures_per_h=1 / 24, repair_h=5 * 24)
    assert pool.mean_in_repair == pytest.approx(5.0)
    assert pool.p_no_spare > 0.8  # 2 spares against 5 nodes in repair on average
    assert pool.spares_for_99 >= 10
    base = LifeParams(
        work_s=30 * 24 * H,
        tau_s=3600.0,
        delta_s=60.0,
        restart_s=600.0,
        mtbf_s=24 * H,
        p_spare=1.0,
        num_spares=2,
        repair_s=5 * 24 * H,
    )
    few = simulate_lives(base, runs=200, seed=2)
    many = simulate_lives(LifeParams(**{**base.__dict__, "num_spares": 30}), runs=200, seed=2)
    assert few.spare_wait_s.mean() > 24 * H
    assert many.spare_wait_s.mean() == 0.0
    assert np.percentile(many.peak_in_repair, 50) >= 5


def test_a_job_that_can_never_finish_is_refused() -> None:
    rates = job_rates(num_gpus=10**6, num_nodes=10**5, num_nics=10**6, scale=50.0)
    inputs = GoodputInputs(work_s=1e6, delta_s=3600.0, relaunch_s=3600.0, rates=rates)
    with pytest.raises(CapacityError, match="never finish"):
        expected_goodput(inputs)


def test_goodput_of_a_design_and_its_cli(tmp_path) -> None:

    from clusterforge.cli.main import main
    from clusterforge.design import plan
    from clusterforge.goodput import goodput_report
    from clusterforge.spec import parse_spec

    spec = parse_spec(
        {"num_gpus": 512, "node": "dgx-h100", "workload": {"model": "llama3-70b", "tokens_b": 500}}
    )
    design = plan(spec)
    report = goodput_report(design, runs=200, days=20.0)
    data = report.as_dict()
    assert 0.5 < data["expected"]["ettr"] < 1.0
    assert data["monte_carlo"]["p90_days"] >= data["monte_carlo"]["p50_days"] >= 20.0
    # Async checkpoints pause training for less time than writing to storage.
    async_spec = spec.model_copy(
        update={"reliability": spec.reliability.model_copy(update={"checkpoint": "async"})}
    )
    async_report = goodput_report(plan(async_spec), runs=50, days=20.0)
    assert async_report.expected.checkpoint_s < report.expected.checkpoint_s
    assert data["what_if"]["half the failure rate"]["ettr"] > data["expected"]["ettr"]

    plot = tmp_path / "ttt.svg"
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "num_gpus: 64\nnode: dgx-h100\nworkload: {model: llama3-8b, tensor_parallel: 1}\n"
    )
    assert (
        main(["goodput", str(spec_file), "--days", "5", "--runs", "50", "--plot", str(plot)]) == 0
    )
    assert plot.read_text().count('<g id="bar-') == 30
    assert main(["goodput", str(spec_file), "--runs", "20", "--plot", "/nonexistent/x.svg"]) == 1


def test_goodput_of_a_fabric_only_spec_asks_for_a_workload(tmp_path, capsys) -> None:
    from clusterforge.cli.main import main

    spec_file = tmp_path / "fabric.yaml"
    spec_file.write_text("num_gpus: 64\nnode: dgx-h100\n")
    assert main(["goodput", str(spec_file), "--runs", "10"]) == 1
    err = capsys.readouterr().err
    assert "needs a workload" in err
    assert "Traceback" not in err
    # With --days the failure-free time is given, so no workload is needed.
    assert main(["goodput", str(spec_file), "--runs", "10", "--days", "3", "--json"]) == 0


def test_plan_reports_time_to_train_with_failures() -> None:
    from clusterforge.assess import assess
    from clusterforge.design import plan
    from clusterforge.report.expected import performance_json
    from clusterforge.spec import load_spec

    assessment = assess(plan(load_spec("examples/colo-512-h100.yaml")))
    perf = performance_json(assessment.performance, assessment.goodput)
    goodput = perf["goodput"]
    assert goodput["available"]
    assert 0.5 < goodput["ettr"] < 1.0
    assert goodput["expected_days"] > perf["time_to_train_days"]
    assert goodput["p90_days"] >= goodput["p50_days"]
    lost = goodput["lost_days_by_cause"]
    assert set(lost) == {"failures", "restarts", "checkpoints", "waiting_for_spares"}
    assert sum(lost.values()) == pytest.approx(
        goodput["expected_days"] - perf["time_to_train_days"], rel=1e-6
    )
    assert goodput["checkpoint_interval_steps"] == round(goodput["checkpoint_interval_steps"])


def test_predict_json_carries_time_to_train_with_failures(capsys) -> None:
    import json

    from clusterforge.cli.main import main

    assert main(["predict", "examples/colo-512-h100.yaml", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["plans"]
    goodput = rows[0]["goodput"]
    assert goodput["available"] and goodput["expected_days"] > rows[0]["time_to_train_days"]


def test_a_100k_gpu_checkpoint_is_not_free_nor_taken_within_a_step() -> None:
    from clusterforge.design import plan
    from clusterforge.goodput import goodput_report
    from clusterforge.perf import predict_workload
    from clusterforge.spec import load_spec

    design = plan(load_spec("examples/colossus-100k-h100.yaml"))
    step_s = predict_workload(design).step_time_s
    exp = goodput_report(design, runs=10).expected
    assert exp.checkpoint_s > 1.0  # a collective over 100,000 ranks and as many files
    assert exp.checkpoint_interval_s >= step_s
