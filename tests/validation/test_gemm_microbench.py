"""GEMM microbenchmarks (validation/gemm_microbench.toml) and the sustained shares derived from
them for the GPUs without calibration runs (validation/gemm_rows.py)."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from clusterforge.catalog import gpu_architecture, load_catalog
from validation.gemm_rows import (
    STEP_FACTOR_GPU,
    derived_share,
    load_gemm_rows,
    microbenchmark_share,
)

BLACKWELL = ("b200", "gb200", "b300", "gb300")


def _sustained_rows() -> dict[str, dict[str, object]]:
    text = resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    return {row["gpu"]: row for row in tomllib.loads(text)["sustained_gemm"]}


def test_every_blackwell_gpu_takes_the_share_its_gemm_microbenchmarks_give() -> None:
    """No Blackwell GPU keeps the uncalibrated shared 0.85: each has a derived row whose value
    is its microbenchmark share times the H100's step factor, at two decimals. A share is
    borrowed only within one die and GEMM library (one catalog architecture); the parts may
    enable different SM counts (B300 148, GB300 152), which wave quantisation takes apart."""
    rows = _sustained_rows()
    catalog = load_catalog()
    assert set(BLACKWELL) <= set(rows)
    for gpu in BLACKWELL:
        row = rows[gpu]
        assert row["tag"] == "derived", gpu
        source = str(row["microbench"])
        assert gpu_architecture(catalog, source).id == gpu_architecture(catalog, gpu).id, gpu
        assert row["microbench_share"] == round(microbenchmark_share(source), 3), gpu
        assert row["efficiency_of_mamf"] == round(derived_share(source), 2), gpu


def test_the_step_factor_gpu_has_both_a_fitted_share_and_microbenchmarks() -> None:
    row = _sustained_rows()[STEP_FACTOR_GPU]
    assert row["tag"] == "fitted"
    assert derived_share(STEP_FACTOR_GPU) == pytest.approx(float(row["efficiency_of_mamf"]))


def test_gemm_rows_are_calibration_rows_below_their_gpus_datasheet_peak() -> None:
    """Constants are fitted on these rows, so they are calibration rows; a row above the
    GPU's dense datasheet peak for its precision cannot be a timing of the whole product."""
    gpus = load_catalog().gpus
    rows = load_gemm_rows()
    assert {r.gpu for r in rows} >= {STEP_FACTOR_GPU, "b200", "b300"}
    assert len({r.id for r in rows}) == len(rows)
    for row in rows:
        assert row.subset == "calibration", row.id
        gpu = gpus[row.gpu]
        peak = gpu.bf16_dense_tflops if row.precision == "bf16" else gpu.fp8_dense_tflops
        assert 0 < row.gemm_tflops < peak, row.id


def test_b200_keeps_the_same_share_of_mamf_in_fp8_as_in_bf16() -> None:
    """The sustained share serves BF16 and FP8 GEMMs alike: on B200 the same shapes keep the
    same share of each precision's MAMF (0.848 BF16, 0.846 FP8 on OpenXLA's table)."""
    bf16, fp8 = microbenchmark_share("b200", "bf16"), microbenchmark_share("b200", "fp8")
    assert fp8 == pytest.approx(bf16, rel=0.03)


def test_blackwell_keeps_less_of_its_mamf_at_training_shapes_than_the_h100() -> None:
    """The measured difference the derived shares carry: at the same 2,048-4,096 shapes the
    H100 runs at about its MAMF, the B200 at about 0.85 of it."""
    assert microbenchmark_share(STEP_FACTOR_GPU) > 0.95
    assert microbenchmark_share("b200") < 0.9
    assert microbenchmark_share("b300") < 0.9
