"""Fused attention kernels and the attention core of one transformer layer on one GPU.

The forward and backward time of ``softmax(Q K^T) V`` for one layer and micro-batch: the
query-key pairs a causal (or sliding-window) kernel scores, the rate of each stack's fused
kernel (FlashAttention-2, its Triton port, cuDNN with its head-dim slowdown, PyTorch SDPA's
FlashAttention) or the unfused GEMMs and softmax, and the element-wise passes of
context parallelism around its per-step attention calls (PyTorch's FP32 merges, Transformer
Engine's rescaling and gradient sums). Measured rates live in
``data/efficiency.toml`` with their sources; :mod:`clusterforge.perf.compute` adds these
times into a layer's.
"""

from __future__ import annotations

from typing import assert_never

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.attention_length import (
    causal_slowdown,
    cudnn_call_length,
    cudnn_length_shares,
    triton_fwd_bwd_tflops,
)
from clusterforge.perf.flops import head_dim, kv_dim, q_dim
from clusterforge.perf.host import flash_unpad_host_s, host_cpu
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, load_constants, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.window_attention import window_rate, windowed_times

__all__ = [
    "attention_backward_s",
    "attention_forward_s",
    "context_parallel_passes",
    "flash_unpad_bytes",
    "flash_unpad_idle_s",
    "flash_unpad_passes",
    "te_cp_bytes",
    "torch_cp_bytes",
]


# The Triton FlashAttention (HazyResearch ``flash_attn_triton.py``) against FlashAttention-2:
# "FlashAttention-2 is around 1.3-1.5x faster than FlashAttention in Triton in the forward
# pass and around 2x faster in the backward pass" (Dao 2023, arXiv 2307.08691, §4.1,
# A100 80GB, head dim 64/128, with and without causal mask) [V]. Applied on every GPU without
# a measured Triton rate by length (A100 has one: attention_length.TRITON_FWD_BWD_TFLOPS):
# both kernels use the Ampere mma instructions, none of Hopper's (TMA, wgmma), so the ratio
# is taken to carry over to H100 (an assumption; no H100 measurement of the Triton kernel).
TRITON_FLASH_FORWARD_SLOWDOWN = 1.4  # midpoint of 1.3-1.5
TRITON_FLASH_BACKWARD_SLOWDOWN = 2.0

# Backward of a fused (flash) attention kernel: 2.5x the forward's work (dQ, dK, dV, the
# recomputed S and dP against S and P V; Dao et al. 2022, Algorithm 4).
FLASH_BACKWARD_WORK_RATIO = 2.5


# cuDNN's fused attention slows down with narrower heads: on H100 at sequence 4k (non-causal,
# BF16) it runs its forward at 408 TFLOP/s with head dim 64 against 609 with head dim 128,
# its backward at 417 against 499 (Shah et al. 2024, "FlashAttention-3", arXiv 2407.08608,
# Figs. 5 and 6, "Attention forward/backward speed, head dim 64 / 128 (H100 80GB SXM5)") [S].
# Half the FLOPs per byte of K and V and half the work per softmax step leave the tensor
# cores idler; the same ratios are taken for later GPUs (an assumption: no published
# Blackwell sweep over head widths). Widths between 64 and 128 interpolate linearly; 128 and
# wider keep the measured head-dim-128 rates.
CUDNN_HEAD_DIM_64_RATIO = (408.0 / 609.0, 417.0 / 499.0)  # (forward, backward)


def _head_dim_ratios(arch: ModelArch | None) -> tuple[float, float]:
    """(forward, backward) share of the head-dim-128 cuDNN rates kept by ``arch``'s heads."""
    if arch is None:
        return 1.0, 1.0
    width = min(max(float(head_dim(arch)), 64.0), 128.0)
    narrow = (128.0 - width) / 64.0  # 1 at head dim 64, 0 at 128
    forward, backward = CUDNN_HEAD_DIM_64_RATIO
    return 1.0 - narrow * (1.0 - forward), 1.0 - narrow * (1.0 - backward)


