"""Mixture-of-experts mechanisms of the step model: what expert parallelism moves and where."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.exposure import dp_exposed_s
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.memory import (
    activation_bytes_per_layer,
    memory_per_gpu,
    stage_expert_params,
    stage_params,
)
from clusterforge.perf.parallel import rank_groups
from clusterforge.perf.stack import stack_named

NOT_OVERLAPPED = replace(stack_named("megatron-bridge"), dp_overlap=False)


def _plan(dp: int, ep: int) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=dp, ep=ep),
        global_batch=dp,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        recompute="full",
        zero_stage=1,
    )


def test_expert_gradients_reduce_over_the_expert_data_parallel_group(models, h100_comm) -> None:
    # Megatron-Core reduces and gathers expert parameters over the expert-data-parallel group
    # (the ranks holding the same experts), dense ones over DP x CP. With EP 8 inside each
    # node, that group has one GPU per node: its traffic crosses one NIC, not eight.
    arch, plan = models["gpt-oss-120b"], _plan(dp=64, ep=8)
    total = stage_params(arch, plan, arch.num_layers, first=True)
    expert = stage_expert_params(arch, plan, arch.num_layers)
    assert 0 < expert < total
    got = dp_exposed_s(plan, total, h100_comm, NOT_OVERLAPPED, 0.0, 0.0, 1, expert_params=expert)
    grads, weights = NOT_OVERLAPPED.grad_reduce_bytes, 2.0
    dense_groups, expert_groups = rank_groups(plan, "dpcp"), rank_groups(plan, "edp")
    want = sum(
        h100_comm.collective_time_s(c, (total - expert) * b, dense_groups)
        + h100_comm.collective_time_s(c, expert * b, expert_groups)
        for c, b in (("reduce_scatter", grads), ("all_gather", weights))
    )
    assert got == pytest.approx(want)
    everything_over_dp = dp_exposed_s(plan, total, h100_comm, NOT_OVERLAPPED, 0.0, 0.0, 1)
    assert got > 1.5 * everything_over_dp


def test_with_ep_equal_to_dp_expert_gradients_stay_on_their_gpu(models, h100, h100_comm) -> None:
    arch, plan = models["gpt-oss-120b"], _plan(dp=64, ep=64)
    step = predict_step(arch, plan, h100, h100_comm, 8, NOT_OVERLAPPED)
    dense = stage_params(arch, plan, arch.num_layers, first=True) - stage_expert_params(
        arch, plan, arch.num_layers
    )
    groups = rank_groups(plan, "dpcp")
    want = h100_comm.collective_time_s(
        "reduce_scatter", dense * NOT_OVERLAPPED.grad_reduce_bytes, groups
    ) + h100_comm.collective_time_s("all_gather", dense * 2.0, groups)
    assert step.breakdown.dp_comm_s == pytest.approx(want)


def test_the_distributed_optimizer_shards_expert_states_over_the_expert_data_parallel_group(
    models,
) -> None:
    # Megatron-Core's distributed optimizer shards each buffer over the group that reduces
    # it: dense states over DP x CP (64 here), expert states over DP x CP / EP (8 here).
    arch, plan = models["gpt-oss-120b"], _plan(dp=64, ep=8)
    stack = stack_named("megatron-bridge")
    layers = (arch.num_layers,)
    total = stage_params(arch, plan, arch.num_layers, first=True)
    expert = stage_expert_params(arch, plan, arch.num_layers)
    state = memory_per_gpu(arch, plan, layers, stack).optimizer_gib * 2**30
    assert state == pytest.approx(stack.optimizer_bytes * ((total - expert) / 64 + expert / 8))


def test_a_moe_layer_keeps_its_dispatched_token_copies_for_the_expert_weight_gradients(
    models,
) -> None:
    # The experts' first GEMM reads the top-k permuted copies of each token (Megatron-Core
    # permutes before the grouped GEMM); the backward needs that input for the weight
    # gradient, so a layer keeps top_k x h BF16 values per token beyond a dense layer's.
    moe = models["gpt-oss-120b"]
    plan = _plan(dp=8, ep=8).with_(micro_batch=2, recompute="none")
    stack = stack_named("megatron-bridge")
    dense = moe.model_copy(update={"num_experts": 1, "top_k": 1})
    tokens = plan.micro_batch * plan.seq_length
    extra = activation_bytes_per_layer(moe, plan, stack) - activation_bytes_per_layer(
        dense, plan, stack
    )
    # top-k MLP internals (already modelled) plus the top-k dispatched copies of the input
    mlp = (4.0 + 2.0) * moe.ffn_hidden_size * (moe.top_k - 1) * tokens
    assert extra == pytest.approx(mlp + 2.0 * moe.top_k * moe.hidden_size * tokens)


def test_te_grouped_linear_runs_four_expert_gemms_at_a_time(models, h100) -> None:
    # Transformer Engine's GroupedLinear launches one cuBLAS GEMM per local expert over four
    # compute streams: 16 experts of 1,024 tokens run as four rounds of four concurrent
    # GEMMs, each round with its own wave quantisation and kernel overhead, slower than one
    # kernel over all 16 experts' tiles.
    from clusterforge.perf.moe import grouped_gemm_time_s
    from clusterforge.perf.roofline import gemm_time_s, gpu_perf

    perf = gpu_perf(h100, "bf16")
    m, n, k = 1024.0, 5760.0, 2880.0
    rounds = grouped_gemm_time_s(m, n, k, perf, 16)
    assert rounds == pytest.approx(4 * gemm_time_s(m, n, k, perf, batch=4))
    assert rounds > gemm_time_s(m, n, k, perf, batch=16)
    # two experts run together in one round; six as a round of four and one of two
    assert grouped_gemm_time_s(m, n, k, perf, 2) == pytest.approx(
        gemm_time_s(m, n, k, perf, batch=2)
    )
    assert grouped_gemm_time_s(m, n, k, perf, 6) == pytest.approx(
        gemm_time_s(m, n, k, perf, batch=4) + gemm_time_s(m, n, k, perf, batch=2)
    )


def test_expert_backward_gemms_run_at_their_data_and_weight_gradient_shapes(models, h100) -> None:
    # GroupedLinear's backward (Transformer Engine v2.9 pytorch/module/grouped_linear.py)
    # runs two grouped GEMMs per linear, each through the same four-stream path as the
    # forward: the data gradient dY (m x n) @ W (n x k), whose inner dimension is the
    # linear's output width, and the weight gradient dY^T (n x m) @ X (m x k), whose inner
    # dimension is the expert's own token count m, accumulated into the FP32 main_grad
    # (read and write, 8 B per weight) under gradient-accumulation fusion.
    from clusterforge.perf.moe import expert_gemms_s, grouped_gemm_time_s
    from clusterforge.perf.roofline import gpu_perf

    arch = models["qwen3-30b-a3b"]
    # every expert at the mean rows (no random routing: see tests/perf/test_expert_rows.py)
    stack = replace(stack_named("megatron-bridge"), moe_random_routing=False)
    plan = _plan(dp=8, ep=8).with_(recompute="none")
    perf = gpu_perf(h100, "bf16")
    h, f, experts = arch.hidden_size, ffn_size(arch), arch.num_experts // 8
    up = 2 * f  # gated: fc1 holds both halves
    m = plan.micro_batch * plan.seq_length * arch.top_k * 8 / arch.num_experts
    forward, backward = expert_gemms_s(arch, plan, perf, stack)
    assert forward == pytest.approx(
        grouped_gemm_time_s(m, up, h, perf, experts) + grouped_gemm_time_s(m, h, f, perf, experts)
    )
    dgrad = grouped_gemm_time_s(m, h, up, perf, experts) + grouped_gemm_time_s(
        m, f, h, perf, experts
    )
    wgrad = grouped_gemm_time_s(up, h, m, perf, experts, output_bytes=8.0)
    wgrad += grouped_gemm_time_s(h, f, m, perf, experts, output_bytes=8.0)
    assert backward == pytest.approx(dgrad + wgrad)


def test_few_tokens_per_expert_make_the_weight_gradient_bound_by_its_fp32_accumulation(
    models, h100
) -> None:
    # 512 tokens x top-8 over 16 local experts: 256 tokens per expert, so each expert's
    # weight gradient reads 256-row inputs but reads and writes its whole FP32 main_grad:
    # it is bound by HBM, and a layer that accumulates in FP32 takes longer than one that
    # writes a BF16 gradient (no fusion); the forward does not change.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf

    arch = models["qwen3-30b-a3b"]
    fused = stack_named("megatron-bridge")
    unfused = replace(fused, fused_grad_accumulation=False)
    plan = _plan(dp=8, ep=8).with_(recompute="none", seq_length=512)
    perf = gpu_perf(h100, "bf16")
    with_fp32, with_bf16 = (
        layer_times(arch, plan, perf, fused),
        layer_times(arch, plan, perf, unfused),
    )
    assert with_fp32.forward_s == pytest.approx(with_bf16.forward_s)
    assert with_fp32.backward_s > with_bf16.backward_s


def test_several_experts_per_gpu_sort_the_received_tokens_into_expert_order_and_back(
    models,
) -> None:
    # Megatron-Core's all-to-all dispatcher permutes the top-k copies of each token (read
    # and write, 4 B per element), sorts the received chunks into expert order after the
    # dispatch and back before the combine when the GPU holds several experts (2 x 4 B),
    # and unpermutes (read each copy, 2 B, write the token once, 2 B).
    from clusterforge.perf.compute import _elementwise_bytes

    arch = models["gpt-oss-120b"]
    stack = stack_named("megatron-bridge")
    one_expert = _plan(dp=128, ep=128).with_(recompute="none")  # 128 experts on 128 GPUs
    sixteen = _plan(dp=128, ep=8).with_(recompute="none")
    dense = arch.model_copy(update={"num_experts": 1, "top_k": 1})
    tokens = one_expert.micro_batch * one_expert.seq_length
    h, k, f = arch.hidden_size, arch.top_k, arch.ffn_hidden_size
    activation = 6.0 * f * (k - 1)  # the top-k SwiGLUs beyond the dense layer's one
    base = _elementwise_bytes(dense, one_expert, stack)
    assert _elementwise_bytes(arch, one_expert, stack) - base == pytest.approx(
        (activation + (4 + 2) * h * k + 2 * h) * tokens
    )
    assert _elementwise_bytes(arch, sixteen, stack) - _elementwise_bytes(
        arch, one_expert, stack
    ) == pytest.approx(8 * h * k * tokens)


def test_current_scaling_quantises_each_local_experts_piece_with_three_kernels(
    models, h100
) -> None:
    # FP8 current scaling (TE's Float8CurrentScalingQuantizer: amax, scale, cast) splits the
    # grouped linears' inputs (forward) and output gradients (backward) per expert: with 16
    # local experts, 15 more pieces for each of the two expert GEMMs, 3 kernels each.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf, load_constants

    arch = models["qwen3-30b-a3b"]
    current = stack_named("megatron-bridge")
    assert current.fp8_scaling == "dynamic"
    delayed = replace(current, fp8_scaling="delayed")
    plan = _plan(dp=8, ep=8).with_(precision="fp8", recompute="none")
    perf = gpu_perf(h100, "fp8")
    one_local = plan.with_(layout=JobLayout(tp=1, pp=1, dp=128, ep=128))
    overhead = load_constants().kernel_overhead_s
    extra = 2 * 3 * 15 * overhead

    def gap(p: ParallelPlan) -> tuple[float, float]:
        cur, dly = layer_times(arch, p, perf, current), layer_times(arch, p, perf, delayed)
        return cur.forward_s - dly.forward_s, cur.backward_s - dly.backward_s

    (fwd16, bwd16), (fwd1, bwd1) = gap(plan), gap(one_local)
    assert fwd16 - fwd1 == pytest.approx(extra)
    assert bwd16 - bwd1 == pytest.approx(extra)


def test_the_optimizer_step_updates_the_expert_shard_of_the_expert_data_parallel_group(
    models, h100
) -> None:
    # The distributed optimizer shards expert states over DP x CP / EP ranks (8 here), dense
    # ones over DP x CP (64): each rank steps EP times more of the expert parameters.
    from clusterforge.perf.roofline import gpu_perf, load_constants, memory_time_s
    from clusterforge.perf.update import optimizer_step_s

    arch, plan = models["gpt-oss-120b"], _plan(dp=64, ep=8)
    perf = gpu_perf(h100, "bf16")
    total = stage_params(arch, plan, arch.num_layers, first=True)
    expert = stage_expert_params(arch, plan, arch.num_layers)
    owned = (total - expert) / 64 + expert / 8
    want = memory_time_s(owned * load_constants().optimizer_bytes_per_param, perf, num_kernels=4)
    assert optimizer_step_s(arch, plan, perf, arch.num_layers)[0] == pytest.approx(want)


def test_megatron_core_adds_the_second_expert_linears_bias_per_local_expert_in_eager(
    models, h100
) -> None:
    # TEGroupedMLP builds linear_fc2 with skip_bias_add=True and adds the bias itself, expert
    # by expert (``t + b * p``, then one torch.cat): 12 B per routed copy and hidden element
    # in the forward, 16 B in the backward, 2 + 4 kernels per local expert and a cat each
    # way. gpt-oss has biases; the same model without them, or a stack whose MoE layer is
    # not Megatron-Core's, pays nothing.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf, memory_time_s

    arch = models["gpt-oss-120b"]
    assert arch.linear_bias
    no_bias = arch.model_copy(update={"linear_bias": False})
    stack = stack_named("megatron-bridge")
    perf = gpu_perf(h100, "bf16")
    plan = _plan(dp=64, ep=8).with_(recompute="none")  # 16 local experts
    elements = plan.micro_batch * plan.seq_length * arch.top_k * arch.hidden_size
    with_bias, without = (
        layer_times(arch, plan, perf, stack),
        layer_times(no_bias, plan, perf, stack),
    )
    assert with_bias.forward_s - without.forward_s == pytest.approx(
        memory_time_s(12.0 * elements, perf, num_kernels=2 * 16 + 1)
    )
    assert with_bias.backward_s - without.backward_s == pytest.approx(
        memory_time_s(16.0 * elements, perf, num_kernels=4 * 16 + 1)
    )
    other = replace(stack, moe_expert_bias_eager=False)
    assert layer_times(arch, plan, perf, other).forward_s == pytest.approx(
        layer_times(no_bias, plan, perf, other).forward_s
    )


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_megatron_all_to_all_dispatcher_gathers_the_counts_and_exchanges_the_probs(
    models, h100, h100_comm, recompute
) -> None:
    # Megatron-Core's MoEAlltoAllTokenDispatcher (token_dispatcher.py): preprocess all-gathers
    # each rank's per-expert token counts (int64, num_experts of them) over the TP x EP group;
    # dispatch_all_to_all exchanges the permuted tokens and, in a second all-to-all, their
    # routing probabilities (FP32); the combine sends the tokens back. Autograd's backward of
    # each all-to-all is the reverse all-to-all (tokens, probs, combine); the counts have no
    # gradient. A full recompute repeats the forward's collectives.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.roofline import gpu_perf

    arch = models["gpt-oss-120b"]
    plan = _plan(dp=8, ep=8).with_(recompute=recompute)
    stack = stack_named("megatron-bridge")
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), stack)
    groups = rank_groups(plan, "ep")
    copies = plan.micro_batch * plan.seq_length * arch.top_k
    tokens = h100_comm.collective_time_s("all_to_all", copies * arch.hidden_size * 2.0, groups)
    probs = h100_comm.collective_time_s("all_to_all", copies * 4.0, groups)
    counts = h100_comm.collective_time_s("all_gather", arch.num_experts * 8.0 * 8, groups)
    assert 0 < counts < probs < tokens
    forwards = 2 if recompute == "full" else 1
    want = forwards * (2 * tokens + probs + counts) + 2 * tokens + probs
    got = layer_comm(arch, plan, times, h100_comm, stack, 8).ep_s
    assert got == pytest.approx(want)
    # a dispatcher without this metadata exchange (DeepSpeed's MoE) moves the tokens only
    other = layer_comm(arch, plan, times, h100_comm, stack_named("deepspeed"), 8).ep_s
    assert other == pytest.approx((2 * forwards + 2) * tokens)


def test_megatron_moe_with_tensor_parallelism_gathers_the_routed_copies_over_tp(
    models, h100, h100_comm
) -> None:
    # With TP > 1 (sequence parallel, expert tensor parallelism = TP, Megatron-Core's
    # default), the MoE layer takes its input sequence-sharded; after the EP all-to-all the
    # all-to-all dispatcher all-gathers the received top-k copies over TP
    # (dispatch_postprocess) and reduce-scatters the expert outputs before the combine
    # (combine_preprocess): the MLP's collective pair moves top_k x the dense MLP's bytes, in
    # BF16, and the backward runs the reverse pair without re-gathering (the gathered copies
    # are the grouped GEMM's saved input). The attention's pair is unchanged.
    from clusterforge.perf.compute import layer_times, tp_backward_regathers
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.roofline import gpu_perf

    arch = models["gpt-oss-120b"]
    plan = ParallelPlan(
        JobLayout(tp=2, pp=1, dp=4, ep=4),
        global_batch=4,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=True,
        recompute="none",
        zero_stage=1,
    )
    stack = replace(stack_named("megatron-bridge"), tp_overlap=False)
    assert tp_backward_regathers(plan, stack)
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), stack)
    groups = rank_groups(plan, "tp")
    size = plan.micro_batch * plan.seq_length * arch.hidden_size * 2.0
    ag = h100_comm.collective_time_s("all_gather", size, groups)
    rs = h100_comm.collective_time_s("reduce_scatter", size, groups)
    moe_ag = h100_comm.collective_time_s("all_gather", arch.top_k * size, groups)
    moe_rs = h100_comm.collective_time_s("reduce_scatter", arch.top_k * size, groups)
    attention = (ag + rs) + (ag + rs + ag)  # forward; backward with the input re-gather
    got = layer_comm(arch, plan, times, h100_comm, stack, 8).tp_s
    assert got == pytest.approx(attention + 2 * (moe_ag + moe_rs))
    # DeepSpeed's MoE layer keeps the dense pair (its experts are not split over TP here)
    other = replace(stack_named("deepspeed"), tp_overlap=False)
    dense = layer_comm(
        arch, plan, layer_times(arch, plan, gpu_perf(h100, "bf16"), other), h100_comm, other, 8
    ).tp_s
    assert dense == pytest.approx(2 * attention)


def test_megatron_core_clamps_the_gpt_oss_glu_halves_in_eager_before_its_fused_activation(
    models, h100
) -> None:
    # weighted_bias_quick_geglu_impl (megatron/core/fusions/fused_bias_geglu.py, core_v0.15.0
    # to core_v0.17.0) clamps the two halves of each routed copy's FC1 output and concatenates
    # them in eager PyTorch before the compiled activation: forward, two clamps (read 2 +
    # write 2 B each over f elements) and a cat (read 2 + write 2 B over 2f) = 16 B per f;
    # backward, two clamp backwards (read input and gradient, write: 6 B over f each) and
    # the chunk's backward cat of the two half gradients (read 2 + write 2 B over 2f) = 20 B
    # per f. Three kernels each way. A model without the clamp, or a stack that fuses it, pays nothing.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf, memory_time_s

    arch = models["gpt-oss-120b"]
    assert arch.glu_clamp == 7.0
    unclamped = arch.model_copy(update={"glu_clamp": None})
    stack = stack_named("megatron-bridge")
    perf = gpu_perf(h100, "bf16")
    plan = _plan(dp=64, ep=8).with_(recompute="none")
    elements = plan.micro_batch * plan.seq_length * arch.top_k * arch.ffn_hidden_size
    clamped, plain = layer_times(arch, plan, perf, stack), layer_times(unclamped, plan, perf, stack)
    assert clamped.forward_s - plain.forward_s == pytest.approx(
        memory_time_s(16.0 * elements, perf, num_kernels=3)
    )
    assert clamped.backward_s - plain.backward_s == pytest.approx(
        memory_time_s(20.0 * elements, perf, num_kernels=3)
    )
    fused = replace(stack, moe_glu_clamp_eager=False)
    assert layer_times(arch, plan, perf, fused).forward_s == pytest.approx(
        layer_times(unclamped, plan, perf, fused).forward_s
    )


def test_fp8_grouped_linears_copy_each_experts_rows_into_16_aligned_padding(models, h100) -> None:
    # TEGroupedMLP under FP8 (megatron/core/transformer/moe/experts.py, core_v0.15.0) pads
    # each expert's rows to a multiple of 16 before fc1 and unpads fc2's output
    # (Transformer Engine v2.9 Fp8Padding / Fp8Unpadding, pytorch/module/fp8_padding.py):
    # a copy unless every count is already aligned, which random force-balanced routing
    # never gives. Forward: pad the input, unpad the output (read 2 + write 2 B per routed
    # copy and hidden element each); backward: their mirrors. BF16 runs pay nothing.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf, memory_time_s

    arch = models["qwen3-30b-a3b"]
    stack = stack_named("megatron-bridge")
    aligned = replace(stack, moe_fp8_padding=False)
    plan = _plan(dp=8, ep=8).with_(precision="fp8", recompute="none")
    perf = gpu_perf(h100, "fp8")
    elements = plan.micro_batch * plan.seq_length * arch.top_k * arch.hidden_size
    padded, unpadded = layer_times(arch, plan, perf, stack), layer_times(arch, plan, perf, aligned)
    want = memory_time_s(8.0 * elements, perf, num_kernels=3)
    assert padded.forward_s - unpadded.forward_s == pytest.approx(want)
    assert padded.backward_s - unpadded.backward_s == pytest.approx(want)
    bf16 = plan.with_(precision="bf16")
    bf16_perf = gpu_perf(h100, "bf16")
    assert layer_times(arch, bf16, bf16_perf, stack) == layer_times(arch, bf16, bf16_perf, aligned)


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200"])
def test_fp8_moe_layers_cast_every_routed_copy_not_the_norm_output(models, gpu) -> None:
    # Megatron-Core's MoE layer spec puts a plain norm before the experts
    # (pre_mlp_layernorm=backend.layer_norm() if num_experts, gpt_layer_specs.py,
    # core_v0.15.0): its BF16 output feeds the router and is permuted, and the grouped
    # linear quantises the top_k routed copies itself. So the FC1 input's FP8 cast covers
    # top_k x h elements per token at the full cast rate (plus the amax read of current
    # scaling), where a dense TE layer fuses one h-wide cast into its norm.
    from clusterforge.perf.fp8 import (
        AMAX_READ_BYTES,
        CAST_BYTES,
        CAST_TRANSPOSE_BYTES,
        TRANSPOSE_BYTES,
        fp8_layer_bytes,
        te_writes_fp8_transposes,
    )

    arch = models["qwen3-30b-a3b"]
    dense_like = arch.model_copy(update={"num_experts": 1, "top_k": 1})
    stack = stack_named("megatron-bridge")
    plan = _plan(dp=8, ep=8).with_(precision="fp8", recompute="none")
    tokens = plan.micro_batch * plan.seq_length
    h, k, f = arch.hidden_size, arch.top_k, arch.ffn_hidden_size
    transposes = te_writes_fp8_transposes(stack, gpu)
    cast = CAST_TRANSPOSE_BYTES if transposes else CAST_BYTES
    fused = TRANSPOSE_BYTES if transposes else 0.0
    moe, dense = (
        fp8_layer_bytes(arch, plan, stack, gpu),
        fp8_layer_bytes(dense_like, plan, stack, gpu),
    )
    # Beyond a one-expert layer: the h-wide FC1 input leaves the norm's fused cast (and its
    # amax read) for k copies cast by the grouped linear; the (k - 1) further activations
    # keep the dense layer's fused rule for the activation output.
    extra_activation = f * (k - 1) * (fused + AMAX_READ_BYTES)
    want = h * (k * (cast + AMAX_READ_BYTES) - fused - AMAX_READ_BYTES) + extra_activation
    assert moe[0] - dense[0] == pytest.approx(want * tokens)


def test_fp8_expert_output_gradient_is_cast_on_the_tp_gathered_copies(models) -> None:
    # Megatron-Core's all-to-all dispatcher all-gathers the routed copies over the expert TP
    # group before the experts and reduce-scatters their output after them; the
    # reduce-scatter's backward is an all-gather (core_v0.10.0 token_dispatcher.py and
    # tensor_parallel/mappings.py). The gradient that Transformer Engine casts and transposes
    # for the expert FC2 thus holds top_k x h elements per token on every TP rank, where a
    # dense row-parallel FC2's gradient is the sequence-parallel shard h / TP.
    from clusterforge.perf.fp8 import CAST_TRANSPOSE_BYTES, fp8_layer_bytes

    arch = models["qwen3-30b-a3b"]
    dense_like = arch.model_copy(update={"num_experts": 1, "top_k": 1})
    stack = stack_named("nemo")
    assert stack.fp8_scaling == "delayed"
    t = 4
    plan = ParallelPlan(
        JobLayout(tp=t, pp=1, dp=8, ep=8),
        global_batch=8,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=True,
        recompute="none",
        zero_stage=1,
        precision="fp8",
    )
    tokens = plan.micro_batch * plan.seq_length
    h, k, f = arch.hidden_size, arch.top_k, ffn_size(arch)
    assert ffn_size(dense_like) == f
    up = 2 * f if arch.gated_mlp else f
    moe, dense = fp8_layer_bytes(arch, plan, stack), fp8_layer_bytes(dense_like, plan, stack)
    # FC1's output gradient: k copies of the TP-split width; FC2's: k whole copies of h.
    want = (up / t * (k - 1) + h * k - h / t) * CAST_TRANSPOSE_BYTES
    assert moe[1] - dense[1] == pytest.approx(want * tokens)


def test_megatron_recompute_modules_rerun_the_pre_mlp_norm_and_the_expert_activation(
    models, h100
) -> None:
    # Megatron-Core's selective recompute modules (``--recompute-modules``, the gpt-oss
    # performance recipes' ["layernorm", "moe_act"] on GB200, B200 and H100): "layernorm"
    # reruns the MoE layer's separate pre-MLP norm (the input norm is fused into the QKV
    # linear: transformer_layer.py recomputes only norms that are not IdentityOp), read h +
    # write h in BF16; "moe_act" reruns TEGroupedMLP's bias_act_func, the eager GLU clamp
    # (16 B per copy and f) and the fused weighted activation (read 2f, write f: 6 B per f).
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.roofline import gpu_perf, memory_time_s

    arch = models["gpt-oss-120b"]
    stack = stack_named("megatron-bridge")
    assert stack.recompute_modules == ()
    modules = replace(stack, recompute_modules=("layernorm", "moe_act"))
    perf = gpu_perf(h100, "bf16")
    plan = _plan(dp=64, ep=8).with_(recompute="none")
    tokens = plan.micro_batch * plan.seq_length
    copies = tokens * arch.top_k * arch.ffn_hidden_size
    norm = memory_time_s(4.0 * arch.hidden_size * tokens, perf, num_kernels=1)
    activation = memory_time_s(6.0 * copies, perf, num_kernels=1) + memory_time_s(
        16.0 * copies, perf, num_kernels=3
    )
    base = layer_times(arch, plan, perf, stack)
    assert base.recompute_s == 0.0
    assert layer_times(arch, plan, perf, modules).recompute_s == pytest.approx(norm + activation)
    only_norm = replace(stack, recompute_modules=("layernorm",))
    assert layer_times(arch, plan, perf, only_norm).recompute_s == pytest.approx(norm)
    # A dense TE layer fuses both norms into its linears and has no expert activation.
    dense = models["llama3-8b"]
    dense_plan = plan.with_(layout=JobLayout(tp=1, pp=1, dp=64, ep=1))
    assert layer_times(dense, dense_plan, perf, modules).recompute_s == 0.0
    # Full recomputation reruns the whole forward already: nothing added.
    full = plan.with_(recompute="full")
    assert layer_times(arch, full, perf, modules).recompute_s == pytest.approx(
        layer_times(arch, full, perf, stack).recompute_s
    )


# --- Megatron-Core's flex dispatcher (DeepEP / HybridEP) and EP all-to-all overlap ---------

FLEX = replace(stack_named("megatron-bridge"), moe_dispatcher="flex", moe_flex_sms=32)


def _ep8_plan(dp: int = 8, global_batch: int = 8) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=dp, ep=8),
        global_batch=global_batch,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )


def test_flex_dispatcher_permutes_outside_the_elementwise_work(models) -> None:
    from clusterforge.perf.flex_permute import flex_permute_bytes
    from clusterforge.perf.moe import permutation_bytes_per_token

    arch, plan = models["gpt-oss-120b"], _ep8_plan()
    alltoall = permutation_bytes_per_token(arch, plan, stack_named("megatron-bridge"))
    assert alltoall > 0
    # the flex dispatcher's permutations are priced on their own (perf/flex_permute.py)
    assert permutation_bytes_per_token(arch, plan, FLEX) == 0.0
    assert flex_permute_bytes(arch, plan) > 0


def test_flex_sends_a_token_once_per_destination_rank(models) -> None:
    from clusterforge.perf.moe import flex_ranks_per_token

    arch = models["gpt-oss-120b"]  # 128 experts, top 4
    # 16 experts per rank of 8: a rank is missed by 4 draws with C(112, 4) / C(128, 4)
    want = 8 * (1 - (112 * 111 * 110 * 109) / (128 * 127 * 126 * 125))
    assert flex_ranks_per_token(arch, _ep8_plan()) == pytest.approx(want)
    assert flex_ranks_per_token(arch, _ep8_plan()) < arch.top_k
    # one expert per rank: every copy goes to its own rank
    one_per_rank = arch.model_copy(update={"num_experts": 8, "top_k": 2})
    assert flex_ranks_per_token(one_per_rank, _ep8_plan()) == pytest.approx(2.0)


def test_flex_rate_is_the_lower_of_the_nvlink_share_and_its_sms() -> None:
    from clusterforge.catalog import load_catalog
    from clusterforge.perf.moe import flex_dispatch_s

    b200 = load_catalog().gpus["b200"]  # NVLink 5, 900 GB/s each way
    size = 1e9
    dispatch, combine = flex_dispatch_s(size, b200, 64)
    assert dispatch == pytest.approx(size / 726e9)  # DeepEP V2, SM100 EP 8, 64 SMs
    assert combine == pytest.approx(size / 740e9)
    dispatch, combine = flex_dispatch_s(size, b200, 24)
    assert dispatch == pytest.approx(size / 643e9)  # SM-bound with 24 SMs
    assert combine == pytest.approx(size / 675e9)


def test_flex_dispatcher_drops_the_metadata_collectives_and_moves_rows_per_rank(
    models, h100, h100_comm
) -> None:
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.moe import flex_dispatch_s, flex_ranks_per_token
    from clusterforge.perf.roofline import gpu_perf

    arch, plan = models["gpt-oss-120b"], _ep8_plan()
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), FLEX)
    tokens = plan.micro_batch * plan.seq_length
    rows = tokens * flex_ranks_per_token(arch, plan) * arch.hidden_size * 2.0
    dispatch, _ = flex_dispatch_s(rows + tokens * arch.top_k * 4.0, h100, 32)
    _, combine = flex_dispatch_s(rows, h100, 32)
    got = layer_comm(arch, plan, times, h100_comm, FLEX, 8, h100).ep_s
    assert got == pytest.approx(2 * (dispatch + combine))
    alltoall = layer_comm(arch, plan, times, h100_comm, stack_named("megatron-bridge"), 8).ep_s
    assert got < alltoall
    with pytest.raises(ValueError, match="gpu="):
        layer_comm(arch, plan, times, h100_comm, FLEX, 8)


def test_a2a_overlap_share_follows_megatrons_combined_1f1b_schedule() -> None:
    from clusterforge.perf.ep_exposure import combined_step_share

    # no pipelining: every forward but the first merges with the previous backward
    assert combined_step_share(_ep8_plan(dp=8, global_batch=32)) == pytest.approx(3 / 4)
    # PP 2, VP 12, 32 micro-batches: 2 + 11 * 2 + 1 = 25 warm-up chunks of 384
    plan = ParallelPlan(
        JobLayout(tp=1, pp=2, dp=8, ep=8, vpp=12),
        global_batch=256,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )
    assert combined_step_share(plan) == pytest.approx((384 - 25) / 384)


def test_a2a_overlap_hides_each_direction_behind_the_others_compute(
    models, h100, h100_comm
) -> None:
    from clusterforge.perf.compute import layer_times, overlapped_s
    from clusterforge.perf.ep_exposure import combined_step_share
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.roofline import gpu_perf

    arch, plan = models["gpt-oss-120b"], _ep8_plan(dp=8, global_batch=32)
    bridge = stack_named("megatron-bridge")
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), bridge)
    exposed = layer_comm(arch, plan, times, h100_comm, bridge, 8).ep_s
    overlap = replace(bridge, moe_a2a_overlap=True)
    hidden = layer_comm(arch, plan, times, h100_comm, overlap, 8).ep_s
    share = combined_step_share(plan)
    # the all-to-all dispatcher's forward and backward traffic are equal but for the counts
    # all-gather; each hides behind the other direction's compute, the NCCL interference left
    assert times.backward_s > exposed  # the windows are long enough here
    merged = overlapped_s(exposed / 2, math.inf) * 2
    assert hidden == pytest.approx((1 - share) * exposed + share * merged, rel=0.05)
    assert hidden < exposed


def test_flex_overlap_hides_the_measured_share_and_slows_the_compute_by_its_sms(
    models, h100, h100_comm
) -> None:
    # Megatron-Bridge #5094's trace: 36.55 % of the flex dispatcher's communication ran
    # beside GEMMs or attention with the overlap on; the rest stays exposed, and the hidden
    # part slows the compute beside it by the dispatcher's SM share.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.ep_exposure import FLEX_OVERLAP_HIDDEN_SHARE, combined_step_share
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.roofline import gpu_perf

    assert FLEX_OVERLAP_HIDDEN_SHARE == 0.3655
    arch, plan = models["gpt-oss-120b"], _ep8_plan(dp=8, global_batch=32)
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), FLEX)
    raw = layer_comm(arch, plan, times, h100_comm, FLEX, 8, h100).ep_s
    overlap = replace(FLEX, moe_a2a_overlap=True)
    got = layer_comm(arch, plan, times, h100_comm, overlap, 8, h100).ep_s
    share, hidden = combined_step_share(plan), FLEX_OVERLAP_HIDDEN_SHARE
    merged = raw * (1 - hidden) + raw * hidden * 32 / h100.num_sms
    want = (1 - share) * raw + share * merged
    assert got == pytest.approx(want)
    more_sms = layer_comm(arch, plan, times, h100_comm, replace(overlap, moe_flex_sms=64), 8, h100)
    assert more_sms.ep_s > got


def test_drop_and_pad_runs_skip_the_fp8_padding_when_the_capacity_is_aligned(models, h100) -> None:
    # With moe_pad_expert_input_to_capacity every local expert gets capacity x TP x EP rows
    # (token_dispatcher.py preprocess, core_v0.15.0), capacity = ceil(tokens x top-k /
    # experts x 1.0) (moe_utils.get_capacity); TE's Fp8Padding returns its input when every
    # count is already a multiple of 16. Qwen3-30B-A3B, 4,096 tokens, top-8, 128 experts:
    # capacity 256, 2,048 rows per expert at EP 8: aligned. 4,100 tokens: 257 x 8 = 2,056: not.
    from clusterforge.perf.moe import fp8_padding_s
    from clusterforge.perf.roofline import gpu_perf

    arch, perf = models["qwen3-30b-a3b"], gpu_perf(h100, "fp8")
    stack = stack_named("megatron-bridge")
    dropped = replace(stack, moe_drop_and_pad=True)
    plan = _plan(dp=8, ep=8).with_(precision="fp8", recompute="none")
    assert fp8_padding_s(arch, plan, perf, stack) > 0.0
    assert fp8_padding_s(arch, plan, perf, dropped) == 0.0
    odd = plan.with_(seq_length=4100)
    assert fp8_padding_s(arch, odd, perf, dropped) == fp8_padding_s(arch, odd, perf, stack) > 0


def test_drop_and_pad_skips_the_token_count_all_gather(models, h100, h100_comm) -> None:
    # With moe_pad_expert_input_to_capacity, MoEAlltoAllTokenDispatcher.preprocess returns the
    # fixed capacity counts before the TP x EP all-gather of the token counts (core_v0.15.0);
    # the tokens' and probabilities' all-to-alls stay.
    from clusterforge.perf.compute import layer_times
    from clusterforge.perf.exposure import layer_comm
    from clusterforge.perf.roofline import gpu_perf

    arch = models["gpt-oss-120b"]
    plan = _plan(dp=8, ep=8).with_(recompute="none")
    stack = stack_named("megatron-bridge")
    dropped = replace(stack, moe_drop_and_pad=True)
    times = layer_times(arch, plan, gpu_perf(h100, "bf16"), stack)
    counts = h100_comm.collective_time_s(
        "all_gather", arch.num_experts * 8.0 * 8, rank_groups(plan, "ep")
    )
    dropless = layer_comm(arch, plan, times, h100_comm, stack, 8).ep_s
    assert layer_comm(arch, plan, times, h100_comm, dropped, 8).ep_s == pytest.approx(
        dropless - counts
    )
