"""The Paxml what-ifs (``benchmarks/paxml_fsdp_whatif.py``): each touches the Paxml runs
only, only ever slows them, and prices what its source says. Development rows only."""

from __future__ import annotations

from benchmarks.paxml_fsdp_whatif import (
    CANDIDATES,
    DROPOUT_LAYERS,
    PAXML_FILES,
    added_ms,
    dropout_layer_s,
    varied_prediction,
)

from clusterforge.perf.roofline import gpu_perf
from validation.runs import load_runs, predict_run, run_design


def _development() -> list:
    return [r for r in load_runs() if r.subset == "development"]


def test_what_ifs_leave_every_other_run_as_predicted() -> None:
    others = [r for r in _development() if r.file not in PAXML_FILES][:40]
    for run in others:
        assert varied_prediction(run, CANDIDATES) is predict_run(run).prediction


def test_each_what_if_slows_the_paxml_runs_it_applies_to() -> None:
    paxml = [r for r in _development() if r.file in PAXML_FILES]
    assert paxml
    for run in paxml:
        for candidate in CANDIDATES:
            extra = added_ms(run, (candidate,))
            if candidate == "dropout" and run.arch.num_layers != DROPOUT_LAYERS:
                assert extra == 0.0, run.name  # only GPT5BBase sets an input dropout
            else:
                assert extra > 0.0, (run.name, candidate)
        together = added_ms(run, CANDIDATES)
        alone = sum(added_ms(run, (c,)) for c in CANDIDATES)
        assert abs(together - alone) < 0.05 * alone


def test_input_dropout_is_a_few_activation_passes_per_layer() -> None:
    run = next(r for r in _development() if r.name == "pub-paxml-h100-gpt3-5b-bf16-16gpu")
    pred = predict_run(run).prediction
    assert pred is not None
    perf = gpu_perf(run_design(run).compute.gpu, "bf16")
    layer_share_s = pred.step_time_s / run.arch.num_layers
    assert 0.0 < dropout_layer_s(run.arch, pred.plan, perf) < 0.05 * layer_share_s
