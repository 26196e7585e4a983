"""The per-GEMM userbuffers window what-if and the GEMM profiling guide check
(``benchmarks/fp8_tp_gemm_window_whatif.py``; docs/validation.md, "FP8 against BF16 on
Blackwell: the GEMM profiling guide, the recipes' BF16 and FP8 settings, and TP overlap per
GEMM"). The model itself is unchanged: the what-if made calibration worse.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from benchmarks.fp8_tp_gemm_window_whatif import GUIDE_SPEEDUP, _guide_shapes, per_gemm_exposed_s

from clusterforge.catalog import load_catalog
from clusterforge.perf import exposure
from clusterforge.perf.compute import overlapped_s
from clusterforge.perf.roofline import gemm_time_s, gpu_perf, load_constants


def _exposed(
    monkeypatch: pytest.MonkeyPatch, gather_s: float, gemm_forward_s: float
) -> tuple[float, float]:
    """(per-GEMM, layer-window) exposed seconds of one Llama 3 70B layer at TP 8 when every
    collective (input gather, gradient gather, reduce-scatter) takes ``gather_s``."""
    monkeypatch.setattr(exposure, "_tp_calls_s", lambda *a: (gather_s, gather_s, gather_s))
    monkeypatch.setattr(exposure, "tp_backward_regathers", lambda *a: True)
    arch = load_catalog().models["llama3-70b"]
    plan = SimpleNamespace(layout=SimpleNamespace(tp=8), recompute="none")
    times = SimpleNamespace(gemm_forward_s=gemm_forward_s)
    per_gemm = per_gemm_exposed_s(plan, arch, None, None, times)
    layer = overlapped_s(10 * gather_s, 3 * gemm_forward_s)  # 4 forward, 6 backward calls
    return per_gemm, layer


def test_short_collectives_hide_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    # every collective shorter than the smallest GEMM: only the interference is exposed
    per_gemm, layer = _exposed(monkeypatch, 1e-6, 1e-3)
    assert per_gemm == pytest.approx(layer)
    assert layer == pytest.approx(load_constants().overlap_interference * 10e-6)


def test_a_collective_longer_than_its_gemm_is_exposed(monkeypatch: pytest.MonkeyPatch) -> None:
    # 70B at TP 8: the projection is 8,192 x 8,192 / 8 of the layer's weight GEMMs
    # (7.8 % of the forward GEMMs); a collective of 10 % of the forward GEMM time fits in
    # the layer's window but not behind the projection
    per_gemm, layer = _exposed(monkeypatch, 0.1e-3, 1e-3)
    assert layer == pytest.approx(load_constants().overlap_interference * 1.0e-3)
    assert per_gemm > layer


def test_the_guide_ratio_is_above_the_models_on_b300() -> None:
    # the model does not price B300's per-tensor FP8 GEMMs faster than the guide measured
    gpu = load_catalog().gpus["b300"]
    bf16, fp8 = gpu_perf(gpu, "bf16"), gpu_perf(gpu, "fp8")
    shapes = _guide_shapes()
    assert len(shapes) == 12
    ratio = sum(gemm_time_s(m, n, k, bf16) for m, k, n in shapes) / sum(
        gemm_time_s(m, n, k, fp8) for m, k, n in shapes
    )
    assert 1.85 < ratio < GUIDE_SPEEDUP["prequantized"]
