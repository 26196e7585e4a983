"""``benchmarks/ring_protocol_check.py``: Voltage Park's ring all-gather ran slower than its
all-reduce of the same size, where NCCL's own estimate cannot switch LL128 to Simple but can
switch LL to Simple; the model without ring LL128 is a reading, not adopted
(docs/validation.md)."""

from __future__ import annotations

import pytest
from benchmarks.ring_protocol_check import (
    crossover_bytes,
    measured_us,
    ring_terms,
    same_size_times,
    without_ring_ll128,
)

from validation.nccl_rows import ROWS

_CLUSTER = "voltagepark-h100-ib"
MIB = 2**20


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_a_heldout_row_is_refused_before_it_is_simulated():
    held = next(r for r in ROWS if r["set"] == "heldout")
    for check in (measured_us, ring_terms, without_ring_ll128):
        with pytest.raises(ValueError, match="heldout"):
            check(held)


def test_voltage_parks_all_gather_takes_longer_than_its_all_reduce_at_1_and_4_mib():
    """A ring all-gather moves half an all-reduce's bytes per rank in half its steps; at one
    protocol it cannot be the slower of the two (nccl-tests out-of-place times, µs)."""
    table = same_size_times(_CLUSTER)
    for size in (1 * MIB, 4 * MIB):
        times = table[(4, size)]
        assert times["all_gather"] > times["all_reduce"]
    # from 256 MiB both run ring/Simple and the all-gather takes about half as long
    big = table[(4, 1024 * MIB)]
    assert big["all_gather"] / big["all_reduce"] == pytest.approx(0.5, abs=0.03)


def test_nccl_ranks_simple_ahead_of_ll128_on_the_ring_only_from_tens_of_mib():
    """NCCL's own ring all-gather on 4 nodes of 8 H100: LL128 82 µs + S / 303 GB/s against
    Simple 152 µs + S / 396 GB/s, Simple ahead from about 85 MiB; LL (capped at NCCL's
    llMaxBw) against Simple from about 2.25 MiB, where the measured time jumps."""
    terms = ring_terms(_row("pub-vp-h100-4n-ag-4m"))
    assert crossover_bytes(terms["ll128"], terms["simple"]) > 64 * MIB
    assert 2 * MIB < crossover_bytes(terms["ll"], terms["simple"]) < 4 * MIB


def test_crossover_is_where_both_estimates_meet_and_infinite_when_never():
    fast, bulk = (10.0, 10.0), (20.0, 20.0)  # µs, GB/s
    size = crossover_bytes(fast, bulk)
    assert 10.0 + size / 10e3 == pytest.approx(20.0 + size / 20e3)
    assert crossover_bytes((10.0, 20.0), (20.0, 10.0)) == float("inf")


def test_without_ring_ll128_keeps_rows_that_do_not_pick_it():
    row = _row("pub-vp-h100-4n-ag-1g")  # ring/Simple
    _, pair = without_ring_ll128(row)
    assert pair == "ring/simple"
    changed, other = without_ring_ll128(_row("pub-vp-h100-4n-ag-16m"))
    assert other == "ring/simple"
    assert abs(changed) < 0.05
