"""torchao float8 training as torchtitan runs it (pytorch/ao eab345c, ``torchao/float8``):
tensor-wise dynamic scaling per ``Float8Linear``, FSDP2 float8 all-gather of the weights.

Byte counts per element, compiled: amax read (2) + cast (2 + 1) per Linear input in the
forward; each output gradient's amax, cast and transposed copy (6: Inductor writes both
layouts from one read). Eager runs each op alone: abs, max (6) and to FP32, scale, clamp,
to FP8 (27), plus the gradient's transposed copy (2); each saved FP8 input's column-major copy for the weight gradient (2);
the gathered FP8 weight's column-major copy for the input gradient (2 per parameter).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.fp8 import (
    fp8_layer_bytes,
    fp8_weight_cast_bytes_per_micro,
    torchao_kernels,
)
from clusterforge.perf.stack import stack_named

TORCHTITAN = stack_named("torchtitan")
TOKENS = 2 * 8192


def _plan(dp: int = 8) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, dp=dp),
        global_batch=2 * dp,
        micro_batch=2,
        seq_length=8192,
        recompute="none",
        precision="fp8",
        zero_stage=3,
    )


@pytest.fixture(scope="module")
def llama8b():
    return load_catalog().models["llama3-8b"]


def test_stacks_name_their_fp8_recipe() -> None:
    assert TORCHTITAN.fp8_torchao
    assert not stack_named("megatron-core").fp8_torchao


def test_eager_casts_each_linears_input_and_copies_layouts_for_the_backward(llama8b) -> None:
    eager = replace(TORCHTITAN, fused_elementwise=False)
    h, q, kv, f = 4096, 4096, 1024, 14336
    assert (llama8b.hidden_size, llama8b.ffn_hidden_size) == (h, f)
    forward, backward = fp8_layer_bytes(llama8b, _plan(), eager)
    # wq, wk, wv each cast the attention norm output; w1, w3 the MLP norm output; wo, w2 their own.
    inputs = 3 * h + 2 * h + q + f
    assert forward == pytest.approx(inputs * 33.0 * TOKENS)
    grads = (q + 2 * kv) + h + 2 * f + h
    assert backward == pytest.approx((inputs * 2.0 + grads * 35.0) * TOKENS)


def test_compile_merges_repeated_casts_and_fuses_the_gradient_transpose(llama8b) -> None:
    compiled = replace(TORCHTITAN, fused_elementwise=True)
    h, q, kv, f = 4096, 4096, 1024, 14336
    forward, backward = fp8_layer_bytes(llama8b, _plan(), compiled)
    inputs = 2 * h + q + f
    assert forward == pytest.approx(inputs * 5.0 * TOKENS)
    grads = (q + 2 * kv) + h + 2 * f + h
    assert backward == pytest.approx((inputs * 2.0 + grads * 6.0) * TOKENS)
    eager = fp8_layer_bytes(llama8b, _plan(), replace(compiled, fused_elementwise=False))
    assert sum(eager) > forward + backward


def test_float8_all_gather_casts_shards_not_the_gathered_weight() -> None:
    params = 1e9
    plan = _plan(dp=8)
    got = fp8_weight_cast_bytes_per_micro(params, plan, TORCHTITAN, num_micro=4)
    # column-major copy of the gathered FP8 weight (2 B), FP32 shard read + FP8 write before
    # each of the two all-gathers (5 B over 8 shards), the step's amax of the shard (4 B / 4).
    assert got == pytest.approx(params * (2.0 + 2 * 5.0 / 8 + 4.0 / 8 / 4))
    no_reshard = replace(TORCHTITAN, fsdp_reshard_after_forward=False)
    assert fp8_weight_cast_bytes_per_micro(params, plan, no_reshard, 4) < got
    # More FSDP shards: less casting per GPU, never below the gathered weight's copy.
    wide = fp8_weight_cast_bytes_per_micro(params, _plan(dp=64), TORCHTITAN, 4)
    assert params * 2.0 < wide < got


def test_bf16_runs_pay_no_float8_pass(llama8b) -> None:
    plan = _plan().with_(precision="bf16")
    assert fp8_layer_bytes(llama8b, plan, TORCHTITAN) == (0.0, 0.0)
    assert fp8_weight_cast_bytes_per_micro(1e9, plan, TORCHTITAN, 1) == 0.0


def test_kernel_launches_follow_the_linears(llama8b) -> None:
    # torchtitan's Llama block: wq, wk, wv, wo, w1, w3, w2 (7 Float8Linears).
    compiled = torchao_kernels(llama8b, replace(TORCHTITAN, fused_elementwise=True))
    # 4 distinct inputs x (amax, cast); 7 gradient casts x 2 + 4 input copies.
    assert compiled == (4 * 2, 7 * 2 + 4)
    eager = torchao_kernels(llama8b, replace(TORCHTITAN, fused_elementwise=False))
    # 7 inputs x 6 ops; 7 gradients x (6 ops + transposed copy) + 7 input copies.
    assert eager == (7 * 6, 7 * 7 + 7)


def test_pipelined_fsdp_casts_its_float8_shards_once_per_step() -> None:
    """torchtitan turns FSDP's reshard_after_forward off under pipeline parallelism
    (``apply_fsdp`` at 9dec370) and the pipelining schedule keeps the stage unsharded for
    the backward, so the shard is cast and gathered once per step, not per micro-batch."""
    params = 1e9
    pipelined = replace(_plan(dp=8), layout=JobLayout(tp=1, dp=8, pp=4), global_batch=64)
    got = fp8_weight_cast_bytes_per_micro(params, pipelined, TORCHTITAN, num_micro=4)
    # column-major copy of the gathered weight each micro-batch (2 B); one cast of the FP32
    # shard (5 B over 8 shards) and one amax read (4 B over 8) per step, over 4 micro-batches.
    assert got == pytest.approx(params * (2.0 + 5.0 / 8 / 4 + 4.0 / 8 / 4))
