"""DeepSpeed ZeRO-3's gradient outside its bucket and Liger-Kernel's peak-memory parts."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.job import JobLayout
from clusterforge.perf.memory import activation_bytes_per_layer, memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import stack_named

LLAMA8B = ModelArch(
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=8,
    ffn_hidden_size=14336,
    vocab_size=128256,
    gated_mlp=True,
)
# The rows' settings: a fused attention kernel, no dropout.
DEEPSPEED = dataclasses.replace(stack_named("deepspeed"), attention="cudnn", dropout=False)
STAGES = (LLAMA8B.num_layers,)


def zero3(seq_length: int) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(dp=8), zero_stage=3, recompute="full", seq_length=seq_length, global_batch=8
    )


def test_only_the_largest_fresh_gradient_sits_outside_the_bucket() -> None:
    """The gathered working set holds the largest weight's BF16 gradient (4096 x 14336),
    not a unit's; without a bucket the unit's gradient stays."""
    no_bucket = dataclasses.replace(DEEPSPEED, zero3_reduce_bucket_params=0.0)
    plan = zero3(8192)
    with_bucket = memory_per_gpu(LLAMA8B, plan, STAGES, DEEPSPEED)
    without = memory_per_gpu(LLAMA8B, plan, STAGES, no_bucket)
    layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 2 * 4096 + 3 * 4096 * 14336
    unit_grad = layer * DEEPSPEED.grad_buffer_bytes
    fresh = 2 * 4096 * 14336
    diff_bytes = (with_bucket.weights_gib - without.weights_gib) * 2**30
    assert diff_bytes == pytest.approx(fresh - unit_grad)


def test_liger_loss_replaces_the_whole_logits_and_the_layer_adds_two_gradients() -> None:
    liger = dataclasses.replace(DEEPSPEED, liger_kernels=True, cross_entropy="te")
    te = dataclasses.replace(DEEPSPEED, cross_entropy="te")
    short, long = zero3(8192), zero3(196608)
    # 8K: the loss sets the peak; Liger's is 8 B per output weight, the output weight
    # gathered beyond a layer and one chunk of 256 tokens' logits, against 2 B per logit.
    v_h = 128256 * 4096
    layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 2 * 4096 + 3 * 4096 * 14336
    liger_loss = 8.0 * v_h + 2.0 * (v_h - layer) + 2.0 * 256 * 128256
    te_loss = 2.0 * 8192 * 128256
    diff = memory_per_gpu(LLAMA8B, short, STAGES, liger).activations_gib
    diff -= memory_per_gpu(LLAMA8B, short, STAGES, te).activations_gib
    assert diff * 2**30 == pytest.approx(liger_loss - te_loss)
    # 192K: the recomputed layer sets the peak with Liger, plus its incoming and down
    # projection input gradients (BF16, h + ffn per token); the whole logits without.
    tokens = 196608
    layer_now = activation_bytes_per_layer(LLAMA8B, long.with_(recompute="none"), liger)
    grads = 2.0 * tokens * (4096 + 14336)
    diff = memory_per_gpu(LLAMA8B, long, STAGES, liger).activations_gib
    diff -= memory_per_gpu(LLAMA8B, long, STAGES, te).activations_gib
    assert diff * 2**30 == pytest.approx(layer_now + grads - 2.0 * tokens * 128256)
