"""The unit collectives of FSDP (``clusterforge.perf.sharded.unit_collectives``): what one
unit's gather, re-gather, reduce-scatter and HSDP all-reduce cost per call, FSDP1's gradient
preparation in front of the reduce-scatter, and how the exposure rules use them. On NCCL's ring latency model (:class:`fabric_double.NcclRingComm`),
so a call's latency grows with the shard group: ``n - 1`` ring steps, ``nodes - 1`` of them
over the network (NVIDIA/nccl ``src/graph/tuning.cc``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_double import NcclRingComm

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.sharded import fsdp1_grad_prep_s, unit_collectives, zero3_exposed_s
from clusterforge.perf.stack import stack_named


def _plan(num_gpus: int, zero_stage: int) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=num_gpus),
        global_batch=8 * num_gpus,
        micro_batch=8,
        seq_length=2048,
        sequence_parallel=False,
        recompute="none",
        zero_stage=zero_stage,
    )


def test_a_unit_gather_pays_the_ring_latency_of_its_shard_group(models) -> None:
    """Llama 2 7B blocks (202 M parameters): from 128 GPUs (16 nodes) to
    512 (64 nodes) one BF16 gather of the same bytes grows by exactly NCCL's latency
    difference, (384 - 48) x 3.4 + 48 x 14 us = 1.81 ms; the bytes cost the same."""
    comm, stack, arch = NcclRingComm(), stack_named("fsdp"), models["llama2-7b"]
    small = unit_collectives(arch, _plan(128, 3), comm, stack, layers=arch.num_layers)
    large = unit_collectives(arch, _plan(512, 3), comm, stack, layers=arch.num_layers)
    latency = comm.latency_s("all_gather", 512, 64) - comm.latency_s("all_gather", 128, 16)
    assert latency == pytest.approx(1.8144e-3, rel=1e-4)
    bytes_share = 202e6 * 2 / (360e9) * (511 / 512 - 127 / 128)
    assert large.gather_s - small.gather_s == pytest.approx(latency + bytes_share, rel=1e-2)


def test_shard_grad_op_gathers_once_and_full_shard_twice(models) -> None:
    """FSDP's SHARD_GRAD_OP keeps each unit gathered from its forward to its backward (no
    re-gather); FULL_SHARD frees it after the forward and gathers it again."""
    comm, stack, arch = NcclRingComm(), stack_named("fsdp"), models["llama2-7b"]
    zero2 = unit_collectives(arch, _plan(128, 2), comm, stack, layers=arch.num_layers)
    zero3 = unit_collectives(arch, _plan(128, 3), comm, stack, layers=arch.num_layers)
    assert zero2.regather_s == 0.0
    assert zero3.regather_s == zero3.gather_s > 0.0
    assert zero2.reduce_s == zero3.reduce_s


def test_without_prefetch_every_unit_collective_is_exposed(models) -> None:
    """Gathered on demand (``fsdp_prefetch = 0``) nothing overlaps: the exposed time per
    micro-batch is the unit collectives back to back, whatever the compute."""
    comm, arch = NcclRingComm(), models["llama2-7b"]
    stack = replace(stack_named("fsdp"), fsdp_prefetch=0)
    plan = _plan(256, 3)
    times = LayerTimes(0.01, 0.02, 0.0, 0.008, 0.001, 0.002)
    c = unit_collectives(arch, plan, comm, stack, layers=arch.num_layers)
    exposed = zero3_exposed_s(arch, plan, comm, stack, times, layers=arch.num_layers, num_micro=2)
    assert exposed == pytest.approx(2 * c.per_micro_batch_s)
    assert c.units == arch.num_layers


def test_fsdp1_casts_and_predivides_each_gradient_before_its_reduce_scatter(h100) -> None:
    """FSDP1 with an FP32 reduce dtype: cast (read 2 B, write 4 B) and in-place pre-divide
    (read and write 4 B), 14 B per parameter in two kernels; with a BF16 reduce dtype no
    cast, the divide alone, 4 B. FSDP2 stacks (torchtitan) copy in instead."""
    perf = gpu_perf(h100, "bf16")
    fp32 = stack_named("fsdp")
    bf16 = replace(fp32, grad_reduce_bytes=2)
    params = 200e6
    assert fsdp1_grad_prep_s(fp32, perf, params) == memory_time_s(params * 14, perf, num_kernels=2)
    assert fsdp1_grad_prep_s(bf16, perf, params) == memory_time_s(params * 4, perf, num_kernels=2)
    assert fsdp1_grad_prep_s(fp32, None, params) == 0.0
    assert fsdp1_grad_prep_s(stack_named("torchtitan"), perf, params) == 0.0


def test_the_gradient_preparation_rides_with_its_reduce_scatter(models, h100) -> None:
    """On the reduce-scatter's stream and in front of it: gathered on demand, every unit's
    preparation adds to the exposed time as its reduce-scatter does."""
    comm, arch, perf = NcclRingComm(), models["llama2-7b"], gpu_perf(h100, "bf16")
    stack = replace(stack_named("fsdp"), fsdp_prefetch=0)
    plan = _plan(256, 3)
    times = LayerTimes(0.01, 0.02, 0.0, 0.008, 0.001, 0.002)
    c = unit_collectives(arch, plan, comm, stack, layers=arch.num_layers, perf=perf)
    assert c.prep_s > 0.0
    args = {"layers": arch.num_layers, "num_micro": 1}
    with_prep = zero3_exposed_s(arch, plan, comm, stack, times, perf=perf, **args)
    without = zero3_exposed_s(arch, plan, comm, stack, times, **args)
    assert with_prep - without == pytest.approx(c.units * c.prep_s + c.ends_prep_s)
