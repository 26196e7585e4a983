"""LLM Foundry's FlashAttention-2 path (``flash_attn_fn`` with ``flash_attn_varlen_func``):
Q, K and V are unpadded to the varlen layout and the output padded back in every layer, each
``unpad_input`` blocking the host twice (``torch.nonzero`` and ``.item()``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.compute import layer_times
from clusterforge.perf.host import FLASH_UNPAD_HOST_CALLS, HOST_OP_S
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named

FSDP = replace(stack_named("fsdp"), attention="flash")
UNPADDED = replace(FSDP, flash_unpad=True)


def _plan(micro_batch: int) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=8),
        global_batch=8 * micro_batch,
        micro_batch=micro_batch,
        seq_length=2048,
        recompute="none",
        zero_stage=3,
    )


@pytest.fixture
def mpt_3b(models):
    return models["gpt3-2.7b"]  # 32 layers of 2,560, MHA: MPT-3B's shape


def test_unpadding_moves_q_k_v_and_the_output_through_hbm_twice(mpt_3b) -> None:
    """Forward: three gathers (read + write Q, K, V) and the output scattered into zeros
    (write zeros, read, write); backward: three scatters into zeros and one gather. Per
    token of a 2,560-wide MHA layer: 4 x 3 h + 6 h forward, 6 x 3 h + 4 h backward (BF16),
    in 24 small kernels forward (seven per ``unpad_input``, three for the mask and the pad)
    and 7 backward."""
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    plan = _plan(8)
    base = layer_times(mpt_3b, plan, perf, FSDP)
    unpad = layer_times(mpt_3b, plan, perf, UNPADDED)
    h, tokens = mpt_3b.hidden_size, 8 * 2048
    fwd = memory_time_s(tokens * 18 * h, perf, num_kernels=24)
    # plus, in the backward, the cat of the Wqkv split's gradients that LLM Foundry's
    # wrapper brings with it (4 B x 3 h, one kernel; clusterforge.perf.eager_backward)
    bwd = memory_time_s(tokens * (22 + 12) * h, perf, num_kernels=7 + 1)
    assert unpad.forward_s - base.forward_s == pytest.approx(fwd, rel=0.05)
    assert unpad.backward_s - base.backward_s == pytest.approx(bwd, rel=0.05)


def test_unpadding_applies_only_to_the_flash_attention_2_call(mpt_3b) -> None:
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    triton = layer_times(mpt_3b, _plan(8), perf, replace(UNPADDED, attention="triton"))
    assert triton == layer_times(mpt_3b, _plan(8), perf, replace(FSDP, attention="triton"))


def test_host_blocking_unpad_leaves_the_gpu_idle_when_the_gathers_are_short(
    mpt_3b, h100, h100_comm
) -> None:
    """After the first blocking call the GPU has drained: the host issues the 21 calls up to
    the attention kernel while the GPU runs only the gathers. At one sequence per GPU the
    gathers take less than the host, so each layer's forward grows by more than its HBM
    passes; at a large micro-batch the gathers cover the host time."""
    plan = _plan(1)
    base = predict_step(mpt_3b, plan, h100, h100_comm, 8, FSDP)
    unpad = predict_step(mpt_3b, plan, h100, h100_comm, 8, UNPADDED)
    perf = gpu_perf(h100, "bf16")
    passes = (
        layer_times(mpt_3b, plan, perf, UNPADDED).total_s
        - layer_times(mpt_3b, plan, perf, FSDP).total_s
    )
    extra_per_layer = (unpad.breakdown.compute_s - base.breakdown.compute_s) / mpt_3b.num_layers
    host = FLASH_UNPAD_HOST_CALLS * HOST_OP_S["x86"]
    assert extra_per_layer > passes + 0.5 * host
    assert extra_per_layer < passes + host
