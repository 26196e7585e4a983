"""HSDP's replica all-reduces on unrolled XLA layers merged by XLA's all-reduce combiner
(``Stack.unrolled_all_reduce_combine_bytes``): the parameter tree's order, the combiner's
greedy calls, and the calls' exposure after the backward; each test fails on a model that
prices them otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_double import IdealFabricComm

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import STACK_NAMES, ParallelPlan, stack_named
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.sharded import zero3_exposed_s
from clusterforge.perf.xla_combine import (
    merged_calls,
    merged_sync_s,
    parameter_tree,
    stage_calls,
)

LLAMA2_7B = load_catalog().models["llama2-7b"]
MAXTEXT = stack_named("maxtext")
UNROLLED = replace(MAXTEXT, unrolled_all_reduce_combine_bytes=1_073_741_824)
TIMES = LayerTimes(0.0129, 0.0268, 0.0011, 0.0109, 0.0009, 0.002)


def _plan(num_gpus: int) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(dp=num_gpus),
        global_batch=4 * num_gpus,
        micro_batch=4,
        seq_length=4096,
        recompute="selective",
        zero_stage=3,
        shard_size=8,
    )


def _comm() -> IdealFabricComm:
    return IdealFabricComm(gpus_per_node=8, nvlink_gbyte_per_s=450.0, nic_gbyte_per_s=12.5)


def test_no_named_stack_merges_across_layers() -> None:
    assert all(stack_named(n).unrolled_all_reduce_combine_bytes == 0 for n in STACK_NAMES)


def test_the_tree_sorts_layer_names_as_strings_and_holds_every_weight() -> None:
    tree = parameter_tree(LLAMA2_7B, 32)
    layers = [t.path.split("/")[1] for t in tree if t.path.startswith("decoder/layers_")]
    assert list(dict.fromkeys(layers))[:4] == ["layers_0", "layers_1", "layers_10", "layers_11"]
    assert sum(t.params for t in tree) == pytest.approx(6_738_415_616)
    assert tree[-1].path == "token_embedder" and tree[-1].ready_layers == 32


def test_calls_close_before_the_member_that_would_pass_the_threshold() -> None:
    calls = merged_calls([(4.0, 1), (5.0, 3), (2.0, 2), (12.0, 0), (1.0, 5)], 10.0)
    assert [(c.size_bytes, c.members, c.ready_layers) for c in calls] == [
        (9.0, 2, 3),
        (2.0, 1, 2),
        (12.0, 1, 0),
        (1.0, 1, 5),
    ]


def test_in_tree_order_every_1_gib_call_waits_for_the_end_of_the_backward() -> None:
    """Llama 2 7B over 16 VMs: 1.57 GiB of BF16 shards in two calls, each holding a layer
    the backward reaches last (layers_0, layers_3 ... layers_9) or the embedding."""
    calls = stage_calls(LLAMA2_7B, _plan(128), UNROLLED, 32)
    assert len(calls) == 2
    assert all(c.ready_layers == 32 for c in calls)
    assert sum(c.size_bytes for c in calls) == pytest.approx(6_738_415_616 / 8 * 2)
    backward = stage_calls(LLAMA2_7B, _plan(128), UNROLLED, 32, order="backward")
    assert backward[0].ready_layers < 32


def test_merged_calls_after_the_backward_are_exposed_whole() -> None:
    plan, comm = _plan(32), _comm()
    exposed = merged_sync_s(LLAMA2_7B, plan, comm, UNROLLED, TIMES, 32)
    replicas = shard_groups(plan)[1]
    whole = sum(
        comm.collective_time_s("all_reduce", c.size_bytes, replicas)
        for c in stage_calls(LLAMA2_7B, plan, UNROLLED, 32)
    )
    assert exposed == pytest.approx(whole)


def test_the_merged_calls_replace_the_per_layer_sync_only_across_replicas() -> None:
    comm = _comm()
    one_vm = _plan(8)
    kw = {"layers": 32, "num_micro": 1}
    assert zero3_exposed_s(LLAMA2_7B, one_vm, comm, UNROLLED, TIMES, **kw) == pytest.approx(
        zero3_exposed_s(LLAMA2_7B, one_vm, comm, MAXTEXT, TIMES, **kw)
    )
    four_vms = _plan(32)
    per_layer = zero3_exposed_s(LLAMA2_7B, four_vms, comm, MAXTEXT, TIMES, **kw)
    merged = zero3_exposed_s(LLAMA2_7B, four_vms, comm, UNROLLED, TIMES, **kw)
    assert merged > per_layer + 0.5 * merged_sync_s(LLAMA2_7B, four_vms, comm, UNROLLED, TIMES, 32)
