"""Published nccl-tests results against the simulator: each row of the first file within
its tolerance, the mean error of its held-out rows (no constant was fitted to them) within
5 %, and the development rows of every file within the targets below.  Held-out rows of
``nccl_tests_more.toml`` are scored only as a whole, by ``benchmarks/validate_simulate.py``."""

from __future__ import annotations

import pytest

from clusterforge.constants import read_constants
from validation.nccl_rows import LARGE_BYTES, ROWS, SUBSETS, mean_abs_error, score

FIRST = [r for r in ROWS if r["file"] == "nccl_tests_published.toml"]
HELDOUT = [r for r in FIRST if r["set"] == "heldout"]
CALIBRATION = [r for r in ROWS if r["set"] == "calibration"]
DEVELOPMENT = [r for r in ROWS if r["set"] == "development"]


def test_every_row_names_its_source_and_set():
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row["source"] and row["set"] in SUBSETS, row["id"]
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
KNOWN_GAPS: dict[str, str] = {}


def _cases() -> list[object]:
    return [
        pytest.param(
            r,
            id=r["id"],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[r["id"]])]
            if r["id"] in KNOWN_GAPS
            else [],
        )
        for r in FIRST
    ]


@pytest.mark.parametrize("row", _cases())
def test_row_within_15_percent(row):
    assert abs(score(row).error) < 0.15


def test_heldout_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in HELDOUT]) <= 0.05


def test_calibration_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in CALIBRATION]) <= 0.05


# Development rows: the targets, stated before the rows were first simulated:
# mean absolute error <= 5 % from 16 MiB up and <= 15 % below.
@pytest.mark.xfail(
    strict=True,
    reason="mid-size all-reduce across 2-3 A100 nodes with 4 HDR NICs (32-128 MiB) runs 10-15 % "
    "below the measurement: NCCL's ring Simple latency (base + 30 steps x 1.4 plateau, 186 us on "
    "16 ranks) and its 4-channel LL128 ceiling (4 x 20 GB/s) leave 73-84 GB/s where 82-96 was "
    "measured; the one-GPU-per-node RoCE tree (nccl-tests #232) runs LL128 under NCCL's "
    "medium-size tree correction (0.9) at 36 GB/s where 41 was measured",
)
def test_development_mean_error_within_5_percent_from_16_mib():
    large = [score(r) for r in DEVELOPMENT if r["size_bytes"] >= LARGE_BYTES]
    assert len(large) >= 4
    assert mean_abs_error(large) <= 0.05


def test_development_mean_error_within_15_percent_below_16_mib():
    small = [score(r) for r in DEVELOPMENT if r["size_bytes"] < LARGE_BYTES]
    assert len(small) >= 2
    assert mean_abs_error(small) <= 0.15
