"""Host (CPU) issue time of the forward segments the CPU cannot run ahead of: an MoE
layer's (below) and the unpadding around a varlen FlashAttention-2 call
(:func:`flash_unpad_host_s`).

Eager PyTorch issues GPU work asynchronously: while the CPU runs ahead, each kernel's host
cost (Python, the ATen dispatcher, the CUDA launch) hides behind earlier GPU work. Megatron-
Core's all-to-all token dispatcher (``MoEAlltoAllTokenDispatcher``, megatron/core/transformer/
moe/token_dispatcher.py, NVIDIA/Megatron-LM at commit d98e8a6, 2026-08-22) breaks that once
per MoE layer forward: the all-to-all needs the per-rank split sizes on the host, so
``_maybe_dtoh_and_synchronize`` copies them to the CPU and blocks on the copy's event
(``d2h_event.synchronize()``) at ``cuda_sync_point``, which is ``"before_ep_alltoall"`` with
expert parallelism, ``"before_finish"`` without, and earlier (``"before_permutation_1"``) when
tokens are dropped; only drop-and-pad skips it. When it returns, the GPU has drained and
every kernel up to the next layer's sync waits for the CPU to issue it, so that segment takes
``max(GPU time, host issue time)``. The backward reuses the split sizes already on the host
(the all-to-all's backward and ``GroupedLinear``'s ``m_splits``) and has no such sync, so the
CPU can run ahead there; it is not floored here.

Host issue time = TE module calls x their host cost + other PyTorch calls x theirs, counted
along the forward from one MoE layer's sync to the next's (:data:`MOE_FORWARD_TE_MODULES`,
:data:`MOE_FORWARD_TORCH_OPS`). Per-call host costs, BF16 ``Linear`` forward, 8192 tokens,
hidden 2048 (NVIDIA/TransformerEngine issue #2053, "High CPU overhead on Grace systems",
2025-08-11, CPU time per call measured by its benchmark script): ``torch.nn.Linear``
13.48 us on DGX H100 (Xeon Platinum 8480C), 33.17 us on GH200, 37.08 us on GB200 (Grace);
``te.Linear`` 90.53 us on GH200 and 99.66 us on GB200. Superchips (NVLink-C2C host link)
run a Grace CPU; other GPUs are taken to run on x86 hosts like the DGX H100's.

CUDA graphs (Megatron ``--cuda-graph-impl transformer_engine|local`` with
``--cuda-graph-modules``; docs/user-guide/features/cuda_graph.md at d98e8a6) replay a
captured scope with one launch: ``attn`` (the attention block), ``moe_router``,
``moe_preprocess``. The dispatch and the experts (dynamic shapes) stay eager, and the
sync stays unless the whole layer is captured (drop-and-pad only), so a captured scope's
calls become one call each.

Under the flex dispatcher the GPU idle of a layer pass is also floored at a measured figure
(:func:`flex_dropless_idle_s`): a published Nsight Systems budget of such a step, where the
per-call count above leaves the host well inside the GPU's time yet the GPU still idles.
Megatron-Core's EP overlap under the interleaved pipeline schedule costs a measured time per
model-chunk pass (:func:`interleaved_overlap_idle_s`).
"""

from __future__ import annotations

from typing import Literal

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.stack import Stack

__all__ = [
    "EXPERT_BIAS_FIXED_OPS",
    "EXPERT_BIAS_OPS_PER_EXPERT",
    "FLASH_UNPAD_HOST_CALLS",
    "FLEX_DROPLESS_IDLE_S",
    "FLEX_DROPLESS_IDLE_TOKENS",
    "HOST_OP_S",
    "INTERLEAVED_OVERLAP_CHUNK_S",
    "MOE_FORWARD_TE_MODULES",
    "MOE_FORWARD_TORCH_OPS",
    "TE_MODULE_S",
    "HostCpu",
    "flash_unpad_host_s",
    "flex_dropless_idle_s",
    "host_cpu",
    "host_idle_s",
    "interleaved_overlap_chunk_s",
    "interleaved_overlap_idle_s",
    "moe_forward_host_s",
]

