"""What-if: large collectives across 4-8 nodes of 8 H100 (``benchmarks/large_internode_whatif.py``,
docs/validation.md): the NIC share of each algorithm, NCCL's own NVLS-Tree estimate before
v2.28.3-1, and the per-slice cost each steady plateau row needs."""

from __future__ import annotations

import pytest
from benchmarks.large_internode_whatif import (
    nccl_nvls_tree_busbw_gbyte_per_s,
    nic_share,
    slice_cost_us,
)

from validation.nccl_rows import ROWS, score


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_nvls_tree_binds_on_the_nic_only_from_three_nodes() -> None:
    assert nic_share("nvls_tree", 2, 16) == 0.0
    assert nic_share("nvls_tree", 4, 32) == pytest.approx(7.75)
    assert nic_share("ring", 4, 32) == nic_share("chain", 4, 32) == 8.0


def test_nccl_nvls_tree_estimate_halves_from_three_nodes() -> None:
    assert nccl_nvls_tree_busbw_gbyte_per_s(2, 16) == pytest.approx(600.0)
    assert nccl_nvls_tree_busbw_gbyte_per_s(4, 32) == pytest.approx(310.0)
    assert nccl_nvls_tree_busbw_gbyte_per_s(8, 64) == pytest.approx(315.0)


@pytest.mark.parametrize(
    ("row_id", "low_us", "high_us"),
    [
        ("pub-vp-h100-4n-ag-8g", 4.0, 7.0),
        ("pub-vp-h100-4n-bc-8g", 4.0, 7.0),
        ("pub-n309-g-h100-8n-ar-8g", 4.0, 7.0),
        ("pub-n309-q-vm-h100-4n-ar-16g", -1.0, 1.0),
    ],
)
def test_slice_cost_each_plateau_needs(row_id: str, low_us: float, high_us: float) -> None:
    row = _row(row_id)
    cost = slice_cost_us(row["collective"], row["busbw"], score(row).simulated_gbyte_per_s)
    assert low_us < cost < high_us
