"""``benchmarks/gb300_gemm_whatif.py``: the GB300 rows against a different GB300 GEMM ceiling.
Pins what the probe found: a higher GB300 MAMF moves only GB300 rows, brings the pessimistic
dense Megatron-Bridge rows closer while the 25.11 Llama 3 70B FSDP row and the optimistic
gpt-oss rows move away, and the model's own constants are back afterwards. Only calibration
and development rows are read."""

from __future__ import annotations

from benchmarks.gb300_gemm_whatif import outcomes_with_gb300_mamf

from validation.runs import load_runs, predict_run


def _errors(bf16_tflops: float, fp8_tflops: float) -> dict[str, float]:
    return {o.run.name: o.error for o in outcomes_with_gb300_mamf(bf16_tflops, fp8_tflops)}


def test_a_higher_gb300_ceiling_moves_only_gb300_rows_and_not_all_closer() -> None:
    model = _errors(2500 * 0.78, 5000 * 0.78)  # the model's own default share of peak
    raised = _errors(2500 * 0.78 * 1.1, 5000 * 0.78 * 1.1)
    for name, error in model.items():
        if "gb300" not in name:
            assert raised[name] == error, name
    assert abs(raised["bridge2511-gb300-llama3-8b"]) < abs(model["bridge2511-gb300-llama3-8b"])
    assert (
        raised["bridge2511-gb300-llama3-70b-fsdp"] > model["bridge2511-gb300-llama3-70b-fsdp"] > 0
    )
    assert raised["bridge2511-gb300-gpt-oss-120b"] > model["bridge2511-gb300-gpt-oss-120b"] > 0


def test_the_model_constants_are_restored_after_the_probe() -> None:
    run = next(r for r in load_runs() if r.name == "bridge2511-gb300-llama3-8b")
    before = predict_run(run).error
    outcomes_with_gb300_mamf(3000.0, 6000.0)
    assert predict_run(run).error == before
