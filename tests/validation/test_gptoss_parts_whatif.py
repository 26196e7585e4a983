"""``benchmarks/gptoss_parts_whatif.py``: the 128-key window on Hopper from cuDNN's H200 tile
costs, and the attention output's eager bias. Pins that the shipped H100 / H200 rows are the
fit's rates, that the fit reproduces the measured sweep, that the variants move only the
gpt-oss Megatron-Bridge rows, and that the patches undo themselves. Only calibration and
development rows are read."""

from __future__ import annotations

import pytest
from benchmarks.gptoss_parts_whatif import (
    H200_WINDOW_1024,
    H200_WINDOW_ROWS,
    TILE,
    derived_rates,
    key_tiles,
    patched,
    tile_costs_s,
)

import clusterforge.perf.window_attention as window_module
from validation.class_errors import run_outcomes
from validation.runs import load_runs


def test_key_tiles_of_a_window_and_of_a_causal_row() -> None:
    assert key_tiles(4096, 128) == 63  # two tiles per query tile but the first
    assert key_tiles(4096, 1024) == 252  # nine per query tile from the ninth on
    assert key_tiles(4096, None) == 32 * 33 // 2


def test_the_fit_reproduces_the_measured_forward_sweep_and_gives_the_shipped_rows() -> None:
    a, b = tile_costs_s()["forward hd64 window sweep"]
    for tokens, forward_ms, _ in H200_WINDOW_1024:
        fitted = a * tokens / TILE + b * key_tiles(tokens, 1024)
        assert fitted == pytest.approx(forward_ms * 1e-3 / H200_WINDOW_ROWS, rel=0.01)
    forward, backward = derived_rates()
    rows = window_module._rows()
    for gpu in ("h100-sxm", "h200-sxm"):
        narrowest = rows[gpu][0]
        assert narrowest.window == 128
        assert narrowest.forward_tflops == pytest.approx(forward, abs=0.5)
        assert narrowest.backward_tflops == pytest.approx(backward, abs=0.5)
    assert derived_rates(llama_backward_tile=True)[1] < backward


def test_variants_move_only_gpt_oss_bridge_rows_and_restore_the_model() -> None:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    model = run_outcomes(runs)
    with patched("before", attention_bias=True):
        varied = run_outcomes(runs)
    moved = {name for name in model if abs(varied[name][0] - model[name][0]) > 1e-9}
    assert moved and all("gpt-oss" in name and name.startswith("bridge") for name in moved)
    # the measured 1,024-key rate makes the H100 rows more optimistic than the shipped one
    h100 = "bridge2604-h100-gpt-oss-120b"
    with patched("before", attention_bias=False):
        assert run_outcomes([r for r in runs if r.name == h100])[h100][0] > model[h100][0]
    assert run_outcomes(runs) == model
