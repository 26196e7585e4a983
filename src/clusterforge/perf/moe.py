"""The MoE expert layer's own costs on one GPU, beyond a dense layer's.

The experts' grouped GEMMs as Transformer Engine runs them (a few concurrent cuBLAS GEMMs
per round), the HBM traffic of the token permutations around the all-to-all dispatcher,
Megatron-Core's eager expert output bias, the eager clamp of a clamped gated activation,
the FP8 row padding of the grouped linears and the extra FP8 quantisation kernels of
per-expert current scaling. :mod:`clusterforge.perf.compute` adds these into a layer's time.
"""

from __future__ import annotations

import math

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.expert_rows import busiest_rank_rows, ragged_grouped_gemm_time_s
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, gemm_time_s, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = [
    "capacity_rows",
    "expert_fp8_extra_kernels",
    "expert_gemms_s",
    "expert_output_bias_s",
    "flex_dispatch_s",
    "flex_ranks_per_token",
    "fp8_padding_s",
    "glu_clamp_s",
    "grouped_gemm_time_s",
    "permutation_bytes_per_token",
    "recompute_modules_s",
]


# Transformer Engine's ``GroupedLinear`` (the experts of Megatron-Core's ``TEGroupedMLP``)
# runs one cuBLAS GEMM per local expert, round-robin over its compute streams
# (``multi_stream_cublas_gemm`` in transformer_engine/common/gemm/cublaslt_gemm.cu; the
# CUTLASS grouped GEMM is opt-in, ``NVTE_USE_CUTLASS_GROUPED_GEMM``, Hopper only) and it
# keeps four of them (``num_compute_streams = 4``, transformer_engine/common/util/
# multi_stream.cpp) [V], NVIDIA/TransformerEngine at commit d0067d0 (2026-08-22).
TE_GROUPED_GEMM_STREAMS = 4


def grouped_gemm_time_s(
    m: float,
    n: float,
    k: float,
    perf: GpuPerf,
    num_gemms: float,
    *,
    output_bytes: float = BF16_BYTES,
) -> float:
    """Time of ``num_gemms`` equal GEMMs ``(m x k) @ (k x n)`` run as TE's grouped linear.

    At most :data:`TE_GROUPED_GEMM_STREAMS` GEMMs run at once, so their tiles share the SMs'
    waves (one batched wave count, :func:`~clusterforge.perf.roofline.gemm_time_s`); the
    groups of concurrent GEMMs follow each other, each with its own wave quantisation, tail
    and kernel overhead. Few tokens per expert (small ``m``) thus keep the per-GEMM tile waste
    that one kernel over all the experts' tiles would hide. ``output_bytes``: HBM bytes per
    output element (8 for a weight gradient accumulated into an FP32 buffer).
    """
    concurrent = min(float(TE_GROUPED_GEMM_STREAMS), num_gemms)
    full_rounds, rest = divmod(num_gemms, concurrent)
    time = full_rounds * gemm_time_s(m, n, k, perf, concurrent, output_bytes=output_bytes)
    if rest > 0:
        time += gemm_time_s(m, n, k, perf, rest, output_bytes=output_bytes)
    return time


