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

LARGE_A100_GEMMS = (
    "published HFU 73-77 % of the A100's peak: the large GEMMs of these runs (micro-batches "
    "of 10-64 sequences, d_model >= 4096) run above the one large-shape efficiency the model "
    "uses (gemm_efficiency_of_mamf, fitted on Megatron calibration runs); not an FSDP cost "
    "(FSDP traffic stays on NVLink and is under 1 % of the predicted step)"
)
EAGER_GAP = (
    "eager FSDP on H100, 7b HSDP without recomputation: measured 7,500 tokens/s/GPU, 28 % "
    "below the same run with torch.compile (9,600); the model's eager element-wise op "
    "chains cost only 6 % of it, so eager comes out 19 % optimistic (compile removes more "
    "than the counted passes: candidates are layout copies around attention and the "
    "autograd of composite ops)"
)
KNOWN_GAPS = {
    "fms-fsdp-h100-llama2-7b-eager": EAGER_GAP,
    "fms-fsdp-h100-llama2-34b-compile": (
        "17 % optimistic since the shape-dependent GEMM model raised the large-shape ceiling "
        "to 0.85 of MAMF (it was within 15 % at 0.80): torch.compile on H100 with full "
        "recomputation of a d_model-8192 model; candidates: compile's fused kernels are not "
        "at cuBLAS's large-shape rate, the H100 HSDP all-gathers under recomputation"
    ),
    "llmfoundry-a100-mpt-13b-s4096": LARGE_A100_GEMMS,
    "llmfoundry-a100-mpt-7b-s4096": LARGE_A100_GEMMS,
    "llmfoundry-a100-mpt-1b-s8192": (
        "attention-bound (8K tokens, d_model 2048): the Triton flash-attention slowdowns "
        "against FlashAttention-2 (Dao 2023 §4.1: 1.4x forward, 2x backward) make the "
        "prediction slower than measured; not an FSDP cost"
    ),
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
