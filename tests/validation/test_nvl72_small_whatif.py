"""The NVLink-domain script: NCCL's latencies, the one-node clique against the tray count it
replaced, and the NVLS-channel what-if."""

from __future__ import annotations

from benchmarks.nvl72_small_whatif import (
    forced,
    nccl_ring_ll_latency_us,
    summary,
    time_us,
    trays,
)

from validation.nccl_rows import ROWS


def test_ring_ll_latency_of_64_ranks_exceeds_nvls() -> None:
    # NCCL's own estimate: 6.6 + 126 x 0.6 = 82.2 us against NVLS's 25 us on one rack
    assert abs(nccl_ring_ll_latency_us(64) - 82.2) < 1e-9
    assert nccl_ring_ll_latency_us(8) < 25.0


def test_forced_nvls_on_16_trays_with_trays_as_nodes_is_slower_than_measured_at_512k() -> None:
    row = _row("pub-ocigpu-gb300-16n-ar-512k")
    with trays():
        assert time_us(row, forced(row, "nvls")) > time_us(row, row["busbw"]) + 20.0


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_one_node_clique_prices_nvls_in_one_rack_without_network_latency() -> None:
    # the tray-counted context added 18 us of network NVLS latency and 4.6 us per call
    row = _row("pub-ocigpu-gb300-16n-ar-512k")
    with trays():
        before = time_us(row, forced(row, "nvls"))
    after = time_us(row, forced(row, "nvls"))
    assert abs(before - after - 22.6) < 0.5


def test_one_node_clique_leaves_two_racks_and_calibration_alone() -> None:
    row = _row("pub-ocigpu-gb300-32n-a2a-16g")
    after = forced(row, "direct")
    with trays():
        assert forced(row, "direct") == after
    out = summary()
    assert abs(out["trays"][2] - out["model"][2]) < 1e-3
    assert out["model"][1] < out["trays"][1]


def test_nvls_24_channels_barely_moves_the_small_rows() -> None:
    """The NVLS-channel what-if stays a what-if: under half a point below 16 MiB."""
    out = summary()
    assert abs(out["nvls24"][1] - out["model"][1]) < 0.005
