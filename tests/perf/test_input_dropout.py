"""Dropout of every layer's input (praxis' ``StackedTransformer.input_dropout_prob`` on
Paxml's repeated one-layer block, ``GPT5BBase``): one BF16 read and write of the layer
input in the forward, again when the layer is recomputed, and over its gradient in the
backward; each test fails on a model that prices it otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.perf.paxml_arch import GPT5B

from clusterforge.job import JobLayout
from clusterforge.perf import STACK_NAMES, ParallelPlan, Stack, predict_step, stack_named
from clusterforge.perf.input_dropout import (
    INPUT_DROPOUT_PASS_BYTES,
    input_dropout_bytes,
    input_dropout_s,
)
from clusterforge.perf.roofline import gpu_perf, memory_time_s

MAXTEXT = stack_named("maxtext")
DROPPED = replace(MAXTEXT, layer_input_dropout=True)


def _plan(**changes: object) -> ParallelPlan:
    """dgxc's Paxml 5B recipe: FSDP over a node's 8 GPUs, two nodes, 4 x 2,048 tokens."""
    plan = ParallelPlan(
        JobLayout(dp=16),
        global_batch=64,
        micro_batch=4,
        seq_length=2048,
        recompute="selective",
        zero_stage=3,
        shard_size=8,
    )
    return plan.with_(**changes)


def test_no_named_stack_drops_out_layer_inputs() -> None:
    assert not any(stack_named(n).layer_input_dropout for n in STACK_NAMES)
    assert input_dropout_bytes(GPT5B, _plan(), MAXTEXT) == (0.0, 0)


@pytest.mark.parametrize(
    ("recompute", "passes", "kernels"),
    [("selective", 3.0, 3), ("full", 3.0, 3), ("none", 2.5, 2)],
)
def test_bytes_are_passes_over_the_layer_input(recompute: str, passes: float, kernels: int):
    """Rematerialised (a named-tensor policy, which names no dropout output, or full): three
    4-byte passes; kept: two passes and the 1-byte mask written and read."""
    elements = 4 * 2048 * 4096
    counted, num_kernels = input_dropout_bytes(GPT5B, _plan(recompute=recompute), DROPPED)
    assert counted == passes * INPUT_DROPOUT_PASS_BYTES * elements
    assert num_kernels == kernels


def test_sequence_parallel_ranks_drop_out_their_slice() -> None:
    plan = _plan(layout=JobLayout(dp=8, tp=2), sequence_parallel=True, global_batch=32)
    whole = input_dropout_bytes(GPT5B, plan.with_(sequence_parallel=False), DROPPED)[0]
    assert input_dropout_bytes(GPT5B, plan, DROPPED)[0] == whole / 2


def test_predict_step_adds_the_dropout_passes_of_every_layer(h100, h100_comm) -> None:
    """Through the public ``predict_step``: the step grows by the layers' dropout passes at
    the HBM rate, and by the carried-weight copies on top when the stack has both."""
    plan = _plan()
    perf = gpu_perf(h100, "bf16")
    base = predict_step(GPT5B, plan, h100, h100_comm, 8, MAXTEXT)
    dropped = predict_step(GPT5B, plan, h100, h100_comm, 8, DROPPED)
    num_bytes, kernels = input_dropout_bytes(GPT5B, plan, DROPPED)
    expected_s = GPT5B.num_layers * memory_time_s(num_bytes, perf, num_kernels=kernels)
    assert expected_s == input_dropout_s(GPT5B, plan, DROPPED, perf, GPT5B.num_layers)
    assert dropped.step_time_s - base.step_time_s == pytest.approx(expected_s, rel=1e-6)
    assert 0.002 < expected_s < 0.01  # 12 B x 33.6 M elements x 24 layers at H100's HBM rate
    paxml: Stack = replace(DROPPED, scan_carry_copies=True)
    both = predict_step(GPT5B, plan, h100, h100_comm, 8, paxml)
    copies = predict_step(GPT5B, plan, h100, h100_comm, 8, replace(MAXTEXT, scan_carry_copies=True))
    assert both.step_time_s - base.step_time_s == pytest.approx(
        (dropped.step_time_s - base.step_time_s) + (copies.step_time_s - base.step_time_s),
        rel=1e-6,
    )
    assert both.stack == "maxtext" and both.fits