def _fused_attention_rates(
    stack: Stack, perf: GpuPerf, arch: ModelArch | None = None, length: float | None = None
) -> tuple[float, float]:
    """(forward TFLOP/s, backward/forward time ratio) of the stack's fused attention kernel.

    FlashAttention-2 runs at its measured rates where ``data/efficiency.toml`` has a
    ``flash_attention`` row for the GPU (its share of the GPU's GEMM ceiling depends on the
    generation: an Ampere kernel, 73 % of peak on A100, ~35 % on H100), else at
    ``flash_attention_efficiency_of_mamf`` of the BF16 MAMF; the
    Triton FlashAttention at FlashAttention-2's rates divided by its measured slowdowns
    (``TRITON_FLASH_*_SLOWDOWN``), so its backward/forward time ratio grows by 2.0 / 1.4;
    where its forward + backward rate was measured by length (A100,
    :func:`~clusterforge.perf.attention_length.triton_fwd_bwd_tflops`), at that rate for
    the call's ``length``, the backward/forward ratio kept.
    cuDNN's fused flash attention, which Transformer Engine selects over FlashAttention on
    Hopper and later (``get_attention_backend``: "Disabling FlashAttention to give
    FusedAttention preference on Hopper+", TE >= 1.8), runs at its measured rate where
    ``data/efficiency.toml`` has one for the GPU, else at the FlashAttention-2 estimate, both
    scaled for heads narrower than 128 (:data:`CUDNN_HEAD_DIM_64_RATIO`) and, given the call's
    ``length``, by the share of the 8k rate a call that long keeps (:func:`cudnn_length_shares`,
    measured GPUs only). PyTorch SDPA's
    in-tree FlashAttention-2 build runs its forward at its measured rate where the table has one (``[[sdpa_flash_attention]]``), with FlashAttention-2's backward ratio.
    """
    c = load_constants()
    bf16 = perf.at_bf16().matmul_tflops
    flash = (bf16 * c.flash_attention_efficiency_of_mamf, c.flash_attention_backward_ratio)
    if perf.gpu_id in c.flash_attention_tflops:
        forward, backward = c.flash_attention_tflops[perf.gpu_id]
        flash = (forward * perf.attention_scale, FLASH_BACKWARD_WORK_RATIO * forward / backward)
    match stack.attention:
        case "cudnn":
            forward_ratio, backward_ratio = _head_dim_ratios(arch)
            if perf.gpu_id not in c.cudnn_attention_tflops:
                # the estimate stands for a head-dim-128 rate too: the cuDNN ratios apply
                return flash[0] * forward_ratio, flash[1] * forward_ratio / backward_ratio
            forward, backward = c.cudnn_attention_tflops[perf.gpu_id]
            forward_share, backward_share = cudnn_length_shares(perf.gpu_id, length or 8192.0)
            forward *= forward_ratio * forward_share
            backward *= backward_ratio * backward_share
            return forward * perf.attention_scale, FLASH_BACKWARD_WORK_RATIO * forward / backward
        case "sdpa_flash":
            if perf.gpu_id not in c.sdpa_flash_tflops:
                return flash
            return c.sdpa_flash_tflops[perf.gpu_id] * perf.attention_scale, flash[1]
        case "triton":
            forward_tflops, ratio = flash
            ratio *= TRITON_FLASH_BACKWARD_SLOWDOWN / TRITON_FLASH_FORWARD_SLOWDOWN
            measured = None if length is None else triton_fwd_bwd_tflops(perf.gpu_id, length)
            if measured is None:
                return forward_tflops / TRITON_FLASH_FORWARD_SLOWDOWN, ratio
            # the forward rate that, with the backward/forward time ratio, gives the measured
            # forward + backward rate; the figure counts the backward's FLOPs at 2.5 x the
            # forward's too (``flops(mode="fwd_bwd")`` = 3.5 x ``mode="fwd"`` in
            # benchmarks/benchmark_flash_attention.py at 60499abc)
            forward_tflops = measured * perf.attention_scale * (1.0 + ratio)
            return forward_tflops / (1.0 + FLASH_BACKWARD_WORK_RATIO), ratio
        case "flash" | "unfused":
            return flash
        case _:
            assert_never(stack.attention)


def _attended_pairs(arch: ModelArch, plan: ParallelPlan, *, causal_only: bool = False) -> float:
    """Query-key pairs a causal flash kernel scores per sequence, averaged over the layers
    (over the full causal layers only with ``causal_only``).

    A full causal layer scores ``s^2 / 2`` pairs; a layer whose queries see only the last
    ``w`` keys (``ModelArch.sliding_window``; gpt-oss, every other layer) scores
    ``s w - w^2 / 2``, the kernel skipping the key blocks outside the band (FlashAttention's
    and cuDNN's sliding-window masks). Unfused attention scores every pair either way.
    """
    s = float(plan.seq_length)
    causal = s * s / 2.0
    w = arch.sliding_window
    if causal_only or w is None or w >= s or arch.sliding_window_layers == 0.0:
        return causal
    windowed = s * w - w * w / 2.0
    share = arch.sliding_window_layers
    return share * windowed + (1.0 - share) * causal


