"""FSDP in an XLA layer scan without the pipelined all-gather (``Stack.xla_pipelined_all_gather``
off): the layer's gathers combined up to XLA's default threshold, one in flight, each
started where the op reading the one before starts; each test fails on a model that prices
them otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_double import NcclRingComm
from tests.perf.paxml_arch import GPT5B

from clusterforge.job import JobLayout
from clusterforge.perf import STACK_NAMES, ParallelPlan, stack_named
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.memory import layer_params_per_gpu
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.roofline import load_constants
from clusterforge.perf.sharded import zero3_exposed_s
from clusterforge.perf.xla_scan import (
    XLA_ALL_GATHER_COMBINE_BYTES,
    chain_exposed_s,
    combined_groups,
    layer_weights,
    scan_gathers,
)

MAXTEXT = stack_named("maxtext")
UNPIPELINED = replace(MAXTEXT, xla_pipelined_all_gather=False)


def _plan(num_gpus: int = 256) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(dp=num_gpus),
        global_batch=8 * num_gpus,
        micro_batch=8,
        seq_length=2048,
        recompute="selective",
        zero_stage=3,
    )


def test_every_named_stack_pipelines_its_gathers() -> None:
    assert all(stack_named(n).xla_pipelined_all_gather for n in STACK_NAMES)


def test_xla_default_threshold_is_30_mib_plus_7() -> None:
    assert XLA_ALL_GATHER_COMBINE_BYTES == 31_457_287


def test_gathers_merge_up_to_the_threshold_and_large_ones_stay_alone() -> None:
    mb = 1e6
    groups = combined_groups([0.1 * mb, 100 * mb, 10 * mb, 15 * mb, 67 * mb], 31.4 * mb)
    assert groups == [(0, 0.1 * mb), (1, 100 * mb), (2, 25 * mb), (4, 67 * mb)]


def test_each_gather_hides_only_behind_the_compute_since_the_previous_ones_reader() -> None:
    """Three gathers of 2 ms; op 0 reads the first (nothing before it: 2 ms idle), the
    second starts when op 0 starts and hides behind its 1 ms (1 ms idle), the third behind
    op 1's 5 ms (none idle)."""
    ops = [(0, 1e-3), (1, 5e-3), (2, 1e-3)]
    idle, hidden = chain_exposed_s(ops, {0: 2e-3, 1: 2e-3, 2: 2e-3})
    assert idle == pytest.approx(3e-3)
    assert hidden == pytest.approx(3e-3)


def test_an_op_reading_nothing_does_not_wait() -> None:
    idle, hidden = chain_exposed_s([(-1, 4e-3), (1, 1e-3)], {1: 2e-3})
    assert (idle, hidden) == (pytest.approx(0.0), pytest.approx(2e-3))


def test_the_first_gather_of_each_pass_is_exposed_whole() -> None:
    """Paxml's GPT5BBase layer in BF16 over 256 GPUs: the norms' small gather is read by
    the first op of the forward and of the backward, with nothing before it."""
    plan, comm = _plan(), NcclRingComm()
    times = LayerTimes(0.012, 0.024, 0.002, 0.009, 0.001, 0.002)
    shard, _ = shard_groups(plan)
    it = scan_gathers(GPT5B, plan, comm, MAXTEXT, times, shard, regather=True)
    first = comm.collective_time_s("all_gather", 2 * 4096 * 2.0, shard)
    assert it.forward_s > first > 0.0
    assert it.backward_s > first
    assert scan_gathers(GPT5B, plan, comm, MAXTEXT, times, shard, regather=False).backward_s == 0


def test_unpipelined_scan_exposes_more_than_one_unit_prefetched(models) -> None:
    """Through ``zero3_exposed_s``: the pipelined form exposes the first gather and the last
    reduce-scatter of the step; without it every iteration leaves its own gathers exposed."""
    arch, plan, comm = models["llama2-7b"], _plan(), NcclRingComm()
    times = LayerTimes(0.012, 0.024, 0.002, 0.009, 0.001, 0.002)
    layers = arch.num_layers
    piped = zero3_exposed_s(arch, plan, comm, MAXTEXT, times, layers=layers, num_micro=1)
    unpiped = zero3_exposed_s(arch, plan, comm, UNPIPELINED, times, layers=layers, num_micro=1)
    shard, _ = shard_groups(plan)
    it = scan_gathers(arch, plan, comm, UNPIPELINED, times, shard, regather=True)
    assert unpiped > piped
    assert unpiped >= layers * (it.forward_s + it.backward_s)
    assert 0.0 < load_constants().overlap_interference < 1.0


def test_layer_weights_are_the_layers_parameters_in_forward_order() -> None:
    plan = _plan()
    weights = layer_weights(GPT5B, plan)
    h = 4096
    assert weights[1:] == [3 * h * h, h * h, 4 * h * h, 4 * h * h]
    assert sum(weights) == pytest.approx(layer_params_per_gpu(GPT5B, plan))


def test_full_recomputation_gathers_in_forward_order_for_the_rerun() -> None:
    """Under full recomputation the backward reruns the forward first, reading the weights
    in forward order, and the backward proper reads no new gather: its exposure is the
    forward's with the recomputed op times."""
    plan, comm = _plan().with_(recompute="full"), NcclRingComm()
    times = LayerTimes(0.012, 0.024, 0.012, 0.009, 0.001, 0.002)
    shard, _ = shard_groups(plan)
    it = scan_gathers(GPT5B, plan, comm, MAXTEXT, times, shard, regather=True)
    assert it.backward_s == pytest.approx(it.forward_s)