HostCpu = Literal["x86", "grace"]

# Host seconds per eager ``torch.nn.Linear`` forward call (TransformerEngine #2053): one
# Python module call, its ATen ops and one CUDA launch, taken for every PyTorch call below.
HOST_OP_S: dict[HostCpu, float] = {"x86": 13.48e-6, "grace": 37.08e-6}
# Host seconds per Transformer Engine module call (``te.Linear`` forward, #2053: 99.66 us on
# GB200). On x86 the excerpt gives no TE figure; derived by the same host ratio as
# torch's: 99.66 x 13.48 / 37.08 = 36.2 us (derived, not measured).
TE_MODULE_S: dict[HostCpu, float] = {
    "x86": 99.66e-6 * HOST_OP_S["x86"] / HOST_OP_S["grace"],
    "grace": 99.66e-6,
}

# Transformer Engine module calls issued between two MoE layers' syncs, by capture scope
# (megatron/core/transformer/transformer_layer.py and moe/experts.py at d98e8a6):
# attention: ``TELayerNormColumnParallelLinear`` (QKV), ``TEDotProductAttention``,
# ``TERowParallelLinear`` (projection); MLP: the pre-MLP norm; experts: ``TEGroupedMLP``'s
# two ``GroupedLinear`` (fc1, fc2; their per-expert work runs inside TE's C++ and is not
# counted, a lower bound).
MOE_FORWARD_TE_MODULES: dict[str, int] = {"attn": 3, "mlp_norm": 1, "experts": 2}
# Other PyTorch calls (each one op with a launch, or a collective, or a copy):
# attn: fused rotary on Q and K (2), bias-dropout-add after the attention (1);
# moe_router (moe/router.py, moe/moe_utils.py): gating linear, fused top-k with score
# function, fused aux loss and its ``MoEAuxLossAutoScaler`` (4);
# moe_preprocess (token_dispatcher.py ``preprocess``): ``routing_map.sum``, ``.long()``,
# input splits ``reshape().sum``, the token-count all-gather over TP x EP, the local-expert
# slice ``.contiguous()``, three sums for output splits, TP splits and tokens per local
# expert (8);
# sync (``_maybe_dtoh_and_synchronize``): four device-to-host copies (tokens per expert,
# input, output and TP splits), the event record and the event synchronize (6);
# dispatch (eager): fused permute, all-to-all of tokens and of probabilities, fused
# ``sort_chunks_by_idxs`` to expert-major order, the probability-weighted activation,
# fused un-sort, the combine all-to-all, fused unpermute, bias-dropout-add (9).
# The experts' second-linear bias, which Megatron-Core adds in Python when the model has
# linear biases (``TEGroupedMLP._apply_bias``, moe/experts.py at core_v0.15.0 to
# core_v0.17.0; ``Stack.moe_expert_bias_eager``): two ``torch.split`` calls, a ``torch.cat``
# and the dtype cast, plus a multiply and an add per local expert.
EXPERT_BIAS_FIXED_OPS = 4
EXPERT_BIAS_OPS_PER_EXPERT = 2
MOE_FORWARD_TORCH_OPS: dict[str, int] = {
    "attn": 3,
    "moe_router": 4,
    "moe_preprocess": 8,
    "sync": 6,
    "dispatch": 9,
}


def host_cpu(gpu: Gpu) -> HostCpu:
    """The host CPU family: Grace on NVLink-C2C superchips (GH200, GB200, GB300), else x86."""
    return "grace" if gpu.host_link == "nvlink-c2c" else "x86"


