"""An FP8 GEMM's output tiles are written in BF16: the epilogue does not speed up with FP8.

The BF16 rate is calibrated on training runs, so the time a BF16 GEMM spends writing its
output tiles is inside the calibrated share; the FP8 rate is that share times the FP8
ceiling, which would shrink the output write by the FP8 speed-up. The model adds back the
part of the write that the FP8 ceiling removed (``roofline.fp8_epilogue_s``).
"""

from __future__ import annotations

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import fp8_epilogue_s, gemm_time_s, gpu_perf, load_constants


@pytest.fixture
def h100():
    gpu = load_catalog().gpus["h100-sxm"]
    return gpu_perf(gpu, "bf16"), gpu_perf(gpu, "fp8")


def test_bf16_gemms_pay_no_fp8_epilogue(h100) -> None:
    bf16, _ = h100
    assert fp8_epilogue_s(98304, 4096, bf16) == 0.0


def test_the_fp8_epilogue_is_the_bf16_output_write_less_its_fp8_shrink(h100) -> None:
    bf16, fp8 = h100
    c = load_constants()
    write_s = 2 * 98304 * 4096 / (fp8.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency)
    shrink = 1.0 - bf16.matmul_tflops / fp8.matmul_tflops
    assert fp8_epilogue_s(98304, 4096, fp8) == pytest.approx(write_s * shrink)


def test_short_k_fp8_gemms_lose_more_of_the_fp8_speed_up(h100) -> None:
    """Llama 3 8B at TP 8: the row-parallel wo GEMM has K = 512, the column-parallel w13 K =
    4,096 with about the same output; the FP8 speed-up over BF16 is smaller at short K."""
    bf16, fp8 = h100
    tokens = 12 * 8192

    def speed_up(n: int, k: int) -> float:
        return gemm_time_s(tokens, n, k, bf16) / gemm_time_s(tokens, n, k, fp8)

    assert speed_up(4096, 512) < speed_up(3584, 4096) < fp8.matmul_tflops / bf16.matmul_tflops
    assert speed_up(4096, 512) < 1.5


def test_short_k_loses_fp8_rate_in_the_direction_published(h100) -> None:
    """meta-pytorch/float8_experimental PR 100 (2023-09-19), ``benchmarks/bench_matmul.py``,
    H100, cuBLASLt ``_scaled_mm`` on Llama 2 70B TP 8 shapes, M = 16,384: attn.w0 (K = 1,024,
    N = 8,192) in 0.257 ms, ffn.w13 (K = 8,192, N = 7,168) in 1.470 ms, i.e. 1,070 and 1,309
    TFLOP/s: the short-K GEMM keeps 0.82 of the long-K rate. Without the epilogue term the
    model kept the same rate at both shapes; with it the short-K GEMM loses part of what was
    measured (tile effects are near 1 at both shapes)."""
    _, fp8 = h100
    m = 16384

    def rate(n: int, k: int) -> float:
        return 2 * m * n * k / gemm_time_s(m, n, k, fp8)

    measured = (2 * m * 8192 * 1024 / 0.257e-3) / (2 * m * 7168 * 8192 / 1.470e-3)
    assert measured == pytest.approx(0.82, abs=0.01)
    assert measured < rate(8192, 1024) / rate(7168, 8192) < 0.95


def test_blackwell_drains_its_tensor_memory_accumulator_behind_the_next_tile() -> None:
    """B200's FP8 GEMMs keep the same share of MAMF as its BF16 ones at K = 2,048-4,096 (the
    XLA table rows of validation/gemm_microbench.toml): no exposed store on Blackwell."""
    fp8 = gpu_perf(load_catalog().gpus["b200"], "fp8")
    assert fp8_epilogue_s(98304, 4096, fp8) == 0.0