def attention_forward_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Forward time of the attention core (Q K^T, softmax, P V) for one layer, in BF16.

    Unfused attention with ALiBi (Press et al. 2022, arXiv 2108.12409, §3) adds the bias
    to every score in the score GEMM's epilogue (``torch.baddbmm``): one more BF16 read per
    score; flash attention applies the bias in-kernel from one slope per head.
    """
    c = load_constants()
    perf = perf.at_bf16()
    heads = arch.num_heads / plan.layout.tp
    head_dim = q_dim(arch) / arch.num_heads
    queries, keys = tokens_per_gpu(plan) / plan.micro_batch, plan.seq_length
    if stack.attention != "unfused":
        # Causal flash attention skips the masked half of the score blocks (and, in the
        # sliding-window layers, the blocks outside the window); windowed layers with a
        # measured rate of their own run at it (perf/window_attention.py).
        window = window_rate(arch, plan, perf, stack)
        pairs = _attended_pairs(arch, plan, causal_only=window is not None) / plan.layout.cp
        flops = 4.0 * plan.micro_batch * heads * head_dim * pairs
        rate = _fused_attention_rates(stack, perf, arch, cudnn_call_length(plan, stack))[0]
        causal = flops / (rate * 1e12) * causal_slowdown(plan, stack, perf) + c.kernel_overhead_s
        if window is None:
            return causal
        share = arch.sliding_window_layers
        windowed = windowed_times(arch, plan, perf, window)[0] + c.kernel_overhead_s
        return (1.0 - share) * causal + share * windowed
    batch = plan.micro_batch * heads
    scores = gemm_time_s(queries, keys, head_dim, perf, batch=batch)
    context = gemm_time_s(queries, head_dim, keys, perf, batch=batch)
    # Fused scale-mask-softmax: read + write 2 B; dropout: read 2, write 2, mask 1 (per score).
    per_score = 4 + (5 if stack.dropout else 0) + (2 if arch.position_embedding == "alibi" else 0)
    softmax = memory_time_s(batch * queries * keys * per_score, perf, num_kernels=2)
    return scores + context + softmax


def attention_backward_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Backward of the attention core: flash recomputes S and runs 2.5x the forward's work at
    a lower rate (``flash_attention_backward_ratio``); unfused: 2x the forward GEMMs."""
    forward = attention_forward_s(arch, plan, perf, stack)
    if stack.attention != "unfused":
        ratio = _fused_attention_rates(stack, perf, arch, cudnn_call_length(plan, stack))[1]
        window = window_rate(arch, plan, perf, stack)
        if window is None:
            return forward * ratio
        windowed_fwd, windowed_bwd = windowed_times(arch, plan, perf, window)
        # the causal layers' share of the forward (all of it but the windowed layers')
        causal = forward - arch.sliding_window_layers * windowed_fwd
        return causal * ratio + arch.sliding_window_layers * windowed_bwd
    # Two GEMMs per forward GEMM; softmax/dropout backward moves ~5 + 6 bytes per score vs 9.
    return 2.0 * forward


# PyTorch's experimental context parallelism (``Stack.context_parallel`` "torch";
# ``torch/distributed/tensor/experimental/_attention.py``, PyTorch 2.6) around its per-step
# SDPA calls, bytes per element moved, [D] by counting the reads and writes of each op.
# Forward, per element of the local attention output: the first step's output cast to FP32
# (2 + 4); each later step's ``_SDPAMerger._merge_one`` in eager: cast (2 + 4),
# ``out - block_out`` (4 + 4 + 4), ``sigmoid(...) * (...)`` (4 + 4), ``out - ...``
# (4 + 4 + 4) = 38, which a compiled block (Inductor) fuses into one pass, read the FP32
# output and the BF16 block output, write the FP32 output (4 + 2 + 4 = 10); the final cast
# back to BF16 (4 + 2). Counted for the last CP rank, whose every later step merges its
# whole output (the others merge half of it on some steps and copy the rest, ~27 B eager).
TORCH_CP_MERGE_BYTES = {"eager": 38.0, "fused": 10.0}
TORCH_CP_CAST_BYTES = 6.0
# Backward, per step and element of dQ and of dK, dV: each step's BF16 gradient added to
# its FP32 sum (4 + 2 + 4); the FP32 dK, dV copied into one buffer for the next rank
# (``torch.cat``, 4 + 4); per attention call, the FP32 sums zeroed (4) and cast back to
# BF16 (4 + 2) at the end.
TORCH_CP_ACCUMULATE_BYTES = 10.0
TORCH_CP_PACK_BYTES = 8.0
TORCH_CP_ZERO_AND_CAST_BYTES = 10.0
# Per call and element of K and V: ``key.contiguous()``, ``value.contiguous()`` (2 + 2) and
# one ``torch.cat`` of K and V for the all-gather (2 + 2).
TORCH_CP_KV_COPY_BYTES = 8.0


