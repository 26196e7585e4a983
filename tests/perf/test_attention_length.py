"""cuDNN's attention rate by call length (perf/attention_length.py): the measured sweep below
the 8k rate, the call length context parallelism leaves, and what that does to a layer."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.attention import attention_backward_s, attention_forward_s
from clusterforge.perf.attention_length import cudnn_call_length, cudnn_length_shares
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named


def _plan(seq: int, cp: int = 1, tp: int = 2) -> ParallelPlan:
    layout = JobLayout(tp=tp, pp=1, dp=1, cp=cp)
    return ParallelPlan(layout, micro_batch=1, seq_length=seq, recompute="none")


def _attention_s(gpu_id: str, plan: ParallelPlan, models, stack_name: str = "nemo") -> float:
    stack = replace(stack_named(stack_name), attention="cudnn")
    perf = gpu_perf(load_catalog().gpus[gpu_id], "bf16")
    arch = models["llama3-70b"]
    return attention_forward_s(arch, plan, perf, stack) + attention_backward_s(
        arch, plan, perf, stack
    )


def test_b200_sweep_at_4k_is_its_published_share_of_the_8k_rate() -> None:
    # cudnn-frontend, B200, cuDNN 9.13.1, causal, 128 / 8 heads: 855.678 / 701.265 TFLOP/s at
    # 4,096 tokens against 1,171.278 / 942.509 at 8,192
    forward, backward = cudnn_length_shares("b200", 4096)
    assert forward == pytest.approx(855.678 / 1171.278)
    assert backward == pytest.approx(701.265 / 942.509)
    assert cudnn_length_shares("gb200", 4096) == (forward, backward)  # the same die


def test_longer_calls_read_the_sweep_too() -> None:
    """The 8k rates are the sweep's own 8k points; a 32k call on B200 runs at the sweep's 32k
    rate, and a call beyond the longest swept length keeps that length's share."""
    for gpu in ("b200", "gb300", "h100-sxm"):
        assert cudnn_length_shares(gpu, 8192) == pytest.approx((1.0, 1.0))
    assert cudnn_length_shares("b200", 32768) == pytest.approx(
        (1419.000 / 1171.278, 1108.688 / 942.509)
    )
    assert cudnn_length_shares("h100-sxm", 1 << 20) == pytest.approx((688.0 / 644.0, 581.0 / 541.0))


def test_a_gpu_without_a_sweep_keeps_its_rate() -> None:
    assert cudnn_length_shares("a100-80gb", 2048) == (1.0, 1.0)


def test_hopper_loses_less_than_blackwell_at_4k() -> None:
    # H200 (cuDNN 9.19.1): 591 / 644 forward at 4k; B200 73 %
    hopper = cudnn_length_shares("h100-sxm", 4096)[0]
    assert hopper == pytest.approx(591.0 / 644.0)
    assert hopper > cudnn_length_shares("b200", 4096)[0] + 0.15


def test_the_ring_calls_score_the_pairs_of_a_causal_call_over_s_over_cp() -> None:
    ring = stack_named("nemo")
    assert ring.cp_overlap
    assert cudnn_call_length(_plan(8192), ring) == 8192
    assert cudnn_call_length(_plan(8192, cp=2), ring) == 4096
    gathered = replace(ring, cp_overlap=False)
    assert cudnn_call_length(_plan(8192, cp=4), gathered) == pytest.approx(4096)


def test_cp2_at_8k_runs_the_b200_attention_at_the_4k_rate(models) -> None:
    # the same pairs per GPU (half the sequence's causal pairs each way), at the 4k rate
    whole = _attention_s("b200", _plan(4096 * 2, cp=1, tp=4), models)
    ring = _attention_s("b200", _plan(8192, cp=2, tp=2), models)
    forward, backward = cudnn_length_shares("b200", 4096)
    # forward time at 1 / forward share, backward at 1 / backward share; kernel overheads aside
    slow = sorted((1.0 / forward, 1.0 / backward))
    assert slow[0] - 0.01 < ring / whole < slow[1] + 0.01
    assert ring / whole > 1.3


def test_without_context_parallelism_an_8k_layer_is_unchanged(models) -> None:
    stack = replace(stack_named("nemo"), attention="cudnn")
    perf = gpu_perf(load_catalog().gpus["b200"], "bf16")
    arch, plan = models["llama3-70b"], _plan(8192)
    forward = attention_forward_s(arch, plan, perf, stack)
    flops = 4.0 * arch.num_heads / 2 * 128 * 8192**2 / 2
    assert forward == pytest.approx(flops / 1171e12, rel=0.01)
