"""GEMM efficiency depends on the GEMM's shape: tile-edge waste and wave quantisation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.perf.calibration import (
    ACCEPT_GEMM_SIZE,
    calibrated_perf,
    calibration_from_dict,
    perf_changes,
)
from clusterforge.perf.roofline import gemm_shape_efficiency, gemm_time_s, gpu_perf, load_constants


@pytest.fixture
def a100():
    return gpu_perf(load_catalog().gpus["a100-80gb"], "bf16")


def test_every_datacenter_gpu_of_the_catalog_knows_its_sm_count() -> None:
    gpus = load_catalog().gpus
    assert gpus["a100-80gb"].num_sms == 108
    assert gpus["h100-sxm"].num_sms == 132
    assert gpus["b200"].num_sms == 148
    assert all(g.num_sms > 0 for g in gpus if g.datacenter)


def test_blackwell_ultra_parts_enable_fewer_sms_than_the_full_die() -> None:
    """NVIDIA's 160 SMs are the full Blackwell Ultra die; the products enable fewer, as CUDA
    reports them: 148 on the HGX B300, 152 on the GB300 superchip (sources in gpus.toml)."""
    gpus = load_catalog().gpus
    assert gpus["b300"].num_sms == 148
    assert gpus["gb300"].num_sms == 152


def test_blackwell_ultra_dense_peaks_are_the_published_sparse_totals_halved() -> None:
    """GB300 NVL72: 360 / 720 PFLOPS FP16-BF16 / FP8 with sparsity over 72 GPUs; HGX B300:
    36 / 72 PFLOPS over 8 GPUs. Dense is half; neither part raises BF16 or FP8 over GB200 /
    B200 (the Blackwell Ultra gain is FP4)."""
    gpus = load_catalog().gpus
    assert gpus["gb300"].bf16_dense_tflops == 360_000 / 72 / 2
    assert gpus["gb300"].fp8_dense_tflops == 720_000 / 72 / 2
    assert gpus["b300"].bf16_dense_tflops == 36_000 / 8 / 2
    assert gpus["b300"].fp8_dense_tflops == 72_000 / 8 / 2
    for ultra, blackwell in (("gb300", "gb200"), ("b300", "b200")):
        assert gpus[ultra].bf16_dense_tflops == gpus[blackwell].bf16_dense_tflops
        assert gpus[ultra].fp8_dense_tflops == gpus[blackwell].fp8_dense_tflops


def test_large_shapes_keep_the_large_shape_rate(a100) -> None:
    # 108 x 128 x 256 tiles exactly fill one wave on every SM, many times over.
    assert gemm_shape_efficiency(108 * 128 * 8, 256 * 16, 8192, a100) == pytest.approx(1.0)
    assert gemm_shape_efficiency(65536, 53248, 8192, a100) > 0.98


def test_one_tile_more_than_a_wave_costs_a_whole_wave(a100) -> None:
    """109 tiles on 108 SMs run in two waves; in the second, 107 SMs sit idle, so the GEMM
    runs at about half rate."""
    full = gemm_shape_efficiency(128 * 108, 256, 8192, a100)
    over = gemm_shape_efficiency(128 * 109, 256, 8192, a100)
    assert full == pytest.approx(1.0)
    assert over == pytest.approx(109 / 216)


def test_tile_edges_are_wasted_when_a_dimension_is_not_a_multiple_of_the_tile(a100) -> None:
    c = load_constants()
    # 129 output rows need two 128-row tiles (or one 256-row tile): half of the tile area is
    # padding. K is long enough for split-K to fill all 108 SMs with the two tiles.
    eff = gemm_shape_efficiency(129, c.gemm_tile_n, 54 * c.gemm_split_k_min, a100)
    assert eff == pytest.approx(129 / 256)


def test_few_tiles_split_k_to_fill_the_sms(a100) -> None:
    """Four output tiles on 108 SMs: split-K runs 27 slices of each, so the GEMM keeps its
    rate; without a long enough K it cannot split and keeps 4 of 108 SMs busy."""
    c = load_constants()
    long_k = gemm_shape_efficiency(256, 512, 27 * c.gemm_split_k_min, a100)
    short_k = gemm_shape_efficiency(256, 512, c.gemm_split_k_min, a100)
    assert long_k == pytest.approx(1.0)
    assert short_k == pytest.approx(4 / 108)


def test_tensor_parallel_split_of_a_small_micro_batch_runs_slower_per_flop(a100) -> None:
    """Micro-batch 2 x 2,048 tokens, hidden 3,072: the QKV GEMM split 8 ways keeps less of
    the large-shape rate than the unsplit one (fewer, ragged tiles)."""
    tokens, h = 4096, 3072
    whole = gemm_time_s(tokens, 3 * h, h, a100) / (2 * tokens * 3 * h * h)
    split = gemm_time_s(tokens, 3 * h / 8, h, a100) / (2 * tokens * 3 * h * h / 8)
    assert split > 1.2 * whole


def test_a_gpu_without_sm_count_keeps_the_old_rate(a100) -> None:
    unknown = replace(a100, num_sms=0)
    assert gemm_shape_efficiency(129, 3, 64, unknown) == 1.0


def test_skinny_gemms_take_about_the_weight_read_time(a100) -> None:
    """A GEMM with 8 rows does 8 multiply-adds per weight read: far below the A100's ridge
    point. Its time is the weight read, or the tensor-core time of its padded 128-row tiles
    where that is longer (about the same on the A100, whose ridge is near 128 FLOP/byte)."""
    c = load_constants()
    m, n, k = 8, 8192, 8192
    weight_read_s = 2 * n * k / (a100.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency)
    t = gemm_time_s(m, n, k, a100) - c.kernel_overhead_s
    assert weight_read_s <= t < 1.2 * weight_read_s


def _large_gemm_share_of_mamf(gpu_id: str) -> float:
    """Share of its BF16 MAMF at which a one-wave-exact large GEMM runs on ``gpu_id``."""
    perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
    m, n, k = perf.num_sms * 128 * 8, 256 * 16, 8192
    seconds = gemm_time_s(m, n, k, perf) - load_constants().kernel_overhead_s
    return 2.0 * m * n * k / seconds / (perf.matmul_tflops * 1e12)


def test_the_sustained_gemm_share_is_the_gpus_own_where_calibration_gives_one() -> None:
    """H100: 0.78 of MAMF, fitted on its Megatron-Core calibration runs; the H200 (same die,
    clocks, power) takes it; Blackwell GPUs take the share derived from their GEMM
    microbenchmarks (validation/gemm_rows.py); the A100 and GPUs without a row keep
    gemm_efficiency_of_mamf."""
    c = load_constants()
    assert _large_gemm_share_of_mamf("h100-sxm") == pytest.approx(0.78, rel=1e-3)
    assert _large_gemm_share_of_mamf("h200-sxm") == pytest.approx(0.78, rel=1e-3)
    assert _large_gemm_share_of_mamf("b200") == pytest.approx(0.67, rel=1e-3)
    assert _large_gemm_share_of_mamf("gb300") == pytest.approx(0.70, rel=1e-3)
    assert _large_gemm_share_of_mamf("a100-80gb") == pytest.approx(c.gemm_efficiency_of_mamf)
    assert _large_gemm_share_of_mamf("mi300x") == pytest.approx(c.gemm_efficiency_of_mamf)


def test_a_cluster_whose_lone_gemm_runs_as_the_model_expects_keeps_its_prediction() -> None:
    """A Blackwell GPU's share already holds what its GEMM library loses at training shapes
    (its microbenchmark share): a cluster that measures accept's lone 8192^3 GEMM at the rate
    the model expects of a lone GEMM (MAMF x microbenchmark share x eta_shape) keeps the
    training-step GEMM rate it had, and the change reported for its ceiling is nil."""
    c = load_constants()
    for gpu_id in ("b200", "gb300", "h100-sxm"):
        perf = gpu_perf(load_catalog().gpus[gpu_id], "fp8")
        n = ACCEPT_GEMM_SIZE
        lone = c.gemm_microbench_share.get(gpu_id, 1.0) * perf.bf16_matmul_tflops
        measured = lone * gemm_shape_efficiency(n, n, n, perf)
        calibration = calibration_from_dict({"gemm_tflops": measured})
        calibrated = calibrated_perf(perf, calibration)
        before = perf.matmul_tflops * perf.gemm_efficiency
        assert calibrated.matmul_tflops * calibrated.gemm_efficiency == pytest.approx(before)
        (change,) = perf_changes(perf, calibration)
        assert change.change == pytest.approx(0.0, abs=1e-9), gpu_id


def test_gb300_without_a_published_mamf_takes_the_default_share_of_its_peak() -> None:
    """No GB300 MAMF is published (docs/validation.md, "GB300 GEMM ceiling"): its ceilings are
    default_mamf_fraction of the datasheet peaks, 1,950 / 3,900 TFLOP/s BF16 / FP8."""
    gb300 = load_catalog().gpus["gb300"]
    c = load_constants()
    assert ("gb300", "bf16") not in c.mamf_tflops
    assert gpu_perf(gb300, "bf16").matmul_tflops == pytest.approx(2500 * c.default_mamf_fraction)
    assert gpu_perf(gb300, "fp8").matmul_tflops == pytest.approx(5000 * c.default_mamf_fraction)
