"""The NeMo 25.02 DGX-B200 Nemotron-4 15B development row (TP1 PP1 DP64, 256K vocabulary,
squared-ReLU MLP) held to the issue's per-class limit (15 %). Its optimistic miss was
+17.9 % (a strict xfail); cuDNN's rate at the row's 4,096-token calls (73 % of the 8k rate on
B200, perf/attention_length.py) brings it to +14.0 %, inside the limit. What was priced from
the sources and ruled out before is in docs/validation.md, "Nemotron-4 15B on DGX B200
(NeMo 25.02)"."""

from __future__ import annotations

from validation.runs import load_runs, predict_run

ROW = "pub-nemofw2502-b200-nemotron4-15b"
CLASS_LIMIT = 0.15  # issue 24's done-when: no class above 15 %


def _row():
    (run,) = [r for r in load_runs() if r.name == ROW]
    assert run.subset == "development"
    return run


def test_row_is_development_and_predicted_optimistic() -> None:
    outcome = predict_run(_row())
    assert outcome.prediction is not None
    assert outcome.error > 0.0  # the miss this file documents is optimistic


def test_row_within_the_class_limit() -> None:
    outcome = predict_run(_row())
    assert abs(outcome.error) <= CLASS_LIMIT
