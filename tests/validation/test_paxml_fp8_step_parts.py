"""The Paxml step parts bounded by ``benchmarks/paxml_fp8_step_parts.py``: which rows each
applies to, as its source says, and that together they stay far below the published gap.
Development rows only."""

from __future__ import annotations

from benchmarks.paxml_fp8_step_parts import (
    PARTS,
    PAXML_FILES,
    amax_s,
    meta_s,
    part_ms,
    vocab_pad_s,
)

from validation.runs import Run, load_runs, predict_run


def _paxml() -> list[Run]:
    return [r for r in load_runs() if r.subset == "development" and r.file in PAXML_FILES]


def test_fp8_parts_only_on_fp8_rows() -> None:
    """Delayed scaling's amax reductions and history updates exist only in FP8 runs."""
    rows = _paxml()
    assert len(rows) == 10
    for run in rows:
        fp8 = "fp8" in run.name
        assert (amax_s(run) > 0.0) == fp8, run.name
        assert (meta_s(run) > 0.0) == fp8, run.name


def test_vocab_padding_only_for_the_unaligned_vocabulary() -> None:
    """XLA pads BF16 GEMM dimensions to a multiple of 8: 50,257 (175B) is, 50,304 is not."""
    for run in _paxml():
        padded = run.arch.vocab_size % 8 != 0
        assert padded == ("175b" in run.name), run.name
        assert (vocab_pad_s(run) > 0.0) == padded, run.name


def test_amax_reductions_grow_with_the_replicas() -> None:
    """The 175B's replica and whole-mesh groups grow from 128 to 2,048 GPUs."""
    rows = {r.name: r for r in _paxml() if "175b" in r.name}
    times = [amax_s(rows[f"pub-paxml-h100-gpt3-175b-fp8-{n}gpu"]) for n in (128, 512, 2048)]
    assert times[0] < times[1] < times[2]


def test_parts_stay_far_below_the_published_gap() -> None:
    """All four parts together are under a tenth of the gap on every 175B row."""
    for run in (r for r in _paxml() if "175b" in r.name):
        pred = predict_run(run).prediction
        assert pred is not None
        gap_ms = (pred.step_time_s * float(getattr(pred, run.metric)) / run.published) * 1e3
        gap_ms -= pred.step_time_s * 1e3
        parts = part_ms(run)
        assert set(parts) == set(PARTS)
        assert 0.0 < sum(parts.values()) < 0.1 * gap_ms, run.name


def test_rows_off_the_paxml_files_get_nothing() -> None:
    others = [r for r in load_runs() if r.subset == "development" and r.file not in PAXML_FILES]
    for run in others[:20]:
        assert sum(part_ms(run).values()) == 0.0