def moe_forward_host_s(
    arch: ModelArch, stack: Stack, cpu: HostCpu, local_experts: int = 1
) -> float:
    """Host seconds to issue one MoE layer's forward segment (sync to next sync); 0 for
    dense models, stacks whose dispatcher does not sync (``Stack.moe_dispatch_sync``) and
    drop-and-pad runs (``Stack.moe_drop_and_pad``: every expert's input is its capacity, a
    host constant, so ``_maybe_dtoh_and_synchronize`` neither copies nor blocks; Megatron-
    Core core_v0.15.0 moe/token_dispatcher.py, ``if not self.drop_and_pad``).

    Each CUDA-graph scope of ``stack.cuda_graph_modules`` replaces its calls by one launch.
    A model with linear biases adds the eager expert-bias calls of its ``local_experts``
    experts on the GPU (:data:`EXPERT_BIAS_OPS_PER_EXPERT`).
    """
    if arch.num_experts == 1 or not stack.moe_dispatch_sync or stack.moe_drop_and_pad:
        return 0.0
    captured = set(stack.cuda_graph_modules)
    te_calls = sum(n for scope, n in MOE_FORWARD_TE_MODULES.items() if scope not in captured)
    ops = sum(n for scope, n in MOE_FORWARD_TORCH_OPS.items() if scope not in captured)
    ops += len(captured)  # one graph replay per captured scope
    if arch.linear_bias and stack.moe_expert_bias_eager:
        ops += EXPERT_BIAS_FIXED_OPS + EXPERT_BIAS_OPS_PER_EXPERT * local_experts
    return te_calls * TE_MODULE_S[cpu] + ops * HOST_OP_S[cpu]


