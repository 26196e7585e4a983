"""Composer's training loop around an FSDP model (LLM Foundry's MPT benchmarks): the training
metrics evaluated on every micro-batch's logits, and FSDP1's ``BACKWARD_POST`` prefetch,
Composer's default, which leaves each unit's backward all-gather in front of its gradients."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.compute import layer_times
from clusterforge.perf.host import HOST_OP_S
from clusterforge.perf.logits import (
    TORCH_CROSS_ENTROPY_BYTES,
    TORCH_CROSS_ENTROPY_KERNELS,
    logits_times,
)
from clusterforge.perf.memory import layer_params_per_gpu, stage_params
from clusterforge.perf.parallel import shard_groups
from clusterforge.perf.roofline import gpu_perf, load_constants, memory_time_s
from clusterforge.perf.sharded import zero3_exposed_s
from clusterforge.perf.stack import stack_named
from clusterforge.perf.train_metrics import (
    TRAIN_METRIC_BYTES_PER_LOGIT,
    TRAIN_METRIC_KERNELS,
    TRAIN_METRIC_STATES,
    train_metrics_collectives_s,
    train_metrics_sync_s,
)
from clusterforge.perf.update import OPTIMIZER_HOST_CALLS_PER_TENSOR, optimizer_step_s

FSDP = replace(stack_named("fsdp"), attention="triton", cross_entropy="xentropy")
COMPOSER = replace(
    FSDP, train_metric_passes=2, fsdp_backward_prefetch="post", optimizer="per_tensor_sync"
)


def _plan(num_gpus: int, micro_batch: int, *, zero_stage: int = 3) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=num_gpus),
        global_batch=num_gpus * micro_batch,
        micro_batch=micro_batch,
        seq_length=2048,
        recompute="none",
        zero_stage=zero_stage,
    )


@pytest.fixture
def mpt_1b(models):
    return models["gpt3-1.3b"]


def test_training_metrics_read_the_logits_in_two_more_unfused_cross_entropies(mpt_1b) -> None:
    """Composer's LanguageCrossEntropy and LanguagePerplexity each run PyTorch's
    cross-entropy over the BF16 logits under autocast, which runs log-softmax in FP32: the
    cast (6 B per logit), then three reads of the FP32 row and a write (16 B), three
    kernels with nll_loss."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(8, 14)
    base = sum(logits_times(mpt_1b, plan, perf, FSDP))
    metrics = sum(logits_times(mpt_1b, plan, perf, COMPOSER))
    logits = 14 * 2048 * mpt_1b.vocab_size
    assert TRAIN_METRIC_BYTES_PER_LOGIT == 22.0
    expected = memory_time_s(2 * 22.0 * logits, perf, num_kernels=6)
    assert metrics - base == pytest.approx(expected, rel=1e-6)
    assert layer_times(mpt_1b, plan, perf, COMPOSER) == layer_times(mpt_1b, plan, perf, FSDP)


def test_a_training_metric_passes_over_the_logits_as_torch_cross_entropy_forward() -> None:
    """Under autocast a metric's cross-entropy on BF16 logits is ATen's FP32 path: the same
    cast and log-softmax passes as the forward of eager ``F.cross_entropy(logits.float())``,
    not a log-softmax on the BF16 logits (ATen's half-to-float kernel is FP16-only)."""
    assert TORCH_CROSS_ENTROPY_BYTES[0] == TRAIN_METRIC_BYTES_PER_LOGIT
    assert TORCH_CROSS_ENTROPY_KERNELS[0] == TRAIN_METRIC_KERNELS


def test_backward_post_prefetch_leaves_each_backward_gather_exposed(mpt_1b, h100_comm) -> None:
    """With BACKWARD_POST the next unit's all-gather is issued once the current unit's
    gradients exist, so every unit but the last waits for its whole gather in the
    backward; BACKWARD_PRE hides it behind the previous unit's gradients."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(64, 20)
    times = layer_times(mpt_1b, plan, perf, FSDP)
    layers = mpt_1b.num_layers
    pre = zero3_exposed_s(mpt_1b, plan, h100_comm, FSDP, times, layers=layers, num_micro=1)
    post_stack = replace(FSDP, fsdp_backward_prefetch="post")
    post = zero3_exposed_s(mpt_1b, plan, h100_comm, post_stack, times, layers=layers, num_micro=1)
    per_unit = (post - pre) / (layers - 1)
    shard = shard_groups(plan)[0]
    gathered = 2 * layer_params_per_gpu(mpt_1b, plan)
    gather = h100_comm.collective_time_s("all_gather", gathered, shard)
    # what was hidden now waits, less the slowdown it used to inflict on the compute
    hidden_cost = load_constants().overlap_interference * gather
    assert per_unit == pytest.approx(gather - hidden_cost, rel=1e-6)
    assert per_unit > 0.5 * gather


def test_backward_post_changes_nothing_without_a_backward_gather(mpt_1b, h100_comm) -> None:
    """SHARD_GRAD_OP keeps each unit gathered from its forward to its backward: nothing to
    prefetch in the backward, whichever prefetch mode."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(64, 12, zero_stage=2)
    times = layer_times(mpt_1b, plan, perf, FSDP)
    post_stack = replace(FSDP, fsdp_backward_prefetch="post")
    args = dict(layers=mpt_1b.num_layers, num_micro=1)
    assert zero3_exposed_s(mpt_1b, plan, h100_comm, post_stack, times, **args) == zero3_exposed_s(
        mpt_1b, plan, h100_comm, FSDP, times, **args
    )