def torch_cp_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """(forward, backward) HBM bytes of PyTorch's context-parallel merges for one layer.

    ``cp`` SDPA calls per attention (``_templated_ring_attention``) whose outputs are merged
    one by one in FP32 through their log-sum-exp (``cp - 1`` merges), and ``cp`` backward
    calls whose dQ, dK, dV are accumulated in FP32 (:data:`TORCH_CP_MERGE_BYTES` and the
    constants after it). Zero for other stacks and without context parallelism.
    """
    cp = plan.layout.cp
    if cp == 1 or stack.context_parallel != "torch":
        return 0.0, 0.0
    tokens = tokens_per_gpu(plan)
    q_elements = tokens * q_dim(arch) / plan.layout.tp
    kv_width = q_dim(arch) if stack.kv_heads_expanded else kv_dim(arch)
    kv_elements = 2 * tokens * kv_width / plan.layout.tp
    merge = TORCH_CP_MERGE_BYTES["fused" if stack.fused_elementwise else "eager"]
    forward = q_elements * (2 * TORCH_CP_CAST_BYTES + (cp - 1) * merge)
    forward += kv_elements * TORCH_CP_KV_COPY_BYTES
    per_step = (q_elements + kv_elements) * TORCH_CP_ACCUMULATE_BYTES
    per_step += kv_elements * TORCH_CP_PACK_BYTES
    backward = cp * per_step + (q_elements + kv_elements) * TORCH_CP_ZERO_AND_CAST_BYTES
    backward += kv_elements * TORCH_CP_KV_COPY_BYTES
    return forward, backward


# Transformer Engine's ring (``Stack.context_parallel`` "te" with ``cp_overlap``:
# ``AttnFuncWithCPAndKVP2P``, transformer_engine/pytorch/attention/dot_product_attention/
# context_parallel.py, NVIDIA/TransformerEngine main, read Dec 2026) runs element-wise
# kernels of its own between the per-step fused-attention calls, BF16 attention (NeMo and
# Megatron-Core leave FP8 attention off by default), bytes per element moved, [D] by
# counting each op's reads and writes:
# forward: ``torch.cat((k.view(-1), v.view(-1)))`` packs K, V into the first send buffer
# (2 + 2 per K, V element); after the loop ``flash_attn_fwd_out_correction_init`` rescales the
# first step's output into the running output (read 2, write 2 per output element) and each
# later step's ``flash_attn_fwd_out_correction`` adds its rescaled output (read the running
# and the step's output, write the running one: 2 + 2 + 2), over the whole output on the
# steps whose K, V come from a lower rank and over its second half on the others
# (``flash_attn_fwd_second_half_out_correction``): 3/4 of it on average over the ranks.
# Backward: the saved K, V copied into the send buffer (2 + 2); each step's dQ and dK, dV
# added into their sums (``dq.add_``, ``dk.add_``, ``dv.add_``: 2 + 2 + 2), the first
# copied (2 + 2), on the whole tensor or its half as in the forward.
TE_CP_PACK_BYTES = 4.0
TE_CP_FIRST_BYTES = 4.0
TE_CP_ADD_BYTES = 6.0
TE_CP_HALF_STEP_SHARE = 0.75  # (1 + 1/2) / 2: whole on half the later steps, half on the rest


def te_cp_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """(forward, backward) HBM bytes of Transformer Engine's ring between its attention
    steps, one layer on one GPU (constants above). Zero without context parallelism, for
    other implementations and for the all-gather variant (``cp_overlap`` off)."""
    cp = plan.layout.cp
    if cp == 1 or stack.context_parallel != "te" or not stack.cp_overlap:
        return 0.0, 0.0
    tokens = tokens_per_gpu(plan)
    q_elements = tokens * q_dim(arch) / plan.layout.tp
    kv_width = q_dim(arch) if stack.kv_heads_expanded else kv_dim(arch)
    kv_elements = 2 * tokens * kv_width / plan.layout.tp
    per_element = TE_CP_FIRST_BYTES + (cp - 1) * TE_CP_HALF_STEP_SHARE * TE_CP_ADD_BYTES
    forward = kv_elements * TE_CP_PACK_BYTES + q_elements * per_element
    backward = kv_elements * TE_CP_PACK_BYTES + (q_elements + kv_elements) * per_element
    return forward, backward


