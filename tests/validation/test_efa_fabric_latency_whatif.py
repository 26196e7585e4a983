"""The what-if that splits aws-ofi-nccl's reported latency (NCCL's ranking) from a fabric
latency (the call's time): benchmarks/efa_fabric_latency_whatif.py."""

from __future__ import annotations

import pytest
from benchmarks.efa_fabric_latency_whatif import score_rows

from validation.nccl_rows import ROWS, mean_abs_error, score


def _efa_dev() -> list[dict]:
    return [r for r in ROWS if r["set"] == "development" and "efa_instance" in r]


def test_the_plugin_figure_in_the_ranking_alone_times_as_without_it():
    # on these 2- and 4-node rows the 35-75 us per network step changes no pair NCCL picks
    for row in _efa_dev():
        bare = score({k: v for k, v in row.items() if k != "efa_instance"})
        split = score_rows([row], "path")[0]
        assert (split.algorithm, split.protocol) == (bare.algorithm, bare.protocol)
        assert split.error == pytest.approx(bare.error, abs=1e-12)


def test_the_measured_p6_write_latency_as_time_is_worse_on_every_efa_cluster():
    rows = _efa_dev()
    model, split = score_rows(rows, "model"), score_rows(rows, "ib-write-14.6")
    for cluster in ("aws-p4de-a100-efa-awsome", "aws-p5-h100-efa-awsome", "aws-p6-b200-efa-mleng"):
        idx = [i for i, r in enumerate(rows) if r["cluster"] == cluster]
        assert mean_abs_error([split[i] for i in idx]) > mean_abs_error([model[i] for i in idx])


def test_held_out_rows_are_refused():
    held = next(r for r in ROWS if r["set"] == "heldout")
    with pytest.raises(ValueError, match="held-out"):
        score_rows([held], "model")


def test_the_trips_reading_helps_p5_but_leaves_development_worse():
    dev = [r for r in ROWS if r["set"] == "development"]
    model, trips = score_rows(dev, "model"), score_rows(dev, "ib-write-trips")
    p5 = [i for i, r in enumerate(dev) if r.get("cluster") == "aws-p5-h100-efa-awsome"]
    assert mean_abs_error([trips[i] for i in p5]) < mean_abs_error([model[i] for i in p5])
    assert mean_abs_error(trips) > mean_abs_error(model)  # 20.49 % against 20.13 %
