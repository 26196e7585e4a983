"""A plan that does not fit the GPU's memory is an error finding with no time to train, and
``plan``, ``report`` and ``goodput`` agree on it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from clusterforge.assess import REPORT, ExpectedPerformance, GoodputOutlook, Unavailable, assess
from clusterforge.design import plan
from clusterforge.spec import load_spec

LAB = Path("examples/lab-8-gpu.yaml")
# The report's parts that matter here: performance, goodput and the plan search.
STUDIES = replace(REPORT, busbw=False, break_even=False, goodput_runs=20)


def big_model_spec(folder: Path) -> Path:
    """The 8-GPU lab training the largest dense catalog model: 405B on 8 x 80 GB."""
    text = LAB.read_text().replace("model: llama3-8b", "model: llama3.1-405b")
    assert "llama3.1-405b" in text
    path = folder / "big.yaml"
    path.write_text(text)
    return path


def test_a_plan_that_does_not_fit_is_an_error_finding_without_time_to_train(tmp_path) -> None:
    assessment = assess(plan(load_spec(big_model_spec(tmp_path))), STUDIES)
    assert isinstance(assessment.performance, Unavailable)
    assert "GiB per GPU" in assessment.performance.reason
    assert isinstance(assessment.goodput, Unavailable)
    assert assessment.top_plans == ()
    errors = [f for f in assessment.design.findings if f.severity == "error"]
    assert [f.id for f in errors] == ["plan-exceeds-gpu-memory"]
    finding = errors[0]
    assert finding.numbers["hbm_gib"] == assessment.design.compute.gpu.hbm_gib
    assert float(finding.numbers["memory_per_gpu_gib"]) > 1000
    assert "tensor_parallel" in finding.fix


def test_plan_report_and_goodput_agree_on_a_plan_that_does_not_fit(tmp_path, capsys) -> None:
    from clusterforge.cli.main import main

    spec = str(big_model_spec(tmp_path))
    assert main(["plan", spec]) == 0  # like the design's own error findings: shown, exit 0
    out = capsys.readouterr().out
    assert "plan-exceeds-gpu-memory" in out
    assert "no time to train" in out
    assert "days for" not in out and "with failures" not in out
    page = tmp_path / "big.html"
    assert main(["report", spec, "-o", str(page)]) == 0  # with its studies
    assert "plan-exceeds-gpu-memory" in page.read_text()
    assert main(["goodput", spec, "--runs", "10"]) == 1
    err = capsys.readouterr().err
    assert "GiB per GPU" in err and "Traceback" not in err


def test_the_fitting_lab_plan_keeps_its_time_to_train() -> None:
    assessment = assess(plan(load_spec(LAB)), replace(STUDIES, top_plans=0))
    assert isinstance(assessment.performance, ExpectedPerformance)
    assert isinstance(assessment.goodput, GoodputOutlook)
    assert not [f for f in assessment.design.findings if f.id == "plan-exceeds-gpu-memory"]