def context_parallel_passes(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[tuple[float, int], tuple[float, int]]:
    """((bytes, kernels) forward, (bytes, kernels) backward) of the element-wise passes that
    the stack's context parallelism adds around one layer's attention.

    PyTorch: four kernels per step (:func:`torch_cp_bytes`). Transformer Engine's ring: the
    pack and one correction per step in the forward (``2 cp`` with the log-sum-exp
    corrections), the copy and the dQ, dK, dV sums of every step in the backward
    (``3 cp + 1``) (:func:`te_cp_bytes`).
    """
    cp = plan.layout.cp
    torch_fwd, torch_bwd = torch_cp_bytes(arch, plan, stack)
    if torch_fwd > 0:
        return (torch_fwd, 4 * cp), (torch_bwd, 4 * cp)
    te_fwd, te_bwd = te_cp_bytes(arch, plan, stack)
    if te_fwd > 0:
        return (te_fwd, 2 * cp), (te_bwd, 3 * cp + 1)
    return (0.0, 0), (0.0, 0)


# flash-attn 2.4.2 ``flash_attn/bert_padding.py`` around the varlen kernel, bytes per BF16
# element of Q, K, V or the output [D] by counting the kernels' loads and stores:
# ``index_first_axis`` gathers the kept rows (read 2, write 2); its backward scatters the
# gradient into a zeroed tensor (write 2 zeros, read 2, write 2); ``pad_input``
# (``index_put_first_axis``) writes zeros and puts the rows (2 + 2 + 2); its backward
# gathers (2 + 2).
UNPAD_GATHER_BYTES = 4.0
UNPAD_SCATTER_BYTES = 6.0
# Kernels per layer: each ``unpad_input`` runs the mask's sum, ``torch.nonzero``, the max
# of the lengths, its ``.item()`` copy, the cumulative sum, its padding and the gather (7,
# three times), plus the all-ones mask and the output's zeros and index-put (3); in the
# backward three zero-fills with their scatters and one gather.
UNPAD_FORWARD_KERNELS = 3 * 7 + 3
UNPAD_BACKWARD_KERNELS = 3 * 2 + 1


def flash_unpad_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """(gathers before the kernel, pad after it) forward bytes per layer and micro-batch of
    LLM Foundry's unpadding around FlashAttention-2 (``Stack.flash_unpad``); zeros without."""
    if not stack.flash_unpad or stack.attention != "flash":
        return 0.0, 0.0
    tokens = tokens_per_gpu(plan)
    q, kv = q_dim(arch) / plan.layout.tp, kv_dim(arch) / plan.layout.tp
    return tokens * UNPAD_GATHER_BYTES * (q + 2 * kv), tokens * UNPAD_SCATTER_BYTES * q


def flash_unpad_passes(
    arch: ModelArch, plan: ParallelPlan, stack: Stack
) -> tuple[tuple[float, int], tuple[float, int]]:
    """((bytes, kernels) forward, (bytes, kernels) backward) of the unpadding around one
    layer's FlashAttention-2 call: Q, K, V gathered and the output padded in the forward,
    the reverse scatters and gather in the backward (:data:`UNPAD_GATHER_BYTES`)."""
    gathers, pad = flash_unpad_bytes(arch, plan, stack)
    if gathers == 0.0:
        return (0.0, 0), (0.0, 0)
    backward = gathers / UNPAD_GATHER_BYTES * UNPAD_SCATTER_BYTES + pad / UNPAD_SCATTER_BYTES * (
        UNPAD_GATHER_BYTES
    )
    return (gathers + pad, UNPAD_FORWARD_KERNELS), (backward, UNPAD_BACKWARD_KERNELS)


def flash_unpad_idle_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack, gpu: Gpu
) -> float:
    """GPU idle seconds per layer forward while the host issues the unpadding around a
    varlen FlashAttention-2 call after its first blocking call: the host issue time less
    the gathers of Q, K and V that the GPU runs meanwhile (:func:`flash_unpad_host_s`)."""
    host = flash_unpad_host_s(stack, host_cpu(gpu))
    if host == 0.0:
        return 0.0
    gathers, _ = flash_unpad_bytes(arch, plan, stack)
    return max(0.0, host - memory_time_s(gathers, perf, num_kernels=UNPAD_FORWARD_KERNELS))
