"""torchtitan's loss: eager ``F.cross_entropy`` on an FP32 copy of the logits."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.logits import logits_times
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

GIB = 2**30
PLAN = ParallelPlan(
    JobLayout(tp=1, pp=1, dp=8), micro_batch=1, seq_length=32768, recompute="full", zero_stage=3
)


def test_torchtitan_runs_pytorch_s_eager_cross_entropy() -> None:
    assert stack_named("torchtitan").cross_entropy == "torch"


def test_the_eager_loss_holds_three_fp32_copies_of_the_logits_at_its_peak(models) -> None:
    """In the loss backward the saved FP32 log-probabilities, the NLL's FP32 gradient and
    log_softmax's FP32 input gradient are alive together: 12 B per logit, where Megatron's
    in-place FP32 chain holds 4. At 32K tokens and a 128K vocabulary: 4.2 G logits, 31 GiB
    more."""
    arch = models["llama3-8b"]
    torchtitan = stack_named("torchtitan")
    stages = (arch.num_layers,)
    eager = memory_per_gpu(arch, PLAN, stages, torchtitan).total_gib
    chain = memory_per_gpu(arch, PLAN, stages, replace(torchtitan, cross_entropy="unfused"))
    logits = PLAN.seq_length * arch.vocab_size
    assert eager - chain.total_gib == pytest.approx(8.0 * logits / GIB, rel=1e-6)


def test_the_eager_loss_moves_48_bytes_per_logit(models) -> None:
    """Forward: cast to FP32 (2 + 4), log_softmax's max, sum and write passes (4 + 4 + 4 + 4);
    backward: the NLL gradient's zeros (4), log_softmax backward (4 + 4 + 4 + 4), the cast
    back (4 + 2): 22 + 26 B, against 34 + 18 of Megatron's FP32 chain."""
    arch = models["llama3-8b"]
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    torchtitan = stack_named("torchtitan")
    eager_fwd, eager_bwd = logits_times(arch, PLAN, perf, torchtitan)
    chain_fwd, chain_bwd = logits_times(
        arch, PLAN, perf, replace(torchtitan, cross_entropy="unfused")
    )
    assert eager_fwd < chain_fwd
    assert eager_bwd > chain_bwd


def test_the_loss_peak_and_a_layer_s_recompute_are_not_held_at_once(models) -> None:
    """The loss's backward runs and frees its FP32 logits before the last layer recomputes
    its forward: the transient is the larger of the two, not their sum."""
    from clusterforge.perf.memory import activation_bytes_per_layer

    arch = models["llama3-8b"]
    torchtitan = stack_named("torchtitan")
    memory = memory_per_gpu(arch, PLAN, (arch.num_layers,), torchtitan)
    tokens = PLAN.seq_length
    kept = activation_bytes_per_layer(arch, PLAN, torchtitan) * arch.num_layers
    embedding = 2.0 * tokens * arch.hidden_size
    loss = 12.0 * tokens * arch.vocab_size
    recomputed = activation_bytes_per_layer(arch, PLAN.with_(recompute="none"), torchtitan)
    assert recomputed < loss
    assert memory.activations_gib == pytest.approx((kept + embedding + loss) / GIB, rel=1e-9)
