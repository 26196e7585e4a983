"""``benchmarks/gptoss_b300_twins.py``: gpt-oss-120b on DGX B300 (EP 8) against GB300 (EP 64)
in the same release. Pins what the comparison found: the published GB300 / B300 ratio is far
above the predicted one, and leaving the expert-data-parallel traffic (DGX B300 only) unhidden
would close about half of the distance, not all, and B300 leaves several milliseconds more per
layer than GB300. Only development rows are read."""

from __future__ import annotations

from benchmarks.gptoss_b300_twins import twins


def test_published_ratio_exceeds_the_predicted_one_and_edp_alone_does_not_close_it() -> None:
    pairs = twins()
    assert len(pairs) == 3
    for _, gb300, b300 in pairs:
        published = gb300.run.published / b300.run.published
        predicted = gb300.predicted / b300.predicted
        edp_unhidden = gb300.predicted / b300.edp_exposed
        assert 1.25 < published < 1.30
        assert 1.0 < predicted < 1.15
        assert predicted < edp_unhidden < published
        # B300 leaves 3.5-4.1 ms more per layer and micro-batch than GB300 (4.0-4.6 ms while
        # GB300's in-rack all-to-all counted its trays as nodes, before NCCL's one-node clique)
        assert 3.0 < b300.gap_ms - gb300.gap_ms < 5.0
