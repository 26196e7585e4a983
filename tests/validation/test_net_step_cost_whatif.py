"""What-if: one network proxy operation (NCCL's ``getNetOverhead``) per network step of a call
(``benchmarks/net_step_cost_whatif.py``, docs/validation.md): the step counts, the per-call
cost it leaves when re-fitted on its calibration rows, and the spread of the measured excess
per network step between clusters that rules out any one per-step cost."""

from __future__ import annotations

import pytest
from benchmarks.net_step_cost_whatif import (
    excess_per_step_us,
    network_steps,
    patched_latency,
    refit_call_us,
)

from validation.nccl_rows import LARGE_BYTES, ROWS, score


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def _per_step_us(row_id: str) -> float:
    row = _row(row_id)
    meas, model, steps = excess_per_step_us(row, score(row))
    return (meas - model) / steps


def test_network_steps_follow_nccls_latency_terms():
    """tuning.cc: a tree crosses 2 log2(nodes) network steps, a ring all-reduce 2 (nodes - 1),
    a chain nodes - 1; one node (or one NVLink clique) none."""
    assert [network_steps("tree", m, "all_reduce") for m in (1, 2, 4, 8)] == [0, 2, 4, 6]
    assert network_steps("ring", 4, "all_reduce") == 6
    assert network_steps("ring", 4, "all_gather") == 3
    assert network_steps("chain", 4, "broadcast") == 3


def test_the_step_cost_takes_two_of_the_fitted_per_call_microseconds():
    """Re-fitted on its own calibration rows (2 nodes: 2 steps of 1 us), the per-call cost
    falls from 4.6 to about 2.6 us: the step cost replaces part of it, it adds nothing
    the calibration rows show."""
    assert refit_call_us([r for r in ROWS if r["set"] == "calibration"]) == pytest.approx(
        2.6, abs=0.2
    )


def test_the_excess_per_network_step_spreads_two_orders_between_clusters():
    """The same tree/LL all-reduce of 8-128 KiB: within 1 us per network step on the 4
    virtual machines of the calibration cluster, 2-6 us on Nebius and Lambda, 7-8 us on
    OCI's A100 over RoCE, about 50 us on OCI's GB200 trays (two racks, RoCE)."""
    for row_id in ("pub-n309-q-vm-h100-4n-ar-8k", "pub-n309-q-vm-h100-4n-ar-128k"):
        assert abs(_per_step_us(row_id)) < 1.0
    assert 1.5 < _per_step_us("pub-nebius-h100-2n-ar-8k") < 6.5
    assert 6.0 < _per_step_us("pub-oci-a100-2n-ar-8k") < 9.0
    assert _per_step_us("pub-oke-gb200-32n-ar-8k") > 40.0


def test_the_refitted_step_cost_moves_development_below_16_mib_by_under_a_point():
    rows = [r for r in ROWS if r["set"] == "development" and r["size_bytes"] < LARGE_BYTES]
    before = sum(abs(score(r).error) for r in rows) / len(rows)
    call_us = refit_call_us([r for r in ROWS if r["set"] == "calibration"])
    with patched_latency(call_us):
        after = sum(abs(score(r).error) for r in rows) / len(rows)
    assert 0.0 < before - after < 0.01