def expert_gemms_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one MoE layer's two expert linears on one GPU.

    Each local expert gets ``m = tokens x top_k x EP / experts`` routed copies (balanced
    routing). fc1 maps the hidden width ``h`` to ``u`` columns (``2f / TP`` when gated), fc2
    maps ``f / TP`` back to ``h``. Transformer Engine's ``GroupedLinear`` backward (v2.9 to
    v2.16, ``_GroupedLinear.backward`` in transformer_engine/pytorch/module/
    grouped_linear.py) runs, per linear, the data gradient ``dY @ W``, an ``m x in`` output
    with the output width as inner dimension, and the weight gradient ``dY^T @ X``, an
    ``out x in`` output whose inner dimension is the expert's token count ``m``; both through
    :func:`grouped_gemm_time_s`. Under gradient-accumulation fusion
    (``Stack.fused_grad_accumulation``; TE's ``fuse_wgrad_accumulation``) the weight
    gradient is accumulated into the ``main_grad`` buffer (``Stack.grad_buffer_bytes``,
    read and write per weight), which bounds it by HBM when ``m`` is small.

    Dropless runs with random balanced routing (``Stack.moe_random_routing``, not
    drop-and-pad) take the busiest EP rank's rows, each round of concurrent forward and
    data-gradient GEMMs over the sum of its experts' ragged row tiles
    (:mod:`clusterforge.perf.expert_rows`).
    """
    h, t = arch.hidden_size, plan.layout.tp
    f = ffn_size(arch) / t
    up = (2 if arch.gated_mlp else 1) * f
    local_experts = arch.num_experts / plan.layout.ep
    m = tokens_per_gpu(plan) * arch.top_k * plan.layout.ep / arch.num_experts
    spread = 0.0  # one expert's row deviation: 0 when every expert gets the mean
    if stack.moe_random_routing and not stack.moe_drop_and_pad:
        m, spread = busiest_rank_rows(arch, plan)

    def rows_by(n: float, k: float) -> float:  # an expert's rows times k, to n columns
        if spread == 0.0:
            return grouped_gemm_time_s(m, n, k, perf, local_experts)
        streams = TE_GROUPED_GEMM_STREAMS
        return ragged_grouped_gemm_time_s(m, spread, n, k, perf, local_experts, streams)

    accumulated = (
        2.0 * stack.grad_buffer_bytes if stack.fused_grad_accumulation else float(BF16_BYTES)
    )
    forward = 0.0
    backward = 0.0
    for n, k in ((up, h), (h, f)):  # fc1, fc2: (output width, input width)
        forward += rows_by(n, k)
        backward += rows_by(k, n)  # data gradient
        backward += grouped_gemm_time_s(n, k, m, perf, local_experts, output_bytes=accumulated)
    return forward, backward


# Megatron-Core's all-to-all token dispatcher (``MoEAlltoAllTokenDispatcher``,
# megatron/core/transformer/moe/token_dispatcher.py, NVIDIA/Megatron-LM at commit d98e8a6,
# 2026-08-22) with fused permutation (``moe_permute_fusion``: Transformer Engine's
# ``moe_permute``, ``moe_sort_chunks_by_index`` and ``moe_unpermute`` kernels), HBM bytes per
# routed copy of a token and hidden element, BF16, forward; [D] by counting each kernel's
# reads and writes:
# - permute before the dispatch all-to-all: read the token's row, write the copy (2 + 2);
PERMUTE_BYTES = 4.0
# - with more than one expert on the GPU, ``sort_chunks_by_idxs`` after the dispatch (the
#   received chunks are rank-major, the grouped GEMM wants them expert-major) and again
#   before the combine (back to rank-major): read and write each copy, twice (2 x (2 + 2));
SORT_CHUNKS_BYTES = 8.0
# - unpermute after the combine: read each copy (2), then write the merged token once (2 per
#   token, added separately).
UNPERMUTE_READ_BYTES = 2.0


def permutation_bytes_per_token(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """Forward HBM bytes per token of the MoE layer's token permutations (0 for dense).

    ``top_k`` copies are permuted, (when the GPU holds several experts) sorted into expert
    order and back, and unpermuted into one token (:data:`PERMUTE_BYTES` and the constants
    after it). The flex dispatcher (``Stack.moe_dispatcher``) packs the rows for the wire
    inside its dispatch and combine kernels and permutes the received rows in passes of its
    own, priced by :func:`~clusterforge.perf.flex_permute.flex_permute_s`.
    """
    if arch.num_experts == 1 or stack.moe_dispatcher == "flex":
        return 0.0
    h, copies = arch.hidden_size, arch.top_k
    per_copy = PERMUTE_BYTES + UNPERMUTE_READ_BYTES
    if arch.num_experts > plan.layout.ep:  # several local experts: sort and unsort chunks
        per_copy += SORT_CHUNKS_BYTES
    return per_copy * h * copies + BF16_BYTES * h


# DeepEP's published rates (deepseek-ai/DeepEP README at dd758ca, 2026-07-14, V2, "8K tokens
# per batch, 7168 hidden, top 8 experts", SM100, EP 8 over NVLink): dispatch 726 GB/s and
# combine 740 GB/s with 64 SMs ("max perf"), 643 and 675 GB/s with 24 SMs ("min #SM").
# Bandwidths are "logical": the bytes of every (token, destination rank) pair, the GPU's own
# included. Over B200's NVLink 5 (900 GB/s each way) the 64-SM rates are the link-bound
# share (726 / 900 and 740 / 900); the 24-SM rates, below it, are what each SM moves
# (643 / 24 and 675 / 24 GB/s). The V1 table (docs/legacy.md: H800, 153 / 158 GB/s on
# NVLink of 200 GB/s each way, 20 SMs) is link-bound at a like share (0.77 / 0.79).
# HybridEP (DeepEP's hybrid-ep branch, the backend of Megatron's ``"hybridep"``) keeps them:
# its own table (docs/README_Hybrid-EP.md at 94a9f8f, 4,096 tokens, hidden 7,168, top 8, EP 8,
# BF16, kernel time only) gives B200 735 / 674 GB/s with 16 SMs, GB200 764 / 737 with 32.
FLEX_NVLINK_SHARE = (726.0 / 900.0, 740.0 / 900.0)  # (dispatch, combine) of one-way NVLink
FLEX_GBYTE_PER_S_PER_SM = (643.0 / 24.0, 675.0 / 24.0)  # (dispatch, combine)


def flex_ranks_per_token(arch: ModelArch, plan: ParallelPlan) -> float:
    """Expected EP ranks a token goes to under balanced routing.

    DeepEP and HybridEP send a token once to each rank that holds one or more of its
    ``top_k`` experts (the routing map is per rank: ``_initialize_metadata`` in
    ``MoEFlexTokenDispatcher``, DeepEP's ``get_dispatch_layout``), where the all-to-all
    dispatcher sends one copy per expert: a rank holding ``E / ep`` of the ``E`` experts is
    missed by all ``k`` uniform choices with probability ``C(E - E/ep, k) / C(E, k)``.
    """
    experts, ep, k = arch.num_experts, plan.layout.ep, arch.top_k
    local = experts // ep
    missed = math.comb(experts - local, k) / math.comb(experts, k)
    return ep * (1.0 - missed)


def flex_dispatch_s(size_bytes: float, gpu: Gpu, num_sms: int) -> tuple[float, float]:
    """(dispatch, combine) seconds of the flex dispatcher moving ``size_bytes`` of logical
    traffic per GPU inside an NVLink domain: the lower of the link-bound rate
    (:data:`FLEX_NVLINK_SHARE` of the GPU's one-way scale-up bandwidth) and what its
    ``num_sms`` SMs move (:data:`FLEX_GBYTE_PER_S_PER_SM`)."""
    one_way = gpu.scaleup_gbyte_per_s / 2.0
    times = []
    for share, per_sm in zip(FLEX_NVLINK_SHARE, FLEX_GBYTE_PER_S_PER_SM, strict=True):
        rate = min(share * one_way, per_sm * num_sms) * 1e9
        times.append(size_bytes / rate)
    return times[0], times[1]


# Megatron-Core's ``TEGroupedMLP`` builds the experts' second linear with
# ``skip_bias_add=True`` and adds that bias itself in PyTorch eager, expert by expert: the
# bias scaled by each routed copy's router probability, ``t + b * p`` on the expert's rows,
# then one ``torch.cat`` of the pieces (``TEGroupedMLP._apply_bias`` in
# megatron/core/transformer/moe/experts.py, NVIDIA/Megatron-LM tags core_v0.15.0,
# core_v0.16.0 and core_v0.17.0, the Megatron Core of the NeMo 25.11 to 26.04 containers).
# HBM bytes per routed copy and hidden element, BF16 (the probabilities take the router
# logits' dtype, ``fused_topk_with_score_function_fwd`` in TE v2.9's
# pytorch/csrc/extensions/router.cpp, and the logits the input's when ``moe_router_dtype``
# is unset, as in Megatron-Bridge's gpt-oss provider); [D] by counting
# each op's reads and writes. Forward: ``b * p`` writes its product (2), the add reads two
# tensors and writes one (6), the cat reads and writes every piece (4) = 12. Backward: the
# bias and the probability gradients each multiply the incoming gradient and reduce it
# (read 2, write 2, read 2; twice = 12), and the split's backward concatenates the pieces'
# gradients (4) = 16.
EXPERT_BIAS_BYTES = (12.0, 16.0)
# Kernels per local expert (forward: multiply, add; backward: two multiplies, two sums), plus
# one concatenation each way.
EXPERT_BIAS_KERNELS_PER_EXPERT = (2, 4)
# Under the flex dispatcher the probabilities are FP32: DeepEP and HybridEP take FP32 only,
# and Megatron-Core's ``MoEFlexTokenDispatcher`` casts them (``self.token_probs.float()``,
# "HybridEP only supports float32 probs", token_dispatcher.py core_v0.16.0 to core_v0.18.0;
# NeMo AutoModel's copy for DeepEP, moe/megatron/token_dispatcher.py at 8d9bfb90e). The same
# ops then run in FP32 until the final cast, bytes per routed copy and hidden element [D]:
# forward ``b * p`` writes FP32 (4), the add reads BF16 and FP32 and writes FP32 (10), the
# cat moves FP32 (8), ``.to(bf16)`` reads 4 and writes 2 (6) = 28; backward the cast's
# backward (2 + 4), the add's gradient cast back to ``t``'s BF16 (4 + 2), the bias and
# probability gradients each a product and its sum over FP32 (4 + 4 + 4, twice), the split's
# backward concatenating the BF16 pieces (4) = 40; one cast more each way, and per expert
# the backward's cast of ``t``'s gradient.
EXPERT_BIAS_FP32_PROBS_BYTES = (28.0, 40.0)
EXPERT_BIAS_FP32_PROBS_KERNELS_PER_EXPERT = (2, 5)


def expert_output_bias_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one MoE layer's eager second-linear bias.

    Zero for dense models, models without linear biases and stacks that fuse the bias into
    the expert GEMM (``Stack.moe_expert_bias_eager`` off); otherwise the bytes and kernels of
    :data:`EXPERT_BIAS_BYTES` over the GPU's routed copies, with kernels that grow with the
    local expert count (:data:`EXPERT_BIAS_KERNELS_PER_EXPERT`); under the flex dispatcher,
    whose probabilities are FP32, :data:`EXPERT_BIAS_FP32_PROBS_BYTES`.
    """
    if arch.num_experts == 1 or not arch.linear_bias or not stack.moe_expert_bias_eager:
        return 0.0, 0.0
    local_experts = max(1, arch.num_experts // plan.layout.ep)
    copies = tokens_per_gpu(plan) * arch.top_k / (plan.layout.tp if plan.sequence_parallel else 1)
    elements = copies * arch.hidden_size
    fp32 = stack.moe_dispatcher == "flex"  # FP32 probabilities
    (fwd_bytes, bwd_bytes), (fwd_kernels, bwd_kernels) = (
        (EXPERT_BIAS_FP32_PROBS_BYTES, EXPERT_BIAS_FP32_PROBS_KERNELS_PER_EXPERT)
        if fp32
        else (EXPERT_BIAS_BYTES, EXPERT_BIAS_KERNELS_PER_EXPERT)
    )
    extra = 2 if fp32 else 1  # the concatenation (and the cast)
    return (
        memory_time_s(fwd_bytes * elements, perf, num_kernels=fwd_kernels * local_experts + extra),
        memory_time_s(bwd_bytes * elements, perf, num_kernels=bwd_kernels * local_experts + extra),
    )


# Transformer Engine's FP8 current scaling (``Float8CurrentScalingQuantizer::quantize_impl``,
# transformer_engine/pytorch/csrc/quantizer.cpp) runs three kernels per tensor: the amax,
# the scale from it and the cast (``nvte_compute_amax_with_config``,
# ``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``); a grouped linear's input is split
# per expert and each piece quantised on its own (``split_quantize`` ->
# ``multi_tensor_quantize_impl`` in transformer_engine/pytorch/csrc/extensions/cast.cpp,
# whose fused multi-tensor cast-transpose serves delayed scaling only) [V], TE commit
# d0067d0 (2026-08-22).
CURRENT_SCALING_KERNELS_PER_TENSOR = 3


def expert_fp8_extra_kernels(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> int:
    """FP8 quantisation kernels per direction of one MoE layer beyond a dense layer's.

    Under current ("dynamic") scaling each further local expert quantises its own piece of
    the two expert GEMMs' inputs (forward) and output gradients (backward),
    :data:`CURRENT_SCALING_KERNELS_PER_TENSOR` kernels each; delayed scaling casts all the
    pieces in one fused kernel.
    """
    if arch.num_experts == 1 or stack.fp8_scaling != "dynamic":
        return 0
    further_experts = max(0, arch.num_experts // plan.layout.ep - 1)
    return 2 * CURRENT_SCALING_KERNELS_PER_TENSOR * further_experts


# Megatron-Core's clamped gated activation (``weighted_bias_quick_geglu_impl`` in
# megatron/core/fusions/fused_bias_geglu.py, NVIDIA/Megatron-LM tags core_v0.15.0 to
# core_v0.17.0; ``activation_func_clamp_value`` 7.0 in Megatron-Bridge's gpt-oss provider,
# the model's ``swiglu_limit``) splits each routed copy's FC1 output into its two halves,
# clamps them and concatenates them again in eager PyTorch; only the weighted activation
# after it is compiled (``jit_fuser``, megatron/core/jit.py: ``torch.compile``). HBM bytes
# per routed copy and FFN element f (the FC1 output has 2f), BF16; [D] by counting each
# op's reads and writes. Forward: two clamps, each reading and writing f elements (4 + 4),
# and the cat of 2f elements (8) = 16. Backward: two clamp backwards, each reading the
# saved input and the incoming gradient and writing the gradient over f elements (6 + 6),
# and the chunk's backward concatenating the two half gradients (8) = 20.
GLU_CLAMP_BYTES = (16.0, 20.0)
GLU_CLAMP_KERNELS = 3  # two clamps and a cat each way


def glu_clamp_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one MoE layer's eager GLU clamp over its routed copies.

    Zero for dense models, models without a clamp (``ModelArch.glu_clamp``) and stacks that
    fuse it (``Stack.moe_glu_clamp_eager`` off); otherwise :data:`GLU_CLAMP_BYTES` over the
    GPU's ``tokens x top_k`` copies of the expert's FFN width (split over TP).
    """
    if arch.num_experts == 1 or arch.glu_clamp is None or not stack.moe_glu_clamp_eager:
        return 0.0, 0.0
    elements = tokens_per_gpu(plan) * arch.top_k * ffn_size(arch) / plan.layout.tp
    fwd_bytes, bwd_bytes = GLU_CLAMP_BYTES
    return (
        memory_time_s(fwd_bytes * elements, perf, num_kernels=GLU_CLAMP_KERNELS),
        memory_time_s(bwd_bytes * elements, perf, num_kernels=GLU_CLAMP_KERNELS),
    )


# Under FP8, Megatron-Core's ``TEGroupedMLP`` (moe/experts.py, core_v0.15.0 to core_v0.17.0)
# pads each local expert's rows to a multiple of 16 before fc1 (``Fp8Padding``, the hidden
# states and the probabilities) and strips the padding from fc2's output
# (``Fp8Unpadding``): Transformer Engine's ``fused_multi_row_padding`` / ``_unpadding``
# copy the whole tensor into a new buffer unless every count is aligned already
# (transformer_engine/pytorch/module/fp8_padding.py and fp8_unpadding.py, TE v2.9). The
# recipes set no ``moe_router_padding_for_fp8`` (which would align the counts in the
# router), and their force-balanced routing draws random logits per token
# (``RandomSTE``, moe/moe_utils.py), so the counts are not multiples of 16. HBM bytes per
# routed copy and hidden element, BF16, [D]: forward, pad the input (read 2 + write 2) and
# unpad the output (2 + 2) = 8; backward, the mirror copies of the two gradients = 8. The
# probabilities' one column per row is left out (1/h of the rest).
FP8_PADDING_BYTES = 8.0
FP8_PADDING_KERNELS = 3  # hidden states, probabilities, output (and their gradients)


# Drop-and-pad (``Stack.moe_drop_and_pad``): each local expert computes exactly its capacity
# from every TP x EP rank (``MoEAlltoAllTokenDispatcher.preprocess``, core_v0.15.0), the
# capacity being ceil(tokens x top-k / experts x factor) (``moe_utils.get_capacity``); the
# factor is taken as 1.0, the only one the runs here state. When that row count is a
# multiple of 16 (per-tensor FP8's alignment), ``Fp8Padding`` returns its input untouched.
MOE_CAPACITY_FACTOR = 1.0
FP8_ALIGN_ROWS = 16


def capacity_rows(arch: ModelArch, plan: ParallelPlan) -> int:
    """Rows each local expert computes per micro-batch under drop-and-pad."""
    tp = plan.layout.tp
    local_tokens = tokens_per_gpu(plan) / tp  # the router's rows: sequence-parallel shard
    capacity = math.ceil(local_tokens * arch.top_k / arch.num_experts * MOE_CAPACITY_FACTOR)
    return capacity * tp * plan.layout.ep


def fp8_padding_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Seconds of one MoE layer's FP8 row padding copies, per direction (forward = backward).

    Zero for dense models, BF16 runs and stacks without the copies
    (``Stack.moe_fp8_padding`` off); otherwise :data:`FP8_PADDING_BYTES` over the GPU's
    ``tokens x top_k`` routed copies of the hidden width.
    """
    if arch.num_experts == 1 or plan.precision != "fp8" or not stack.moe_fp8_padding:
        return 0.0
    if stack.moe_drop_and_pad and capacity_rows(arch, plan) % FP8_ALIGN_ROWS == 0:
        return 0.0
    elements = tokens_per_gpu(plan) * arch.top_k * arch.hidden_size
    return memory_time_s(FP8_PADDING_BYTES * elements, perf, num_kernels=FP8_PADDING_KERNELS)


# Megatron-Core's recompute modules on an MoE layer (``recompute_modules`` with selective
# granularity; NVIDIA/Megatron-LM core_v0.15.0): "layernorm" reruns the norms that are not
# fused into a linear (``TransformerLayer`` skips IdentityOp norms; with Transformer Engine
# the input norm lives in the QKV ``LayerNormLinear`` and only an MoE layer keeps a separate
# pre-MLP ``TENorm``, megatron/core/models/gpt/gpt_layer_specs.py), one kernel reading and
# writing h BF16 elements per token; "moe_act" reruns ``TEGroupedMLP``'s ``bias_act_func``
# (the GLU clamp of :func:`glu_clamp_s` when the model has one, then the fused weighted
# activation: read the 2f FC1 outputs, write f, BF16, per routed copy).
NORM_RECOMPUTE_BYTES = 4.0  # per token and hidden element
ACTIVATION_RECOMPUTE_BYTES = 6.0  # per routed copy and FFN element (gated)


def recompute_modules_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Backward-time seconds of one layer's Megatron recompute modules
    (``Stack.recompute_modules``); 0 for dense layers, whose norms Transformer Engine fuses
    into the linears, and under full recomputation, which reruns the whole forward."""
    if arch.num_experts == 1 or plan.recompute == "full":
        return 0.0
    seconds = 0.0
    if "layernorm" in stack.recompute_modules:
        shard = plan.layout.tp if plan.sequence_parallel else 1
        elements = tokens_per_gpu(plan) * arch.hidden_size / shard
        seconds += memory_time_s(NORM_RECOMPUTE_BYTES * elements, perf, num_kernels=1)
    if "moe_act" in stack.recompute_modules:
        copies = tokens_per_gpu(plan) * arch.top_k * ffn_size(arch) / plan.layout.tp
        activation = ACTIVATION_RECOMPUTE_BYTES if arch.gated_mlp else 4.0
        seconds += memory_time_s(activation * copies, perf, num_kernels=1)
        seconds += glu_clamp_s(arch, plan, perf, stack)[0]
    return seconds
