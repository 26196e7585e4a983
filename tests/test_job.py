"""JobLayout: the one owner of the parallel degrees, the rank grid, its groups and checks."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import GROUP_KINDS, JobLayout


@pytest.fixture(scope="module")
def models():
    return load_catalog().models


def test_for_gpus_derives_dp_and_checks_an_explicit_one() -> None:
    assert JobLayout.for_gpus(512, tp=8, pp=4).dp == 16
    assert JobLayout.for_gpus(512, tp=8, pp=4, dp=16).num_gpus == 512
    with pytest.raises(PlanError, match="set data_parallel = 16"):
        JobLayout.for_gpus(512, tp=8, pp=4, dp=8)
    with pytest.raises(PlanError, match="does not divide num_gpus 512"):
        JobLayout.for_gpus(512, tp=3)


def test_degrees_must_be_positive_and_ep_divide_dp_cp() -> None:
    with pytest.raises(PlanError, match="tp = 0"):
        JobLayout(tp=0)
    with pytest.raises(PlanError, match="expert_parallel = 3"):
        JobLayout(dp=4, ep=3)


def test_check_batch_returns_micro_batches_and_names_the_fix() -> None:
    job = JobLayout(tp=8, pp=4, dp=16)
    assert job.check_batch(512, 2) == 16
    with pytest.raises(PlanError, match="use 512"):
        job.check_batch(500, 2)
    with pytest.raises(PlanError, match="multiple of pp = 4"):
        JobLayout(pp=4, dp=16, vpp=2).check_batch(16 * 6, 1)


def test_interleaving_needs_a_pipeline_on_construction() -> None:
    with pytest.raises(PlanError, match="needs pp > 1"):
        JobLayout(dp=16, vpp=2)
    with pytest.raises(PlanError, match="vpp = 0"):
        JobLayout(pp=2, vpp=0)
    assert JobLayout.for_gpus(64, pp=4, vpp=2).on_gpus(128) == JobLayout(pp=4, dp=32, vpp=2)


def test_check_model_heads_kv_heads_sequence_experts_layers(models) -> None:
    with pytest.raises(PlanError, match="40 attention heads"):
        JobLayout(tp=16).check_model(models["llama2-13b"], 4096)
    with pytest.raises(PlanError, match="2 x CP chunks"):
        JobLayout(cp=3).check_model(models["llama3-8b"], 8192)
    with pytest.raises(PlanError, match="MoE model"):
        JobLayout(dp=2, ep=2).check_model(models["llama3-8b"], 8192)
    with pytest.raises(PlanError, match="more than the 32 layers"):
        JobLayout(pp=64).check_model(models["llama3-8b"], 8192)
    JobLayout(tp=8, pp=4).check_model(models["llama3-70b"], 8192)  # a valid split passes


def test_groups_partition_every_stage_and_follow_megatron_order() -> None:
    job = JobLayout(tp=4, pp=2, dp=3, cp=2, ep=2)
    for kind in GROUP_KINDS:
        groups = job.groups(kind)
        assert np.array_equal(np.sort(groups.ravel()), np.arange(job.num_gpus)), kind
    tp = job.groups("tp", stage=0)
    assert np.all(np.diff(tp, axis=1) == 1)  # TP fastest: consecutive ranks
    cp = job.groups("cp", stage=0)
    assert np.all(np.diff(cp, axis=1) == job.tp)
    dp = job.groups("dp", stage=0)
    assert np.all(np.diff(dp, axis=1) == job.tp * job.cp)
    pp = job.groups("pp")
    assert np.all(np.diff(pp, axis=1) == job.tp * job.cp * job.dp)
    assert job.groups("dpcp", stage=1).shape == (job.tp, job.dp * job.cp)


def test_pipeline_pairs_connect_a_stage_to_the_next() -> None:
    job = JobLayout(tp=8, pp=4, dp=2)
    pairs = job.pipeline_pairs(1)
    assert pairs.shape == (16, 2)
    assert np.all(pairs[:, 1] - pairs[:, 0] == 16)
    last = job.pipeline_pairs(3)
    assert np.all(last[:, 0] == last[:, 1])


def test_expert_data_parallel_groups_join_the_same_expert_shard_of_every_ep_group() -> None:
    job = JobLayout(tp=2, dp=16, ep=4)
    ep = job.groups("ep", stage=0)
    edp = job.groups("edp", stage=0)
    assert edp.shape == (job.tp * job.ep, job.dp // job.ep)
    # Every expert-data-parallel group takes one rank of every EP group of its TP rank ...
    for group in edp:
        hits = [len(set(group) & set(block)) for block in ep]
        assert sorted(hits) == [0] * (len(ep) - len(group)) + [1] * len(group)
    # ... the ranks that hold the same experts (the same position inside their EP group).
    position = {int(r): i for block in ep for i, r in enumerate(block)}
    for group in edp:
        assert len({position[int(r)] for r in group}) == 1
    assert JobLayout(dp=8, ep=8).groups("edp").shape == (8, 1)  # EP = DP: nothing to reduce
