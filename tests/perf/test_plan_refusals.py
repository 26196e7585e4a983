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
