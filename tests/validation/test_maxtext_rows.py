"""The MaxText FSDP rows (NVIDIA dgxc-benchmarking, Llama 2/3 70B on 64-2,048 H100): run on
the ``maxtext`` stack with the recipe's named-tensor remat policy. Before that stack they ran
as PyTorch FSDP with full recomputation and came out 9-24 % pessimistic."""

from __future__ import annotations

import pytest

from validation.runs import Run, _stack, load_runs, predict_run

CLASS_TOLERANCE = 0.15
FILE = "pub_maxtext_fsdp_h100.toml"
DEVELOPMENT = [r for r in load_runs() if r.file == FILE and r.subset == "development"]


def test_rows_run_the_maxtext_stack_with_the_recipe_policy() -> None:
    """configure.sh: Llama 2 BF16 keeps the Q, K, V, output projection and MLP output,
    FP8 the same without the MLP output; Llama 3 ``save_qkv_proj`` keeps Q, K, V only."""
    by_name = {r.name: r for r in DEVELOPMENT}
    bf16 = by_name["pub-maxtext-h100-llama2-70b-bf16-64gpu"].stack
    fp8 = by_name["pub-maxtext-h100-llama2-70b-fp8-64gpu"].stack
    llama3 = by_name["pub-maxtext-h100-llama3-70b-bf16-128gpu"].stack
    assert bf16.name == "maxtext" and bf16.selective_recompute == "saved_names"
    assert set(bf16.remat_saved) - set(fp8.remat_saved) == {"mlpwo"}
    assert set(fp8.remat_saved) - set(llama3.remat_saved) == {"out_proj"}


def test_unknown_remat_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="remat_saved names \\['mlp_out'\\] unknown"):
        _stack({"name": "x", "stack": "maxtext", "remat_saved": ["query_proj", "mlp_out"]})


@pytest.mark.parametrize("run", DEVELOPMENT, ids=[r.name for r in DEVELOPMENT])
def test_maxtext_development_run_is_within_the_class_tolerance(run: Run) -> None:
    outcome = predict_run(run)
    assert outcome.prediction is not None, f"{run.name} ran but no allowed plan fits"
    assert abs(outcome.error) < CLASS_TOLERANCE


PAXML = [
    r for r in load_runs() if r.file == "pub_paxml_fsdp_h100.toml" and r.subset == "development"
]


@pytest.mark.parametrize("run", PAXML, ids=[r.name for r in PAXML])
def test_paxml_development_run_is_predicted_to_fit(run: Run) -> None:
    """Every Paxml development row ran, so the model must find a plan that fits: the 175B
    rows did so only once a gathered unit's gradients are held in BF16 (77.4 GiB against
    79.6; 80.8 with FP32 unit gradients)."""
    assert predict_run(run).prediction is not None, f"{run.name} ran but no allowed plan fits"
