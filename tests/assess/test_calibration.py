"""``--calibration``: a cluster's measured rates replace the model's, and the prediction moves
with them (direction and size), with clear errors for a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.accept.calibration import calibration_from_report
from clusterforge.assess import PredictRequest, StudyRequest, load_calibration, predict, simulate
from clusterforge.catalog import load_catalog
from clusterforge.design import plan as design_plan
from clusterforge.errors import AcceptError, SpecError
from clusterforge.perf.calibration import calibrated_perf, calibration_from_dict
from clusterforge.perf.roofline import gpu_perf, load_constants
from clusterforge.spec import load_spec

REPORT = Path(__file__).parents[1] / "accept" / "fixtures" / "accept-report-2x8-h100.json"
H100_MAMF = 794.5
# The model's rate for accept's 8192^3 GEMM on an H100: 2,048 tiles of 128 x 256 in 16 waves
# over 132 SMs (gemm_shape_efficiency 32/33).
H100_ACCEPT_GEMM = H100_MAMF * 32 / 33


@pytest.fixture(scope="module")
def design():
    return design_plan(load_spec(None))  # the built-in 512 x H100 spec, Llama 3 70B


def test_accept_report_becomes_cluster_figures() -> None:
    figures = calibration_from_report(json.loads(REPORT.read_text()))
    assert figures["gemm_tflops"] == pytest.approx(0.8 * H100_ACCEPT_GEMM, abs=0.05)  # median
    assert figures["hbm_gbyte_per_s"] == pytest.approx(2600.0)
    assert {c["op"] for c in figures["collectives"]} == {"all_reduce"}
    assert all(c["num_nodes"] == 2 and c["ranks"] == 16 for c in figures["collectives"])


def test_measured_rates_replace_the_gpu_ceilings() -> None:
    h100 = gpu_perf(load_catalog().gpus["h100-sxm"], "fp8")
    """The ceiling becomes the one at which the model's 8192^3 GEMM runs at the measured
    rate: 80 % of the model's rate for that GEMM is 80 % of the ceiling."""
    measured = {"gemm_tflops": 0.8 * H100_ACCEPT_GEMM}
    calibrated = calibrated_perf(h100, calibration_from_dict(measured))
    assert calibrated.bf16_matmul_tflops == pytest.approx(0.8 * H100_MAMF)
    assert calibrated.matmul_tflops == pytest.approx(0.8 * h100.matmul_tflops)  # FP8 follows
    healthy = calibrated_perf(h100, calibration_from_dict({"gemm_tflops": H100_ACCEPT_GEMM}))
    assert healthy.bf16_matmul_tflops == pytest.approx(H100_MAMF)  # as the model expects
    streaming = calibrated_perf(h100, calibration_from_dict({"hbm_gbyte_per_s": 2600.0}))
    assert streaming.hbm_gbyte_per_s * load_constants().hbm_efficiency == pytest.approx(2600.0)


def test_gemm_at_80_percent_slows_compute_by_a_quarter(design) -> None:
    """GEMM at 80 % of the catalog's rate: the compute-bound part of the step takes 1/0.8 =
    1.25x as long; memory-bound kernels and communication do not change, so the whole step
    slows by less than 25 % and more than half of that."""
    base = predict(design, PredictRequest()).outcome.predictions[0]
    slow = calibration_from_dict({"gemm_tflops": 0.8 * H100_ACCEPT_GEMM})
    calibrated = predict(design, PredictRequest(calibration=slow)).outcome
    moved = calibrated.predictions[0]
    assert 1.12 < moved.breakdown.compute_s / base.breakdown.compute_s <= 1.25
    assert 1.06 < moved.step_time_s / base.step_time_s < 1.25
    (change,) = calibrated.calibration_changes
    assert change.change == pytest.approx(-0.2)


def test_measured_collectives_slow_inter_node_communication(design) -> None:
    """The recorded 2-node all_reduce sweep is slower than the simulated fabric at every size
    (a cloud fabric against a rail-optimised InfiniBand design), so the data-parallel
    all-reduce of the prediction slows; the report's per-size changes are listed."""
    calibration = load_calibration(REPORT)
    only_collectives = calibration_from_dict(
        {"collectives": [vars(c) for c in calibration.collectives]}
    )
    base = predict(design, PredictRequest()).outcome.predictions[0]
    outcome = predict(design, PredictRequest(calibration=only_collectives)).outcome
    changes = outcome.calibration_changes
    assert len(changes) == 7 and all(c.change < 0 for c in changes)
    moved = outcome.predictions[0]
    assert moved.breakdown.compute_s == pytest.approx(base.breakdown.compute_s)
    assert moved.breakdown.dp_comm_s + moved.breakdown.pp_comm_s > (
        base.breakdown.dp_comm_s + base.breakdown.pp_comm_s
    )


