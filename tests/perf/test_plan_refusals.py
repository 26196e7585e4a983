"""Plans no run could start are refused with a clear error, not priced."""

from __future__ import annotations

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step


def test_fp8_on_a_gpu_without_fp8_tensor_cores_is_refused(models, h100_comm) -> None:
    # Transformer Engine refuses FP8 below compute capability 8.9 (A100 is 8.0).
    a100 = load_catalog().gpus["a100-80gb"]
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=32, seq_length=8192)
    predict_step(models["llama3-8b"], plan, a100, h100_comm, 8)  # BF16 runs
    with pytest.raises(PlanError, match="no FP8 tensor cores"):
        predict_step(models["llama3-8b"], plan.with_(precision="fp8"), a100, h100_comm, 8)


def test_fp8_on_h100_is_priced(models, h100, h100_comm) -> None:
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=32, precision="fp8")
    assert predict_step(models["llama3-8b"], plan, h100, h100_comm, 8).mfu > 0


@pytest.mark.parametrize("global_batch", [0, -8])
def test_a_global_batch_below_one_micro_batch_per_rank_is_refused(
    models, h100, h100_comm, global_batch: int
) -> None:
    plan = ParallelPlan(JobLayout(tp=1, pp=1, dp=8), global_batch=global_batch)
    with pytest.raises(PlanError, match="use at least micro_batch x DP"):
        predict_step(models["llama3-8b"], plan, h100, h100_comm, 8)


def test_a_size_sweep_search_names_the_refused_precision() -> None:
    """With several GPU counts a search skips a count where no plan fits; a precision the GPU
    cannot run is refused before it, not reported as no plan fitting."""
    from clusterforge.design import plan as design_plan
    from clusterforge.perf import PredictRequest, run_predict
    from clusterforge.perf.predict import PlanOverrides
    from clusterforge.spec import parse_spec

    spec = parse_spec(
        {
            "name": "a100-fp8",
            "num_gpus": 16,
            "node": "dgx-a100",
            "workload": {"model": "llama3-8b", "global_batch": 64, "precision": "fp8"},
        }
    )
    design = design_plan(spec)
    for counts in [(8,), (8, 16)]:
        request = PredictRequest(search=True, gpu_counts=counts)
        with pytest.raises(PlanError, match="no FP8 tensor cores"):
            run_predict(design, request)
    bf16 = PlanOverrides(precision="bf16")
    request = PredictRequest(bf16, search=True, gpu_counts=(8, 16))
    assert run_predict(design, request).predictions  # the override is what is checked