def test_composer_mechanisms_slow_a_small_mpt_step(mpt_1b, h100, h100_comm) -> None:
    plan = _plan(64, 20)
    base = predict_step(mpt_1b, plan, h100, h100_comm, 64, FSDP)
    composer = predict_step(mpt_1b, plan, h100, h100_comm, 64, COMPOSER)
    assert composer.step_time_s > 1.02 * base.step_time_s


def test_composer_adamw_updates_tensor_by_tensor_behind_a_blocking_step_read(
    mpt_1b, models
) -> None:
    """Composer's DecoupledAdamW reads each parameter's step counter with ``.item()`` and
    then issues eight unfused ops (80 B per FP32 parameter): the host waits for the GPU
    before every tensor. With a small shard per rank the host's issue time dominates; with
    a large shard the unfused HBM passes do."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    layers = mpt_1b.num_layers
    big_shard = _plan(8, 14)
    small_shard = _plan(512, 8)
    for plan in (big_shard, small_shard):
        fused = optimizer_step_s(mpt_1b, plan, perf, layers)[0]
        composer = optimizer_step_s(mpt_1b, plan, perf, layers, stack=COMPOSER)[0]
        assert composer > fused
    # 512 ranks: about one tensor per block and rank, ten host calls each
    tensors = layers * (1 + 11 / 512) + 1 + 3 / 512
    host = tensors * OPTIMIZER_HOST_CALLS_PER_TENSOR * HOST_OP_S["x86"]
    assert optimizer_step_s(mpt_1b, small_shard, perf, layers, stack=COMPOSER)[0] == pytest.approx(
        host, rel=1e-6
    )
    # a 6.7B model over 8 ranks: 830 M parameters each, the HBM passes of the eight ops
    big = models["gpt3-6.7b"]
    layers = big.num_layers
    owned = stage_params(big, big_shard, layers, first=True) / 8
    tensors = layers * (1 + 11 / 8) + 1 + 3 / 8
    passes = memory_time_s(owned * 80, perf, num_kernels=round(8 * tensors))
    assert passes > tensors * OPTIMIZER_HOST_CALLS_PER_TENSOR * HOST_OP_S["x86"]
    unfused = optimizer_step_s(big, big_shard, perf, layers, stack=COMPOSER)[0]
    assert unfused == pytest.approx(passes, rel=1e-6)


def test_training_metrics_sync_every_state_across_all_ranks_once_per_step(mpt_1b) -> None:
    """After each batch Composer computes the training metrics: each of the two scalar
    states of each metric is gathered from every rank into a Python list of one tensor per
    rank (``zeros_like`` and the NCCL copy-out per rank), with the GPU drained, so the host
    time grows with the number of GPUs and is exposed."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    layers = mpt_1b.num_layers
    small, large = _plan(64, 8), _plan(512, 8)
    plain = optimizer_step_s(mpt_1b, large, perf, layers, stack=FSDP)[1]
    other = optimizer_step_s(mpt_1b, large, perf, layers, stack=COMPOSER)[1]
    calls = 2 * 2 * (4 + 2 * 512)
    assert other - plain == pytest.approx(calls * HOST_OP_S["x86"], rel=1e-6)
    grown = other - plain
    base = optimizer_step_s(mpt_1b, small, perf, layers, stack=COMPOSER)[1]
    assert grown > 6 * (base - optimizer_step_s(mpt_1b, small, perf, layers, stack=FSDP)[1])


def test_metric_sync_waits_on_a_barrier_and_an_all_gather_per_state(h100_comm) -> None:
    """Each metric state's sync is a barrier (a one-element all-reduce) and an all-gather of
    one scalar per rank over every rank, back to back with the host waiting: latency-bound
    calls that grow with the rank count (the ring all-gather's ``n - 1`` steps)."""
    states = COMPOSER.train_metric_passes * TRAIN_METRIC_STATES
    at_64 = train_metrics_collectives_s(COMPOSER, h100_comm, 64)
    world = np.arange(64).reshape(1, 64)
    barrier = h100_comm.collective_time_s("all_reduce", 4.0, world)
    gather = h100_comm.collective_time_s("all_gather", 4.0 * 64, world)
    assert at_64 == pytest.approx(states * (barrier + gather), rel=1e-9)
    assert train_metrics_collectives_s(COMPOSER, h100_comm, 8) < at_64
    assert train_metrics_collectives_s(FSDP, h100_comm, 64) == 0.0
    assert train_metrics_collectives_s(COMPOSER, h100_comm, 1) == 0.0


def test_predicted_step_carries_the_metric_collectives(mpt_1b, h100_comm) -> None:
    """The step's ``other`` line holds the metric collectives of a Composer run."""
    gpu = load_catalog().gpus["h100-sxm"]
    plan = _plan(64, 20)
    with_sync = predict_step(mpt_1b, plan, gpu, h100_comm, 8, COMPOSER).breakdown.other_s
    no_metrics = replace(COMPOSER, train_metric_passes=0)
    without = predict_step(mpt_1b, plan, gpu, h100_comm, 8, no_metrics).breakdown.other_s
    host = train_metrics_sync_s(COMPOSER, 64, "x86")
    collectives = train_metrics_collectives_s(COMPOSER, h100_comm, 64)
    assert with_sync - without == pytest.approx(host + collectives, rel=1e-6)
