"""A run's torch.compile setting reaches the model: the runs that state
``torch_compile = true`` (torchtitan's ``[compile]`` config) or ``compile = true`` (fms-fsdp)
run fused element-wise kernels, the others PyTorch eager. Only development rows are read."""

from __future__ import annotations

import pytest

from validation.runs import load_runs

DEVELOPMENT = [r for r in load_runs() if r.subset == "development"]


@pytest.mark.parametrize(
    ("name", "fused"),
    [
        ("pub-tt-h100-8b-8gpu-fsdp", False),
        ("pub-tt-h100-8b-8gpu-fsdp-compile-fp8", True),
        ("pub-tt-asynctp-70b-bf16-vanilla", True),
        ("fms-fsdp-h100-llama2-7b-eager", False),
        ("fms-fsdp-h100-llama2-7b-compile", True),
    ],
)
def test_stated_compile_setting_reaches_the_stack(name: str, fused: bool) -> None:
    run = next(r for r in DEVELOPMENT if r.name == name)
    assert run.stack.fused_elementwise is fused


def test_torchtitan_development_rows_state_the_500_w_part() -> None:
    """The torchtitan benchmark H100s (96 GB HBM2e at the default 500 W limit) state a BF16
    peak between the H100 SXM's and the H100 NVL's, below the catalog part's."""
    rows = [r for r in DEVELOPMENT if r.file == "pub_torchtitan_h100.toml"]
    assert rows
    for run in rows:
        peak = dict(run.gpu)["bf16_dense_tflops"]
        assert 835.5 < peak < 989
