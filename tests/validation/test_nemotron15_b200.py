"""The NeMo 25.02 DGX-B200 Nemotron-4 15B development row (TP1 PP1 DP64, 256K vocabulary,
squared-ReLU MLP) held to the issue's per-class limit (15 %): a strict xfail while its
optimistic miss (+17.9 %) stays unexplained. What was priced from the sources and ruled out
is in docs/validation.md, "Nemotron-4 15B on DGX B200 (NeMo 25.02)"."""

from __future__ import annotations

import pytest

from validation.runs import load_runs, predict_run

ROW = "pub-nemofw2502-b200-nemotron4-15b"
CLASS_LIMIT = 0.15  # issue 24's done-when: no class above 15 %

GAP = (
    "NeMo 25.02 B200 Nemotron-4 15B predicted ~18 % too fast; the sourced pieces (eager "
    "squared-ReLU of NeMo 2.x, ~3 %; the embedding bucket's unhidden reduce-scatter and "
    "gather, ~1.5 %; BF16 gather of the non-TE embedding/output weights, <0.1 %) do not "
    "close it and the first cannot reach the held-out Nemotron rows (no activation field)"
)


def _row():
    (run,) = [r for r in load_runs() if r.name == ROW]
    assert run.subset == "development"
    return run


def test_row_is_development_and_predicted_optimistic() -> None:
    outcome = predict_run(_row())
    assert outcome.prediction is not None
    assert outcome.error > 0.0  # the miss this file documents is optimistic


@pytest.mark.xfail(strict=True, reason=GAP)
def test_row_within_the_class_limit() -> None:
    outcome = predict_run(_row())
    assert abs(outcome.error) <= CLASS_LIMIT
