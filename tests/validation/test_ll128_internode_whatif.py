"""What-if: LL and LL128 across nodes against the 8 steps a network connection keeps in
flight, and the protocol-choice reading without tree/LL128 across nodes
(``benchmarks/ll128_internode_whatif.py``, docs/validation.md)."""

from __future__ import annotations

import pytest
from benchmarks.ll128_internode_whatif import no_tree_ll128, step_window

from validation.nccl_rows import ROWS, mean_abs_error, score

STUDIED = [r for r in ROWS if r["set"] in ("calibration", "development")]
_before = {r["id"]: score(r) for r in STUDIED}


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


@pytest.mark.parametrize(
    "row_id",
    [
        "pub-vp-h100-4n-ag-4m",
        "pub-vp-h100-4n-ar-4m",
        "pub-nebius-h100-2n-ar-512k",
        "pub-dstack-lambda-b200-2n-ar-1m",
        "pub-n309-g-h100-4n-ar-4m",
        "pub-oci-a100-2n-ar-128k",
    ],
)
def test_the_step_window_does_not_bind_on_the_fast_rows(row_id):
    """calcCollChunking keeps a tree channel's LL128 share within 8-15 chunks, and a ring
    pays NCCL's hardware latency per step already: the window leaves these rows unchanged."""
    with step_window():
        after = score(_row(row_id))
    assert after.simulated_gbyte_per_s == pytest.approx(_before[row_id].simulated_gbyte_per_s)


def test_the_step_window_leaves_every_set_within_a_tenth_of_a_point():
    with step_window():
        after = {r["id"]: score(r) for r in STUDIED}
    for name in ("calibration", "development"):
        ids = [r["id"] for r in STUDIED if r["set"] == name]
        b = mean_abs_error([_before[i] for i in ids])
        a = mean_abs_error([after[i] for i in ids])
        assert abs(a - b) < 0.001


def test_without_tree_ll128_the_mid_size_all_reduce_rows_run_ring_ll128():
    """The protocol-choice reading (unsourced for these clusters): the rows of 2-8 MiB move
    to ring/LL128 and land within 15 % on Voltage Park and gj-aion's 2 nodes."""
    with no_tree_ll128():
        for row_id in (
            "pub-vp-h100-4n-ar-2m",
            "pub-vp-h100-4n-ar-4m",
            "pub-vp-h100-4n-ar-8m",
            "pub-n309-g-h100-2n-ar-4m",
            "pub-nebius-h100-2n-ar-2m",
        ):
            after = score(_row(row_id))
            assert (after.algorithm, after.protocol) == ("ring", "ll128")
            assert abs(after.error) < 0.15
            assert abs(after.error) < abs(_before[row_id].error)
