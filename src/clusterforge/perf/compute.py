"""Compute time of one transformer layer on one GPU: GEMMs, attention, memory-bound ops.

Each operation is timed on the GPU's roofline (:mod:`clusterforge.perf.roofline`). In FP8
runs only the weight GEMMs of the transformer layers run in FP8 (Transformer Engine and
torchao convert ``Linear`` layers); attention and the output layer stay in BF16. Flash
attention runs at its own efficiency; element-wise operations (norms, activations, residual
adds, dropout, rotary, softmax) are pure HBM traffic. All constants live in
``data/efficiency.toml`` with their sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, head_dim, kv_dim, q_dim
from clusterforge.perf.fp8 import FP8_KERNELS_PER_LAYER, fp8_layer_bytes
from clusterforge.perf.memory import layer_matmul_shapes
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import (
    BF16_BYTES,
    GpuPerf,
    gemm_time_s,
    load_constants,
    memory_time_s,
)
from clusterforge.perf.stack import Stack

__all__ = [
    "LayerTimes",
    "Stack",
    "grouped_gemm_time_s",
    "layer_times",
    "logits_times",
    "overlapped_s",
]


def overlapped_s(comm_s: float, window_s: float) -> float:
    """Exposed seconds of a collective overlapped with ``window_s`` of compute.

    ``max(0, comm - window) + interference x min(comm, window)``: what does not fit in the
    window, plus the slowdown the overlapped part inflicts on the compute (SMs and HBM that
    NCCL uses); ``overlap_interference`` in ``data/efficiency.toml``.
    """
    c = load_constants()
    return max(0.0, comm_s - window_s) + c.overlap_interference * min(comm_s, window_s)


@dataclass(frozen=True)
class LayerTimes:
    """Seconds for one layer and one micro-batch on one GPU, excluding communication."""

    forward_s: float
    backward_s: float
    recompute_s: float
    gemm_forward_s: float
    attention_forward_s: float
    attention_backward_s: float

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.recompute_s


def _tokens(plan: ParallelPlan) -> float:
    """Tokens one GPU processes per micro-batch (CP splits the sequence)."""
    return plan.micro_batch * plan.seq_length / plan.layout.cp


# Transformer Engine's ``GroupedLinear`` (the experts of Megatron-Core's ``TEGroupedMLP``)
# runs one cuBLAS GEMM per local expert, round-robin over its compute streams
# (``multi_stream_cublas_gemm`` in transformer_engine/common/gemm/cublaslt_gemm.cu; the
# CUTLASS grouped GEMM is opt-in, ``NVTE_USE_CUTLASS_GROUPED_GEMM``, Hopper only) and it
# keeps four of them (``num_compute_streams = 4``, transformer_engine/common/util/
# multi_stream.cpp) [V], NVIDIA/TransformerEngine at commit d0067d0 (2026-08-22).
TE_GROUPED_GEMM_STREAMS = 4


def grouped_gemm_time_s(m: float, n: float, k: float, perf: GpuPerf, num_gemms: float) -> float:
    """Time of ``num_gemms`` equal GEMMs ``(m x k) @ (k x n)`` run as TE's grouped linear.

    At most :data:`TE_GROUPED_GEMM_STREAMS` GEMMs run at once, so their tiles share the SMs'
    waves (one batched wave count, :func:`~clusterforge.perf.roofline.gemm_time_s`); the
    groups of concurrent GEMMs follow each other, each with its own wave quantisation, tail
    and kernel overhead. Few tokens per expert (small ``m``) thus keep the per-GEMM tile waste
    that one kernel over all the experts' tiles would hide.
    """
    concurrent = min(float(TE_GROUPED_GEMM_STREAMS), num_gemms)
    full_rounds, rest = divmod(num_gemms, concurrent)
    time = full_rounds * gemm_time_s(m, n, k, perf, batch=concurrent)
    if rest > 0:
        time += gemm_time_s(m, n, k, perf, batch=rest)
    return time


def _weight_gemms_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf) -> float:
    """Forward time of the weight GEMMs of one layer (Megatron column/row TP split)."""
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    tokens = _tokens(plan)
    q, kv = q_dim(arch), kv_dim(arch)
    qkv = gemm_time_s(tokens, (q + 2 * kv) / t, h, perf)
    proj = gemm_time_s(tokens, h, q / t, perf)
    up_cols = (2 if arch.gated_mlp else 1) * f / t
    if arch.num_experts > 1:
        local_experts = arch.num_experts / plan.layout.ep
        routed = tokens * arch.top_k * plan.layout.ep / arch.num_experts  # tokens per local expert
        up = grouped_gemm_time_s(routed, up_cols, h, perf, local_experts)
        down = grouped_gemm_time_s(routed, h, f / t, perf, local_experts)
        router = gemm_time_s(tokens, arch.num_experts, h, perf)
        return qkv + proj + up + down + router
    return qkv + proj + gemm_time_s(tokens, up_cols, h, perf) + gemm_time_s(tokens, h, f / t, perf)


# The Triton FlashAttention (HazyResearch ``flash_attn_triton.py``) against FlashAttention-2:
# "FlashAttention-2 is around 1.3-1.5x faster than FlashAttention in Triton in the forward
# pass and around 2x faster in the backward pass" (Dao 2023, arXiv 2307.08691, §4.1,
# A100 80GB, head dim 64/128, with and without causal mask) [V]. Applied on every GPU: both
# kernels use the Ampere mma instructions, none of Hopper's (TMA, wgmma), so the ratio is
# taken to carry over to H100 (an assumption; no H100 measurement of the Triton kernel).
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
    stack: Stack, perf: GpuPerf, arch: ModelArch | None = None
) -> tuple[float, float]:
    """(forward TFLOP/s, backward/forward time ratio) of the stack's fused attention kernel.

    FlashAttention-2 runs at its measured rates where ``data/efficiency.toml`` has a
    ``flash_attention`` row for the GPU (its share of the GPU's GEMM ceiling depends on the
    generation: an Ampere kernel, 73 % of peak on A100, ~35 % on H100), else at
    ``flash_attention_efficiency_of_mamf`` of the BF16 MAMF; the
    Triton FlashAttention at FlashAttention-2's rates divided by its measured slowdowns
    (``TRITON_FLASH_*_SLOWDOWN``), so its backward/forward time ratio grows by 2.0 / 1.4.
    cuDNN's fused flash attention, which Transformer Engine selects over FlashAttention on
    Hopper and later (``get_attention_backend``: "Disabling FlashAttention to give
    FusedAttention preference on Hopper+", TE >= 1.8), runs at its measured rate where
    ``data/efficiency.toml`` has one for the GPU, else at the FlashAttention-2 estimate, both
    scaled for heads narrower than 128 (:data:`CUDNN_HEAD_DIM_64_RATIO`). PyTorch SDPA's
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
            forward, backward = forward * forward_ratio, backward * backward_ratio
            return forward * perf.attention_scale, FLASH_BACKWARD_WORK_RATIO * forward / backward
        case "sdpa_flash":
            if perf.gpu_id not in c.sdpa_flash_tflops:
                return flash
            return c.sdpa_flash_tflops[perf.gpu_id] * perf.attention_scale, flash[1]
        case "triton":
            forward_tflops, ratio = flash
            return (
                forward_tflops / TRITON_FLASH_FORWARD_SLOWDOWN,
                ratio * TRITON_FLASH_BACKWARD_SLOWDOWN / TRITON_FLASH_FORWARD_SLOWDOWN,
            )
        case "flash" | "unfused":
            return flash
        case _:
            assert_never(stack.attention)


def _attended_pairs(arch: ModelArch, plan: ParallelPlan) -> float:
    """Query-key pairs a causal flash kernel scores per sequence, averaged over the layers.

    A full causal layer scores ``s^2 / 2`` pairs; a layer whose queries see only the last
    ``w`` keys (``ModelArch.sliding_window``; gpt-oss, every other layer) scores
    ``s w - w^2 / 2``, the kernel skipping the key blocks outside the band (FlashAttention's
    and cuDNN's sliding-window masks). Unfused attention scores every pair either way.
    """
    s = float(plan.seq_length)
    causal = s * s / 2.0
    w = arch.sliding_window
    if w is None or w >= s or arch.sliding_window_layers == 0.0:
        return causal
    windowed = s * w - w * w / 2.0
    share = arch.sliding_window_layers
    return share * windowed + (1.0 - share) * causal


def _attention_forward_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Forward time of the attention core (Q K^T, softmax, P V) for one layer, in BF16.

    Unfused attention with ALiBi (Press et al. 2022, arXiv 2108.12409, §3) adds the bias
    to every score in the score GEMM's epilogue (``torch.baddbmm``): one more BF16 read per
    score; flash attention applies the bias in-kernel from one slope per head.
    """
    c = load_constants()
    perf = perf.at_bf16()
    heads = arch.num_heads / plan.layout.tp
    head_dim = q_dim(arch) / arch.num_heads
    queries, keys = _tokens(plan) / plan.micro_batch, plan.seq_length
    if stack.attention != "unfused":
        # Causal flash attention skips the masked half of the score blocks (and, in the
        # sliding-window layers, the blocks outside the window).
        pairs = _attended_pairs(arch, plan) / plan.layout.cp
        flops = 4.0 * plan.micro_batch * heads * head_dim * pairs
        rate = _fused_attention_rates(stack, perf, arch)[0] * 1e12
        return flops / rate + c.kernel_overhead_s
    batch = plan.micro_batch * heads
    scores = gemm_time_s(queries, keys, head_dim, perf, batch=batch)
    context = gemm_time_s(queries, head_dim, keys, perf, batch=batch)
    # Fused scale-mask-softmax: read + write 2 B; dropout: read 2, write 2, mask 1 (per score).
    per_score = 4 + (5 if stack.dropout else 0) + (2 if arch.position_embedding == "alibi" else 0)
    softmax = memory_time_s(batch * queries * keys * per_score, perf, num_kernels=2)
    return scores + context + softmax


def _attention_backward_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> float:
    """Backward of the attention core: flash recomputes S and runs 2.5x the forward's work at
    a lower rate (``flash_attention_backward_ratio``); unfused: 2x the forward GEMMs."""
    forward = _attention_forward_s(arch, plan, perf, stack)
    if stack.attention != "unfused":
        return forward * _fused_attention_rates(stack, perf, arch)[1]
    # Two GEMMs per forward GEMM; softmax/dropout backward moves ~5 + 6 bytes per score vs 9.
    return 2.0 * forward


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


def _permutation_bytes_per_token(arch: ModelArch, plan: ParallelPlan) -> float:
    """Forward HBM bytes per token of the MoE layer's token permutations (0 for dense).

    ``top_k`` copies are permuted, (when the GPU holds several experts) sorted into expert
    order and back, and unpermuted into one token (:data:`PERMUTE_BYTES` and the constants
    after it).
    """
    if arch.num_experts == 1:
        return 0.0
    h, copies = arch.hidden_size, arch.top_k
    per_copy = PERMUTE_BYTES + UNPERMUTE_READ_BYTES
    if arch.num_experts > plan.layout.ep:  # several local experts: sort and unsort chunks
        per_copy += SORT_CHUNKS_BYTES
    return per_copy * h * copies + BF16_BYTES * h


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


def expert_output_bias_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one MoE layer's eager second-linear bias.

    Zero for dense models, models without linear biases and stacks that fuse the bias into
    the expert GEMM (``Stack.moe_expert_bias_eager`` off); otherwise the bytes and kernels of
    :data:`EXPERT_BIAS_BYTES` over the GPU's routed copies, with kernels that grow with the
    local expert count (:data:`EXPERT_BIAS_KERNELS_PER_EXPERT`).
    """
    if arch.num_experts == 1 or not arch.linear_bias or not stack.moe_expert_bias_eager:
        return 0.0, 0.0
    local_experts = max(1, arch.num_experts // plan.layout.ep)
    copies = _tokens(plan) * arch.top_k / (plan.layout.tp if plan.sequence_parallel else 1)
    elements = copies * arch.hidden_size
    (fwd_bytes, bwd_bytes), (fwd_kernels, bwd_kernels) = (
        EXPERT_BIAS_BYTES,
        EXPERT_BIAS_KERNELS_PER_EXPERT,
    )
    return (
        memory_time_s(fwd_bytes * elements, perf, num_kernels=fwd_kernels * local_experts + 1),
        memory_time_s(bwd_bytes * elements, perf, num_kernels=bwd_kernels * local_experts + 1),
    )


def _elementwise_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """HBM bytes of the element-wise ops of one layer's forward on one GPU.

    Per token (BF16): 2 norms read+write ``4h`` each; 2 residual adds read 2 tensors and write
    one (``6h`` each), plus a 1-byte dropout mask and its write (``3h``) when dropout is on;
    the MLP activation reads its input(s) and writes its output (``4f`` plain, ``6f`` gated);
    rotary embeddings (RoPE models only) read and write Q and K. A parallel block (GPT-J;
    Chowdhery et al. 2022, PaLM §2 "Parallel layers") has one norm and one residual add of
    the two branches' sum (three tensors read). Norms and residuals are replicated on every
    TP rank unless sequence parallelism splits them (Korthikanti et al. 2022 §4.2.2).

    PyTorch eager (``Stack.fused_elementwise`` False) runs each op of a composite RMSNorm,
    SwiGLU and rotary embedding as its own kernel, with FP32 upcasts in between
    (``EAGER_*_BYTES``); LayerNorm stays one kernel (``F.layer_norm``) and a plain MLP
    activation one kernel either way.
    """
    h, f = arch.hidden_size, ffn_size(arch)
    eager = not stack.fused_elementwise
    num_norms = 1 if arch.parallel_block else 2
    residual = 8 * h if arch.parallel_block else 12 * h
    norm = EAGER_RMSNORM_BYTES if eager and arch.normalization == "rmsnorm" else 4
    replicated = norm * h * num_norms + residual + (3 * h * num_norms if stack.dropout else 0)
    experts = arch.top_k if arch.num_experts > 1 else 1
    gated = EAGER_SWIGLU_BYTES if eager else 6
    activation = (gated if arch.gated_mlp else 4) * f * experts
    permute = _permutation_bytes_per_token(arch, plan)
    rope = EAGER_ROTARY_BYTES if eager else 4
    rotary = rope * (q_dim(arch) + kv_dim(arch)) if arch.position_embedding == "rope" else 0
    split = activation + rotary
    per_token = (replicated + permute) / (
        plan.layout.tp if plan.sequence_parallel else 1
    ) + split / plan.layout.tp
    return per_token * _tokens(plan)


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


def _torch_cp_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """(forward, backward) HBM bytes of PyTorch's context-parallel merges for one layer.

    ``cp`` SDPA calls per attention (``_templated_ring_attention``) whose outputs are merged
    one by one in FP32 through their log-sum-exp (``cp - 1`` merges), and ``cp`` backward
    calls whose dQ, dK, dV are accumulated in FP32 (:data:`TORCH_CP_MERGE_BYTES` and the
    constants after it). Zero for other stacks and without context parallelism.
    """
    cp = plan.layout.cp
    if cp == 1 or stack.context_parallel != "torch":
        return 0.0, 0.0
    tokens = _tokens(plan)
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


def tp_backward_regathers(plan: ParallelPlan, stack: Stack) -> bool:
    """Whether the backward all-gathers each column-parallel matmul's input again.

    Megatron's sequence parallelism saves the input shard and re-gathers it for the weight
    gradient (Korthikanti et al. 2022 §4.2.2). DTensor TP (``Stack.tp_saves_gathered_input``)
    lets autograd save the gathered input itself: without recomputation and under full
    recomputation (whose recomputed forward gathers it again) nothing is re-gathered; under
    torchtitan's per-op checkpointing the all-gather's output is not among the saved ops
    (``_save_list`` in ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370, Dec 2024:
    matmuls, SDPA, reduce-scatter, abs/max; no all-gather), so the backward
    recomputes the gather.
    """
    if not stack.tp_saves_gathered_input:
        return True
    return plan.recompute == "selective"


def tp_input_gather_bytes(plan: ParallelPlan, stack: Stack) -> int:
    """Bytes per element of the sequence-parallel all-gathers of matmul inputs: FP8 when
    the stack casts them before gathering (``Stack.tp_fp8_all_gather``) in an FP8 run, else
    BF16. The all-gathers of output gradients in the backward stay BF16."""
    return 1 if plan.precision == "fp8" and stack.tp_fp8_all_gather else BF16_BYTES


def tp_layout_copy_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """(forward, backward) HBM bytes of the layout copies around one layer's TP collectives.

    PyTorch's functional collectives gather and scatter along dimension 0; DTensor's
    sequence-parallel placement is ``Shard(1)`` of a ``[batch, sequence, hidden]`` activation,
    so ``all_gather_tensor`` follows every all-gather with ``torch.cat(torch.chunk(...),
    dim=1)`` and ``reduce_scatter_tensor`` precedes every reduce-scatter with the reverse
    (``torch/distributed/_functional_collectives.py``, PyTorch 2.5-2.6): a read and a write of
    the whole gathered activation per call. Per layer: an all-gather and a reduce-scatter
    around the attention and around the MLP in the forward (one pair for a parallel block),
    their mirrors in the backward plus the re-gathered inputs of the weight gradients when
    there are any (:func:`tp_backward_regathers`; as :mod:`~clusterforge.perf.exposure`
    counts the calls). Zero without sequence-parallel TP,
    for stacks without the copies, and under async TP (``tp_overlap``), whose fused
    all-gather-matmul kernels replace the plain collectives.
    """
    if plan.layout.tp == 1 or not plan.sequence_parallel:
        return 0.0, 0.0
    if not stack.tp_layout_copies or stack.tp_overlap:
        return 0.0, 0.0
    elements = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.hidden_size
    pairs = 1 if arch.parallel_block else 2
    gathered_input = tp_input_gather_bytes(plan, stack) * elements
    activation = BF16_BYTES * elements
    forward = pairs * (gathered_input + activation)
    backward = pairs * 2 * activation
    if tp_backward_regathers(plan, stack):
        backward += pairs * gathered_input
    return 2 * forward, 2 * backward  # a read and a write per copied byte


ELEMENTWISE_KERNELS_PER_LAYER = 8
# PyTorch eager, bytes per element moved by the unfused op chains that a fused kernel
# (Megatron/Transformer Engine, Apex, or torch.compile/Inductor) does in one read and one
# write; [D] by counting the reads and writes of each op:
# RMSNorm ``x.float()`` (2 + 4), ``pow(2)`` (4 + 4), ``mean`` (4), ``x * rsqrt`` (4 + 4),
# ``type_as`` (4 + 2), ``* weight`` (2 + 2) = 36 B against 4 fused (torch.nn.RMSNorm's
# composite path; Llama's reference ``RMSNorm`` in meta-llama/llama ``model.py``);
EAGER_RMSNORM_BYTES = 36
# SwiGLU ``silu(a) * b``: silu (2 + 2), multiply (2 + 2 + 2) = 10 B per FFN element
# against 6 fused;
EAGER_SWIGLU_BYTES = 10
# rotary embedding in complex form (meta-llama ``apply_rotary_emb``, torchtitan): upcast
# to FP32 (2 + 4), complex multiply (4 + 4), downcast (4 + 2) = 20 B per Q/K element
# against 4 fused.
EAGER_ROTARY_BYTES = 20
# Extra kernels in eager per op chain: 6 more per RMSNorm (7 ops for one), 1 more for
# SwiGLU (2 for 1), 2 more per rotary tensor, Q and K (3 for 1).
EAGER_EXTRA_KERNELS = {"rmsnorm": 6, "swiglu": 1, "rotary": 2 * 2}


def _elementwise_kernels(arch: ModelArch, stack: Stack) -> int:
    """Element-wise kernel launches of one layer's forward (fused, plus eager's extras)."""
    if stack.fused_elementwise:
        return ELEMENTWISE_KERNELS_PER_LAYER
    num_norms = 1 if arch.parallel_block else 2
    extra = EAGER_EXTRA_KERNELS["rmsnorm"] * num_norms if arch.normalization == "rmsnorm" else 0
    extra += EAGER_EXTRA_KERNELS["swiglu"] if arch.gated_mlp else 0
    extra += EAGER_EXTRA_KERNELS["rotary"] if arch.position_embedding == "rope" else 0
    return ELEMENTWISE_KERNELS_PER_LAYER + extra


# Transformer Engine's FP8 current scaling (``Float8CurrentScalingQuantizer::quantize_impl``,
# transformer_engine/pytorch/csrc/quantizer.cpp) runs three kernels per tensor: the amax,
# the scale from it and the cast (``nvte_compute_amax_with_config``,
# ``nvte_compute_scale_from_amax``, ``nvte_quantize_v2``); a grouped linear's input is split
# per expert and each piece quantised on its own (``split_quantize`` ->
# ``multi_tensor_quantize_impl`` in transformer_engine/pytorch/csrc/extensions/cast.cpp,
# whose fused multi-tensor cast-transpose serves delayed scaling only) [V], TE commit
# d0067d0 (2026-08-22).
CURRENT_SCALING_KERNELS_PER_TENSOR = 3


def _expert_fp8_extra_kernels(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> int:
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


ELEMENTWISE_BACKWARD_RATIO = 2.0  # read saved input + incoming grad, write grad


def layer_times(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> LayerTimes:
    """Forward, backward and recomputation time of one layer for one micro-batch.

    FP8 runs add the cast/transpose passes of :func:`~clusterforge.perf.fp8.fp8_layer_bytes`;
    PyTorch's context parallelism adds its FP32 merges to the attention (:func:`_torch_cp_bytes`).
    """
    gemm = _weight_gemms_s(arch, plan, perf)
    cp_fwd, cp_bwd = _torch_cp_bytes(arch, plan, stack)
    cp_kernels = 4 * plan.layout.cp if cp_fwd > 0 else 0
    attention_fwd = _attention_forward_s(arch, plan, perf, stack)
    attention_bwd = _attention_backward_s(arch, plan, perf, stack)
    attention_fwd += memory_time_s(cp_fwd, perf, num_kernels=cp_kernels) if cp_fwd else 0.0
    attention_bwd += memory_time_s(cp_bwd, perf, num_kernels=cp_kernels) if cp_bwd else 0.0
    kernels = _elementwise_kernels(arch, stack)
    elementwise = memory_time_s(_elementwise_bytes(arch, plan, stack), perf, num_kernels=kernels)
    cast_fwd, cast_bwd = fp8_layer_bytes(arch, plan, stack)
    bias_fwd, bias_bwd = expert_output_bias_s(arch, plan, perf, stack)
    forward = gemm + attention_fwd + elementwise + bias_fwd
    backward = 2.0 * gemm + attention_bwd + ELEMENTWISE_BACKWARD_RATIO * elementwise + bias_bwd
    copy_fwd, copy_bwd = tp_layout_copy_bytes(arch, plan, stack)
    if copy_fwd > 0:
        pairs = 1 if arch.parallel_block else 2
        regathers = tp_backward_regathers(plan, stack)
        forward += memory_time_s(copy_fwd, perf, num_kernels=2 * pairs)
        backward += memory_time_s(copy_bwd, perf, num_kernels=(3 if regathers else 2) * pairs)
    if cast_fwd > 0:
        kernels = FP8_KERNELS_PER_LAYER // 2 + _expert_fp8_extra_kernels(arch, plan, stack)
        forward += memory_time_s(cast_fwd, perf, num_kernels=kernels)
        backward += memory_time_s(cast_bwd, perf, num_kernels=kernels)
    recompute = 0.0
    if plan.recompute == "full":
        recompute = forward
    elif plan.recompute == "selective" and stack.selective_recompute == "every_other_matmul":
        tokens = _tokens(plan)
        shapes = layer_matmul_shapes(arch, plan)[1::2]  # the second, fourth, ... matmul
        recompute = sum(gemm_time_s(tokens, n, k, perf) for n, k in shapes) + elementwise
    elif plan.recompute == "selective" and stack.attention == "unfused":
        recompute = attention_fwd
    return LayerTimes(forward, backward, recompute, gemm, attention_fwd, attention_bwd)


# Megatron's vocab-parallel cross-entropy in FP32, unfused, bytes per logit over forward and
# backward: cast BF16->FP32 (2 + 4), max (4), subtract max (4 + 4), exp (4 + 4), sum (4),
# normalise (4 + 4); backward: softmax - one-hot, scaled (4 + 4), cast to BF16 (4 + 2). [D]
# by counting passes of megatron/core/tensor_parallel/cross_entropy.py.
CROSS_ENTROPY_BYTES_PER_LOGIT = 52.0
# Fused cross-entropy (Transformer Engine's Triton kernels, ``cross_entropy_fusion_impl =
# "te"``; ``transformer_engine/common/triton/cross_entropy.py``): an online-softmax pass reads
# the BF16 logits (2), a second pass reads them again and writes the gradient in place (2 + 2)
# in the forward; the backward scales the gradient in place (2 + 2). [D] by counting the
# kernels' loads and stores.
FUSED_CROSS_ENTROPY_BYTES = (6.0, 4.0)
# The fused CUDA softmax cross-entropy of apex / flash-attention ``csrc/xentropy``
# (``xentropy_kernel.cu``) on BF16 logits: the forward kernel reads each row twice (max and
# sum, then the sum of exponentials) and writes one loss and one log-sum-exp per row (2 + 2);
# the backward kernel reads the logits and writes a new gradient tensor (2 + 2). [D] by
# counting the kernels' loads and stores.
XENTROPY_BYTES = (4.0, 4.0)


def _cross_entropy_s(logits: float, perf: GpuPerf, stack: Stack) -> tuple[float, float]:
    """Forward and backward seconds of the loss over ``logits`` logits on one GPU."""
    match stack.cross_entropy:
        case "te" | "xentropy":
            kernels = 2 if stack.cross_entropy == "te" else 1
            forward, backward = (
                FUSED_CROSS_ENTROPY_BYTES if stack.cross_entropy == "te" else XENTROPY_BYTES
            )
            return (
                memory_time_s(forward * logits, perf, kernels),
                memory_time_s(backward * logits, perf),
            )
        case "unfused":
            loss = memory_time_s(CROSS_ENTROPY_BYTES_PER_LOGIT * logits, perf, num_kernels=9)
            return loss * 34 / 52, loss * 18 / 52
        case _:
            assert_never(stack.cross_entropy)


def logits_times(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack | None = None
) -> tuple[float, float]:
    """Forward and backward time of the output layer and the cross-entropy (last stage).

    The logits GEMM is split over TP (vocab-parallel); the FP32 cross-entropy is a chain of
    memory-bound passes over the ``tokens x V / t`` logits (``CROSS_ENTROPY_BYTES_PER_LOGIT``),
    which matters for small models with large vocabularies, or, with a fused cross-entropy
    (``Stack.cross_entropy``), one or two passes and a gradient pass. The output layer stays in BF16
    in FP8 runs (Megatron-Core's output layer is not a Transformer Engine module; torchtitan
    filters ``output`` out of its float8 conversion).
    """
    perf = perf.at_bf16()
    tokens = _tokens(plan)
    vocab = arch.vocab_size / plan.layout.tp
    gemm = gemm_time_s(tokens, vocab, arch.hidden_size, perf)
    loss_forward, loss_backward = _cross_entropy_s(tokens * vocab, perf, stack or Stack())
    return gemm + loss_forward, 2.0 * gemm + loss_backward
