"""The multi-clique script: NCCL's latency terms across two NVL72 cliques, and the NVLink
step-cost what-if (calibration untouched, the two-rack GB200 tree at 8 KiB closed)."""

from __future__ import annotations

from benchmarks.mnnvl_multiclique_whatif import (
    band_means,
    call_time_us,
    nccl_latencies_us,
    scored_rows,
)

from validation.nccl_rows import ROWS, score


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_nccl_prices_two_cliques_of_64_with_a_64_rank_chain() -> None:
    # tree LL: 6.8 + 2 x (63 x 0.6 + 1 x 5.0) = 92.4 us; NVLS-Tree 25 + 2 x 20.9 = 66.8 us
    lat = nccl_latencies_us(_row("pub-ocigpu-gb300-32n-ar-512k"))
    assert abs(lat["tree/ll (nNodes 2, ppn 64)"] - 92.4) < 0.1
    assert abs(lat["nvls_tree/simple (nNodes 2, ppn 64)"] - 66.8) < 0.1
    assert not any(
        k.startswith("nvls_tree") for k in nccl_latencies_us(_row("pub-oke-gb200-32n-ar-8k"))
    )


def test_gb200_two_rack_tree_measures_twice_the_model_at_8k() -> None:
    row = _row("pub-oke-gb200-32n-ar-8k")
    measured, model = (
        call_time_us(row, row["busbw"]),
        call_time_us(row, score(row).simulated_gbyte_per_s),
    )
    assert 95.0 < measured - model < 110.0


def test_nvlink_step_cost_leaves_calibration_and_closes_the_gb200_small_rows() -> None:
    before = band_means([score(r) for r in ROWS if r["set"] in ("calibration", "development")])
    after_rows = scored_rows(0.8, "nvl72")
    after = band_means(after_rows)
    assert abs(after["cal all"] - before["cal all"]) < 1e-9
    assert after["dev <16M"] < before["dev <16M"] - 0.1
    assert after["dev >=16M"] > before["dev >=16M"]  # the 64-128 MiB rings get worse
    gb200 = next(s for s in after_rows if s.row["id"] == "pub-oke-gb200-32n-ar-8k")
    assert abs(gb200.error) < 0.05