@pytest.mark.parametrize(
    ("content", "names"),
    [
        ('{"gemm_tflops": -3}', "gemm_tflops"),
        ('{"gemm_tflop": 600}', "unknown field(s) gemm_tflop"),
        ('{"collectives": [{"op": "allreduce"}]}', "collectives[0].op"),
        ('{"collectives": [{"op": "all_reduce", "size_bytes": 1}]}', "busbw_gbyte_per_s"),
        ("{}", "no measurement"),
        ("[1, 2]", "top level is list"),
        ("not json", "not JSON"),
    ],
)
def test_a_bad_calibration_names_the_field_and_the_fix(tmp_path, content, names) -> None:
    path = tmp_path / "accept.json"
    path.write_text(content)
    with pytest.raises(SpecError, match="calibration") as caught:
        load_calibration(path)
    assert names in str(caught.value)


def test_a_bad_accept_report_names_the_field(tmp_path) -> None:
    report = json.loads(REPORT.read_text())
    report["results"][0]["unit"] = "GFLOP/s"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    with pytest.raises(AcceptError, match=r"results\[test=gemm, node=gpu-001\]\.unit"):
        load_calibration(path)


TWO_NODES = """\
name: two-h100
num_gpus: 16
node: dgx-h100
network:
  fabric: infiniband
  topology: rail-optimized
"""


def test_simulate_on_the_measured_nodes_gives_back_the_measurement(tmp_path) -> None:
    """Simulating the measured collective on the same 16 GPUs of 2 nodes, calibrated, gives
    the accept report's busbw at each measured size (and the plain simulation does not)."""
    spec = tmp_path / "two.yaml"
    spec.write_text(TWO_NODES)
    request = StudyRequest(specs=(str(spec),), collective="all_reduce", sizes=(2**24, 2**30))
    calibration = load_calibration(REPORT)
    (plain,) = simulate(request)
    (calibrated,) = simulate(request, calibration=calibration)
    measured = {c.size_bytes: c.busbw_gbyte_per_s for c in calibration.collectives}
    for before, after in zip(plain.results, calibrated.results, strict=True):
        assert after.busbw_gbyte_per_s == pytest.approx(measured[after.size_bytes], rel=1e-6)
        assert before.busbw_gbyte_per_s != pytest.approx(after.busbw_gbyte_per_s, rel=0.05)
    assert [row[0] for row in calibrated.calibrated_busbw] == [2**24, 2**30]


def test_predict_json_lists_what_the_calibration_changed(capsys) -> None:
    from clusterforge.cli.main import main

    assert main(["predict", "--calibration", str(REPORT), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["plans"]
    figures = {c["figure"]: c for c in row["calibration"]}
    assert figures["BF16 GEMM ceiling (MAMF)"]["change"] == pytest.approx(-0.2, abs=2e-3)
    assert figures["HBM streaming bandwidth"]["measured"] == pytest.approx(2600.0)
    assert sum(name.startswith("all_reduce busbw") for name in figures) == 7


def test_predict_refuses_a_bad_calibration_file_in_one_line(tmp_path, capsys) -> None:
    from clusterforge.cli.main import main

    bad = tmp_path / "accept.json"
    bad.write_text('{"hbm_gbyte_per_s": 0}')
    assert main(["predict", "--calibration", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "hbm_gbyte_per_s = 0" in err and "Traceback" not in err


def test_a_sweep_on_more_nodes_than_the_design_is_refused(tmp_path) -> None:
    spec = tmp_path / "two.yaml"
    spec.write_text(TWO_NODES)
    point = {"op": "all_reduce", "size_bytes": 2**30, "busbw_gbyte_per_s": 300.0}
    wide = calibration_from_dict({"collectives": [{**point, "ranks": 32, "num_nodes": 4}]})
    request = StudyRequest(specs=(str(spec),), collective="all_reduce", sizes=(2**30,))
    with pytest.raises(SpecError, match=r"collectives\[0\]: 32 ranks on 4 nodes"):
        simulate(request, calibration=wide)
