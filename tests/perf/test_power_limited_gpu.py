"""A GPU whose datasheet peak is lower than its catalog part's (a power-limited SKU) keeps
the measured ceilings' share of the peak: its matmul and attention rates scale with it."""

from __future__ import annotations

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.perf.attention import _fused_attention_rates
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_lower_peak_scales_the_measured_matmul_ceiling(precision: str) -> None:
    h100 = load_catalog().gpus["h100-sxm"]
    capped = h100.model_copy(
        update={
            "bf16_dense_tflops": h100.bf16_dense_tflops * 0.9,
            "fp8_dense_tflops": h100.fp8_dense_tflops * 0.9,
        }
    )
    full, low = gpu_perf(h100, precision), gpu_perf(capped, precision)
    assert low.matmul_tflops == pytest.approx(0.9 * full.matmul_tflops)
    assert low.bf16_matmul_tflops == pytest.approx(0.9 * full.bf16_matmul_tflops)
    stack = stack_named("torchtitan")
    assert _fused_attention_rates(stack, low)[0] == pytest.approx(
        0.9 * _fused_attention_rates(stack, full)[0]
    )


def test_catalog_part_is_unchanged() -> None:
    h100 = load_catalog().gpus["h100-sxm"]
    assert gpu_perf(h100, "bf16").attention_scale == 1.0
