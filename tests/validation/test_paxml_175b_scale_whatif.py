"""The replica-group parts bounded by ``benchmarks/paxml_175b_scale_whatif.py``: which rows
they apply to, that they grow with the replicas, and that even fully exposed they leave most
of the 175B's growth from 512 to 2,048 GPUs. Development rows only."""

from __future__ import annotations

from benchmarks.paxml_175b_scale_whatif import PARTS, ROWS_175B, TWINS, part_ms, sync_s

from validation.runs import Run, load_runs, predict_run


def _rows() -> dict[str, Run]:
    return {r.name: r for r in load_runs() if r.subset == "development"}


def _step_ms(run: Run) -> tuple[float, float]:
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    predicted_ms = pred.step_time_s * 1e3
    return predicted_ms * float(getattr(pred, run.metric)) / run.published, predicted_ms


def test_twins_are_development_rows() -> None:
    rows = _rows()
    for series in TWINS:
        for name in series:
            assert name in rows, name


def test_sync_needs_replicas() -> None:
    """At 128 GPUs the 175B's FSDP group is the whole mesh: no replica all-reduce."""
    rows = _rows()
    assert sync_s(rows[ROWS_175B[0]]) == 0.0
    times = [sync_s(rows[name]) for name in ROWS_175B[1:]]
    assert 0.0 < times[0] < times[1]
    assert sync_s(rows[ROWS_175B[2]], 4.0) > times[1]


def test_parts_leave_most_of_the_growth_to_2048() -> None:
    """From 512 to 2,048 GPUs the measured step grows far more than the model's growth plus
    every part fully exposed, FP32 gradients included."""
    rows = _rows()
    pub_512, pred_512 = _step_ms(rows[ROWS_175B[1]])
    pub_2048, pred_2048 = _step_ms(rows[ROWS_175B[2]])
    p512, p2048 = part_ms(rows[ROWS_175B[1]]), part_ms(rows[ROWS_175B[2]])
    parts = sum(p2048[p] - p512[p] for p in PARTS)
    assert pub_2048 - pub_512 > 2.0 * (pred_2048 - pred_512 + parts)


def test_rows_off_the_paxml_files_get_nothing() -> None:
    others = [r for r in _rows().values() if "pax" not in r.name]
    for run in others[:20]:
        assert sum(part_ms(run).values()) == 0.0
