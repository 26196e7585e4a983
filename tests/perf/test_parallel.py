"""Plan validation messages, uneven pipeline splits and communication groups."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.parallel import ParallelPlan, rank_groups, validate_plan


def test_llama3_405b_split_126_layers_on_16_stages() -> None:
    stages = JobLayout(pp=16).split_layers(126)
    assert stages[0] == stages[-1] == 7
    assert set(stages[1:-1]) == {8}
    assert sum(stages) == 126


def test_even_split_and_explicit_split() -> None:
    assert JobLayout(pp=4).split_layers(80) == (20, 20, 20, 20)
    assert JobLayout(pp=3).split_layers(10, [3, 4, 3]) == (3, 4, 3)
    with pytest.raises(PlanError, match="summing to 10"):
        JobLayout(pp=3).split_layers(10, [3, 3, 3])


def test_vpp_needs_a_layer_per_chunk_but_not_divisibility() -> None:
    assert JobLayout(pp=16, vpp=2).split_layers(126)[0] == 7  # Llama 3: uneven chunks are fine
    with pytest.raises(PlanError, match="vpp = 8"):
        JobLayout(pp=16, vpp=8).split_layers(124)  # 126 slots: not 8 a stage, 7 layers on ends


def test_embedding_and_loss_take_a_chunk_each_at_405b_pp16_vp8() -> None:
    # Megatron-Core with account_for_embedding/loss_in_pipeline_split: 126 + 2 = 128 slots,
    # 8 a stage, 1 a chunk. get_transformer_layer_offset puts chunk (vp, pp) at slot
    # vp x 128 / 8 + pp = 16 vp + pp: slot 0 (vp 0 of stage 0) is the embedding, slot 127
    # (vp 7 of stage 15) the loss, so the end stages hold 7 layers and the others 8.
    job = JobLayout(pp=16, vpp=8)
    assert job.accounts_embedding_and_loss(126)
    slots = [[16 * vp + pp for vp in range(8)] for pp in range(16)]
    by_hand = tuple(sum(s not in (0, 127) for s in stage) for stage in slots)
    assert by_hand == (7,) + (8,) * 14 + (7,)
    assert job.split_layers(126) == by_hand


def test_layer_chunks_need_no_slot_accounting() -> None:
    # two or more slots a chunk: every chunk keeps a layer, the plain split applies
    assert not JobLayout(pp=16, vpp=4).accounts_embedding_and_loss(126)
    assert not JobLayout(pp=8, vpp=2).accounts_embedding_and_loss(126)
    assert not JobLayout(pp=16).accounts_embedding_and_loss(126)  # no interleaving


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"layout": JobLayout(tp=8, pp=8, dp=3)}, "TP x PP x CP x DP"),
        ({"global_batch": 100}, "global_batch = 100"),
        ({"layout": JobLayout(tp=8, pp=8, dp=8, ep=2)}, "MoE model"),
    ],
)
def test_inconsistent_plans_raise_plan_error(models, changes, message) -> None:
    base = ParallelPlan(JobLayout(tp=8, pp=8, dp=8), global_batch=512, seq_length=8192)
    with pytest.raises(PlanError, match=message):
        validate_plan(models["llama3-70b"], base.with_(**changes), 512)


def test_interleaving_without_a_pipeline_is_no_layout() -> None:
    with pytest.raises(PlanError, match="needs pp > 1"):
        JobLayout(tp=8, dp=64, vpp=2)


def test_tp_groups_are_consecutive_and_dp_groups_rail_aligned() -> None:
    plan = ParallelPlan(JobLayout(tp=8, pp=2, dp=4), global_batch=64)
    tp = rank_groups(plan, "tp")
    assert tp.shape == (4, 8)
    assert np.all(np.diff(tp, axis=1) == 1)
    dp = rank_groups(plan, "dp")
    assert dp.shape == (8, 4)
    assert np.all(dp % 8 == dp[:, :1] % 8)  # same local GPU index: one rail
    pp = rank_groups(plan, "pp")
    assert np.all(pp[:, 1] - pp[:, 0] == 32)


def test_heads_must_divide_by_tp(models) -> None:
    plan = ParallelPlan(JobLayout(tp=16, pp=1, dp=32), global_batch=512, seq_length=4096)
    with pytest.raises(PlanError, match="does not divide the 40 attention heads"):
        validate_plan(models["llama2-13b"], plan, 512)


def test_plan_groups_are_its_job_layouts() -> None:
    plan = ParallelPlan(JobLayout(tp=4, pp=2, dp=4, cp=2), global_batch=64, seq_length=8192)
    assert plan.layout.num_gpus == 64
    for kind in ("tp", "cp", "dp", "dpcp"):
        assert np.array_equal(rank_groups(plan, kind), plan.layout.groups(kind, stage=0))
    assert np.array_equal(rank_groups(plan, "pp", stage=1), plan.layout.pipeline_pairs(1))


def test_hsdp_shard_size_must_divide_the_replicas(models) -> None:
    plan = ParallelPlan(JobLayout(tp=8, pp=1, dp=64), global_batch=512, zero_stage=3, shard_size=24)
    with pytest.raises(PlanError, match="fsdp_shard_size = 24"):
        validate_plan(models["llama3-70b"], plan, 512)
    assert validate_plan(models["llama3-70b"], plan.with_(shard_size=16), 512)
