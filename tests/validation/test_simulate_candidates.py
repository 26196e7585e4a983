"""``benchmarks/simulate_candidates.py``: the per-pair table and the breakdown that locate a
cluster's misses, on studied rows only."""

from __future__ import annotations

import pytest
from benchmarks.simulate_candidates import band, breakdown, candidates

from validation.nccl_rows import ROWS, score

VOLTAGE_PARK = [
    r for r in ROWS if r.get("cluster") == "voltagepark-h100-ib" and r["set"] == "development"
]


def test_a_heldout_row_is_refused_before_it_is_simulated():
    held = next(r for r in ROWS if r["set"] == "heldout")
    with pytest.raises(ValueError, match="heldout"):
        candidates(held)
    with pytest.raises(ValueError, match="heldout"):
        breakdown([held])


def test_the_models_choice_is_one_of_the_candidates():
    row = next(r for r in VOLTAGE_PARK if r["id"] == "pub-vp-h100-4n-ag-16m")
    chosen = score(row)
    table = {(c.algorithm, c.protocol): c.busbw_gbyte_per_s for c in candidates(row)}
    assert {("ring", "ll"), ("ring", "ll128"), ("ring", "simple")} <= set(table)
    assert table[(chosen.algorithm, chosen.protocol)] == pytest.approx(chosen.simulated_gbyte_per_s)


def test_breakdown_counts_every_row_once_by_band():
    groups = breakdown(VOLTAGE_PARK)
    assert sum(len(e) for e in groups.values()) == len(VOLTAGE_PARK)
    assert band(8 * 2**20) == "< 16 MiB"
    assert band(16 * 2**20) == band(128 * 2**20) == "16-128 MiB"
    assert band(256 * 2**20) == ">= 256 MiB"
