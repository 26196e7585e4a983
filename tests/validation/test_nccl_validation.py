"""Published nccl-tests results against the simulator: each row within its tolerance, and
the mean error of the development rows (no constant was fitted to them; called held-out
until Dec 2026, when it showed their errors had been studied) within 5 %. Held-out rows are
scored as a whole by ``benchmarks/validate_simulate.py --heldout`` only, never here."""

from __future__ import annotations

import pytest

from clusterforge.constants import read_constants
from validation.nccl_rows import ROWS, mean_abs_error, score
from validation.sets import SETS

DEVELOPMENT = [r for r in ROWS if r["set"] == "development"]
CALIBRATION = [r for r in ROWS if r["set"] == "calibration"]
STUDIED = CALIBRATION + DEVELOPMENT


def test_every_row_names_its_source_and_set():
    for row in ROWS:
        assert row["source"] and row["set"] in SETS, row["id"]
        assert row["set"] != "calibration" or row["fits"], row["id"]


def test_fitted_constants_name_calibration_rows_that_name_them():
    by_id = {row["id"]: row for row in ROWS}
    constants = read_constants("clusterforge.netsim", "efficiency.toml")
    fitted = [c for c in constants.values() if c.tag == "fitted"]
    assert fitted
    for constant in fitted:
        for row_id in constant.fitted_on:
            row = by_id[row_id]
            assert row["set"] == "calibration", row_id
            assert constant.name in row["fits"], (constant.name, row_id)


# Rows the model is known to miss by more than 15 %, and why; the test fails if one passes.
KNOWN_GAPS = {
    "a100-3node-4hdr-128m": (
        "a ring across nodes at 128 MiB: the Simple protocol's pipeline ramp (fitted inside one "
        "node) and the ring's latency leave 77 GB/s where the NICs' 96 GB/s was measured; the "
        "tree that used to hide this is held to NCCL's 4 x 17.8 GB/s per-channel ceiling"
    ),
}


def _cases() -> list[object]:
    return [
        pytest.param(
            r,
            id=r["id"],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[r["id"]])]
            if r["id"] in KNOWN_GAPS
            else [],
        )
        for r in STUDIED
    ]


@pytest.mark.parametrize("row", _cases())
def test_row_within_15_percent(row):
    assert abs(score(row).error) < 0.15


def test_development_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in DEVELOPMENT]) <= 0.05


def test_calibration_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in CALIBRATION]) <= 0.05


def test_a_row_counts_its_nodes_with_the_catalog_node_s_gpus():
    """``num_nodes`` counts machines of the row's node: a GB200 NVL72 rack is 18 trays of 4."""
    from validation.nccl_rows import _graph

    graph = _graph("gb200-nvl72-tray", 18, None, (("max_rack_kw", 140),))
    assert graph.gpus_per_node == 4
    assert graph.num_gpus == 72
