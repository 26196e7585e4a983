"""FSDP/HSDP development rows (validation/fms_fsdp_a100.toml, fms_fsdp_2024.toml,
llm_foundry_a100.toml): each
row ran, so it must be predicted to fit, and within 15 % (the per-class goal for FSDP and
HSDP runs), and the development MAPE of these rows stays at or under 15 %. The threshold
was set before the rows were first predicted; rows that miss it are strict xfails with
their cause. Only development rows are read here."""

from __future__ import annotations

import statistics

import pytest

from tests.validation.gaps import gap_cases
from validation.runs import Run, load_runs, predict_run

CLASS_TOLERANCE = 0.15
FILES = ("fms_fsdp_a100.toml", "fms_fsdp_2024.toml", "llm_foundry_a100.toml")
DEVELOPMENT = [r for r in load_runs() if r.file in FILES and r.subset == "development"]

MPT_30B_8K = (
    "MPT-30B, one 8K-token sequence per A100 with full recomputation: measured 574 tokens/s/GPU, "
    "63 % of the 2K-token run (916) where the FLOPs per token rise only 13 %; the model, with "
    "the Triton kernel at its measured share of FlashAttention-2's A100 rates and the "
    "early-stopped recomputation (PyTorch's non-reentrant checkpoint), is 38 % optimistic. Cause not found; candidate: memory pressure (73.0 of 74.5 GiB predicted: "
    "the PyTorch caching allocator frees and retries cudaMalloc near the limit)"
)
KNOWN_GAPS = {
    "llmfoundry-a100-mpt-30b-s8192": MPT_30B_8K,
}


def _cases() -> list[object]:
    return gap_cases(DEVELOPMENT, KNOWN_GAPS)


def test_each_source_has_development_rows() -> None:
    assert {r.file for r in DEVELOPMENT} == set(FILES)


@pytest.mark.parametrize("run", _cases())
def test_fsdp_development_run_fits_and_is_within_the_class_tolerance(run: Run) -> None:
    outcome = predict_run(run)
    assert outcome.prediction is not None, f"{run.name} ran but no allowed plan fits"
    assert abs(outcome.error) < CLASS_TOLERANCE


def test_fsdp_development_mape() -> None:
    errors = [predict_run(r).error for r in DEVELOPMENT]
    assert statistics.fmean(abs(e) for e in errors) <= CLASS_TOLERANCE