# GPU idle seconds per layer pass (one layer's forward and backward for one micro-batch) of a
# dropless Megatron-Core MoE step under the flex dispatcher on x86 hosts, measured: NVIDIA-
# NeMo/Megatron-Bridge pull request #5094 (commit 7ded17dae, 2026-07-25), skills/nemo-mbridge-
# perf-moe-comm-overlap/SKILL.md and card.yaml: Qwen3-30B-A3B on 16 H100 (two DGX H100),
# BF16, sequence 4,096, TP 1 PP 1 EP 16, micro-batch 1, global batch 1,024, HybridEP, CUDA
# graphs of the router and preprocess, EP overlap off: step 24.7138 s, and in a rank-0 Nsight
# Systems trace of that case a GPU-active interval union of 22.820667 s. The step less the
# union, over 1,024 / 16 micro-batches x 48 layers = 3,072 layer passes: 0.616 ms. It holds
# all of the step's idle (an upper bound on the layers' share) and is taken only up to the
# source's 4,096 tokens per micro-batch: more GPU work per layer hides more of the host's.
FLEX_DROPLESS_IDLE_S = (24.7138 - 22.820667) / (1024 // 16 * 48)
FLEX_DROPLESS_IDLE_TOKENS = 4096


def flex_dropless_idle_s(
    arch: ModelArch, stack: Stack, cpu: HostCpu, micro_batch_tokens: float
) -> float:
    """Measured GPU idle seconds per layer pass (:data:`FLEX_DROPLESS_IDLE_S`) for a dropless
    MoE run whose flex dispatcher (DeepEP / HybridEP) syncs on the token counts once per layer
    forward, with no EP overlap (``Stack.moe_a2a_overlap`` interleaves two micro-batches'
    layers, a schedule the source did not run), on an x86 host and at most
    :data:`FLEX_DROPLESS_IDLE_TOKENS` tokens per GPU and micro-batch; else 0."""
    if arch.num_experts == 1 or stack.moe_dispatcher != "flex" or stack.moe_a2a_overlap:
        return 0.0
    if not stack.moe_dispatch_sync or stack.moe_drop_and_pad or cpu != "x86":
        return 0.0
    return FLEX_DROPLESS_IDLE_S if micro_batch_tokens <= FLEX_DROPLESS_IDLE_TOKENS else 0.0


# LLM Foundry's ``flash_attn_fn`` (``llmfoundry/models/layers/attention.py`` at 5e85bd62d)
# unpads Q, K and V with flash-attn's ``bert_padding.unpad_input`` (flash-attn 2.4.2), which
# blocks the host twice per call: ``torch.nonzero`` (its output size) and
# ``seqlens_in_batch.max().item()``. From the first block on, the GPU has drained and runs
# only what the host issues next, up to the attention kernel: for Q, ``nonzero``, the max,
# ``.item()``, the cumulative sum, its padding and the gather (6); for K and V the mask sum
# and the same six (7 each); then ``flash_attn_varlen_func`` (1). Each is taken at
# :data:`HOST_OP_S` (einops' ``rearrange`` views and the autograd ``Function`` wrappers are
# not counted, a lower bound).
FLASH_UNPAD_HOST_CALLS = 6 + 2 * 7 + 1


def flash_unpad_host_s(stack: Stack, cpu: HostCpu) -> float:
    """Host seconds per layer forward from the first blocking call of the unpadding around
    FlashAttention-2 to the kernel's launch (``Stack.flash_unpad``); 0 without it."""
    if not stack.flash_unpad or stack.attention != "flash":
        return 0.0
    return FLASH_UNPAD_HOST_CALLS * HOST_OP_S[cpu]


def host_idle_s(host_s: float, forward_s: float, comm_s: float) -> float:
    """GPU idle seconds of one layer's forward while the host issues it: what the host
    issue time exceeds of the forward's GPU work (compute, and half of the layer's exposed
    TP/CP/EP communication ``comm_s``, the forward's share)."""
    return max(0.0, host_s - (forward_s + 0.5 * comm_s))


# Seconds per model-chunk pass (one model chunk's forward and backward for one micro-batch)
# that Megatron-Core's EP overlap (``overlap_moe_expert_parallel_comm``) costs under the
# interleaved pipeline schedule (``combined_1f1b_schedule_for_interleaved_pipelining``,
# megatron/core/pipeline_parallel/combined_1f1b.py at 0d8e0714cd29 and b0cc2706ddc6) on x86
# hosts. Measured: NVIDIA-NeMo/Megatron-Bridge pull request #1760 (a6e92de5f, 2026-01-09),
# Qwen3-235B-A22B on 64 DGX B200, BF16, PP 8, VP 4, EP 8, GBS 1,024, micro-batch 1,
# all-to-all dispatcher: "Disable moe_a2a_overlap due to CPU overhead", step 17.2 s with the
# overlap, 16.0 s without. The model prices that layout at 16.18 s without the overlap and
# credits the overlap with hiding 1.87 s of EP all-to-all (benchmarks/
# moe_a2a_overlap_vpp_whatif.py), so the overlap costs the measured 1.2 s plus those 1.87 s,
# over 1,024 / 8 micro-batches x 4 model chunks per stage. Per chunk rather than per layer:
# every model chunk the combined schedule runs as phases outside the overlapped layer pairs
# (the p2p waits, the chunk's pre- and post-processing, its first layer's combine backward
# and its last layer's attention weight gradient, model_chunk_schedule_plan.py ``run``), and
# with PP 1 (one chunk of all layers per micro-batch) the two published 16 H100 A/Bs
# (Megatron-Bridge #5094 and docs/training/communication-overlap.md at 067f987df) leave no
# room for 2 ms per layer pass. Taken only where the source ran: PP > 1 with VP > 1, x86.
INTERLEAVED_OVERLAP_CHUNK_S = (17.2 - 16.0 + 1.867) / (1024 // 8 * 4)


def interleaved_overlap_chunk_s(
    arch: ModelArch, stack: Stack, cpu: HostCpu, pp: int, vpp: int
) -> float:
    """Seconds per model-chunk pass that the EP overlap (``Stack.moe_a2a_overlap``) costs an
    MoE run under the interleaved pipeline schedule (``pp`` > 1, ``vpp`` > 1) on an x86 host:
    the measured :data:`INTERLEAVED_OVERLAP_CHUNK_S`; else 0."""
    if arch.num_experts == 1 or not stack.moe_a2a_overlap or cpu != "x86":
        return 0.0
    if pp == 1 or vpp == 1:
        return 0.0
    return INTERLEAVED_OVERLAP_CHUNK_S


def interleaved_overlap_idle_s(
    arch: ModelArch, stack: Stack, cpu: HostCpu, pp: int, vpp: int
) -> float:
    """Seconds per layer pass of :func:`interleaved_overlap_chunk_s`: the chunk's cost over
    the layers of one model chunk."""
    return interleaved_overlap_chunk_s(arch, stack, cpu, pp, vpp) * pp * vpp / arch.num_layers
