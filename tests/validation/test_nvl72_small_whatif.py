"""The NVLink-domain what-if script: NCCL's latencies and the NVLS-channel what-if."""

from __future__ import annotations

from benchmarks.nvl72_small_whatif import (
    clique,
    forced,
    nccl_ring_ll_latency_us,
    summary,
    time_us,
)

from validation.nccl_rows import ROWS


def test_ring_ll_latency_of_64_ranks_exceeds_nvls() -> None:
    # NCCL's own estimate: 6.6 + 126 x 0.6 = 82.2 us against NVLS's 25 us on one rack
    assert abs(nccl_ring_ll_latency_us(64) - 82.2) < 1e-9
    assert nccl_ring_ll_latency_us(8) < 25.0


def test_forced_nvls_on_16_trays_is_slower_than_measured_at_512k() -> None:
    row = next(r for r in ROWS if r["id"] == "pub-ocigpu-gb300-16n-ar-512k")
    assert time_us(row, forced(row, "nvls")) > time_us(row, row["busbw"])


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_clique_prices_nvls_in_one_rack_at_nccls_one_node_latency() -> None:
    # the tray-counted context adds 18 us of network NVLS latency and 4.6 us per call
    row = _row("pub-ocigpu-gb300-16n-ar-512k")
    before = time_us(row, forced(row, "nvls"))
    with clique():
        after = time_us(row, forced(row, "nvls"))
    assert abs(before - after - 22.6) < 0.5


def test_clique_leaves_two_racks_and_calibration_alone() -> None:
    row = _row("pub-ocigpu-gb300-32n-a2a-16g")
    before = forced(row, "direct")
    with clique():
        assert forced(row, "direct") == before
    out = summary()
    assert abs(out["clique"][2] - out["model"][2]) < 1e-3
    assert out["clique"][1] < out["model"][1]
