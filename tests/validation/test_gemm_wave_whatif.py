"""The fixed time per GEMM wave what-if (``benchmarks/gemm_wave_whatif.py``; docs/validation.md,
"A fixed time per GEMM wave on every GPU"): its wave count, its fit and its GEMM time on hand
cases, and what the calibration GEMM rows say (a per-wave time beside an intercept that is the
per-kernel floor). The model itself is unchanged: the what-if made development worse.
"""

from __future__ import annotations

import pytest
from benchmarks.gemm_wave_whatif import fit, row_terms, rows_of, wave_gemm_time_s

from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import gemm_time_s, gemm_waves, gpu_perf, load_constants


def _perf(gpu: str, precision: str = "bf16"):  # type: ignore[no-untyped-def]
    return gpu_perf(load_catalog().gpus[gpu], precision)


def test_wave_counts_by_hand() -> None:
    h100, b200 = _perf("h100-sxm"), _perf("b200")
    # 8,192^2 output: 64 x 32 = 2,048 tiles of 128 x 256 over 132 SMs: 15.5 -> 16 waves
    assert gemm_waves(8192, 8192, 8192, h100, 1) == 16
    # 2,048^2: 16 x 8 = 128 tiles < 132 SMs; split-K min(132 // 128, 2,048 // 256) = 1: 1 wave
    assert gemm_waves(2048, 2048, 2048, h100, 1) == 1
    # B200, 148 SMs: 4,096^2 is 512 tiles, 3.5 -> 4 waves; 4 of them 2,048 tiles, 13.8 -> 14
    assert gemm_waves(4096, 4096, 4096, b200, 1) == 4
    assert gemm_waves(4096, 4096, 2048, b200, 4) == 14


def test_the_fit_recovers_a_hand_made_share_wave_time_and_floor() -> None:
    # t = ideal / 0.9 + waves x 2 us + 4 us on three rows (ideal 100, 200, 400 us; 1, 4, 16
    # waves): 100 / 0.9 + 2 + 4 = 117.1 us, 234.2 us, 480.4 us.
    terms = [(100e-6, 1, 100e-6 / 0.9 + 6e-6)]
    terms += [(200e-6, 4, 200e-6 / 0.9 + 12e-6), (400e-6, 16, 400e-6 / 0.9 + 36e-6)]
    assert terms[0][2] * 1e6 == pytest.approx(117.11, abs=0.01)
    share, wave_s, _, mape = fit(terms, 4e-6)
    assert share == pytest.approx(0.9)
    assert wave_s == pytest.approx(2e-6)
    assert mape == pytest.approx(0.0, abs=1e-9)
    share, wave_s, intercept, _ = fit(terms, 0.0, intercept=True)
    assert (share, wave_s, intercept) == pytest.approx((0.9, 2e-6, 4e-6))


def test_the_what_if_gemm_time_by_hand() -> None:
    """H100 BF16, 8,192^3: 2 x 8,192^3 / (794.5 TFLOP/s x 0.78 x 32 / 33) = 1,829.68 us, plus
    16 waves x 1.58 us = 25.28 us, plus the 4 us floor: 1,858.96 us (today: 1,833.68 us)."""
    perf, c = _perf("h100-sxm"), load_constants()
    assert perf.gemm_efficiency == 0.78
    time_s = wave_gemm_time_s(8192, 8192, 8192, perf, 1.0, 2.0, c, 1.58e-6)
    assert time_s * 1e6 == pytest.approx(1858.96, abs=0.01)
    assert gemm_time_s(8192, 8192, 8192, perf) * 1e6 == pytest.approx(1833.68, abs=0.01)


def test_the_h100_rows_fit_a_wave_time_beside_an_intercept_that_is_the_kernel_floor() -> None:
    """The 24 H100 BF16 rows of OpenXLA's table: free intercept 3.8 us against the 4 us floor
    (``kernel_overhead_s``, measured on streaming kernels); with the floor held, 1.58 us per
    wave and 1.3 % MAPE, against 3.3 % for the median share without a per-wave time."""
    terms = [row_terms(r) for r in rows_of("h100-sxm", "bf16")]
    assert len(terms) == 24
    _, _, intercept, _ = fit(terms, 0.0, intercept=True)
    assert intercept * 1e6 == pytest.approx(3.77, abs=0.05)
    share, wave_s, _, mape = fit(terms, load_constants().kernel_overhead_s)
    assert wave_s * 1e6 == pytest.approx(1.58, abs=0.02)
    assert share == pytest.approx(1.078, abs=0.002)
    assert mape < 0.015
