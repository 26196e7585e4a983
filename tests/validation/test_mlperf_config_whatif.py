"""``benchmarks/mlperf_config_whatif.py``: the probes move the MLPerf development rows the
way the docs state (cuDNN attention and a zero TP exposure make the v4.1 Eos n32 row faster,
an unoverlapped DP step makes the Cisco 8B row slower but still optimistic), change only the
rows they name, and leave the model as it was. Only calibration and development rows are
read."""

from __future__ import annotations

from benchmarks.mlperf_config_whatif import (
    CISCO_ROW,
    CUDNN_ROWS,
    EOS_ROW,
    _cudnn,
    _no_dp_overlap,
    _tp_zero_errors,
)

from clusterforge.perf import exposure
from validation.runs import Run, load_runs, predict_run


def _run(name: str) -> Run:
    return next(r for r in load_runs() if r.name == name)


def test_cudnn_attention_makes_the_v41_h100_rows_faster_and_touches_no_other_row() -> None:
    for name in CUDNN_ROWS:
        run = _run(name)
        assert run.subset == "development"
        assert predict_run(_cudnn(run)).error > predict_run(run).error
    other = _run(CISCO_ROW)
    assert _cudnn(other) is other


def test_the_unoverlapped_dp_bound_leaves_the_cisco_row_optimistic() -> None:
    run = _run(CISCO_ROW)
    assert run.subset == "development"
    exposed = predict_run(_no_dp_overlap(run)).error
    assert 0.0 < exposed < predict_run(run).error


def test_the_tp_bound_patch_undoes_itself_and_speeds_the_eos_row() -> None:
    original = exposure._tp_exposed_s
    errors = _tp_zero_errors()
    assert exposure._tp_exposed_s is original
    assert errors[EOS_ROW][2] > predict_run(_run(EOS_ROW)).error
