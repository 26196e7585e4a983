"""Compute time of one transformer layer on one GPU: GEMMs, attention, memory-bound ops.

Each operation is timed on the GPU's roofline (:mod:`clusterforge.perf.roofline`). In FP8
runs only the weight GEMMs of the transformer layers run in FP8 (Transformer Engine and
torchao convert ``Linear`` layers); attention and the output layer stay in BF16. Flash
attention runs at its own efficiency; element-wise operations (norms, activations, residual
adds, dropout, rotary, softmax) are pure HBM traffic. All constants live in
``data/efficiency.toml`` with their sources.

The attention core and its kernels are timed in :mod:`clusterforge.perf.attention`, the
MoE expert layer's own costs in :mod:`clusterforge.perf.moe`; this module holds the weight
GEMMs, the element-wise ops, the layout copies around sequence-parallel TP collectives and
the sum of them all into :class:`LayerTimes`; the output layer with its loss is in
:mod:`clusterforge.perf.logits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clusterforge.catalog import ModelArch
from clusterforge.perf.async_tp import FusedMatmuls, fused_matmuls, hbm_work, is_micro_pipelined
from clusterforge.perf.attention import (
    attention_backward_s,
    attention_forward_s,
    context_parallel_passes,
    flash_unpad_passes,
)
from clusterforge.perf.eager_backward import census_backward
from clusterforge.perf.eager_llama import llama_census_forward
from clusterforge.perf.early_stop import early_stop_skipped_s
from clusterforge.perf.flex_permute import flex_permute_s
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.fp8_tp import recomputed_cast_s
from clusterforge.perf.memory import layer_matmul_shapes
from clusterforge.perf.moe import (
    expert_gemms_s,
    expert_output_bias_s,
    fp8_padding_s,
    glu_clamp_s,
    permutation_bytes_per_token,
    recompute_modules_s,
)
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.quantize_passes import quantize_passes_s
from clusterforge.perf.remat import named_recompute_s, saves_named_tensors
from clusterforge.perf.roofline import (
    BF16_BYTES,
    GpuPerf,
    gemm_time_s,
    load_constants,
    memory_time_s,
)
from clusterforge.perf.rotary import unfused_rotary_s
from clusterforge.perf.stack import Stack

__all__ = [
    "LayerTimes",
    "Stack",
    "layer_times",
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
    # the matmuls next to micro-pipelined TP collectives (none outside PyTorch's async TP)
    fused_tp: FusedMatmuls = field(default_factory=FusedMatmuls)

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.recompute_s


def _weight_gemms_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) time of the weight GEMMs of one layer (Megatron column/row TP
    split). A dense GEMM's backward (data and weight gradients) is taken as twice its
    forward; an MoE layer's expert GEMMs are timed at their own backward shapes
    (:func:`~clusterforge.perf.moe.expert_gemms_s`)."""
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    tokens = tokens_per_gpu(plan)
    q, kv = q_dim(arch), kv_dim(arch)
    dense = gemm_time_s(tokens, (q + 2 * kv) / t, h, perf) + gemm_time_s(tokens, h, q / t, perf)
    if arch.num_experts > 1:
        dense += gemm_time_s(tokens, arch.num_experts, h, perf)  # the router
        experts_fwd, experts_bwd = expert_gemms_s(arch, plan, perf, stack)
        return dense + experts_fwd, 2.0 * dense + experts_bwd
    up_cols = (2 if arch.gated_mlp else 1) * f / t
    dense += gemm_time_s(tokens, up_cols, h, perf) + gemm_time_s(tokens, h, f / t, perf)
    return dense, 2.0 * dense


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
    activation one kernel either way. A stack with ``eager_rotary`` fuses the norms and the
    activation but rotates Q and K in eager BF16 ops (``EAGER_BF16_ROTARY_BYTES``).
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
    permute = permutation_bytes_per_token(arch, plan, stack)
    rope = EAGER_ROTARY_BYTES if eager else (EAGER_BF16_ROTARY_BYTES if stack.eager_rotary else 4)
    rotary = rope * (q_dim(arch) + kv_dim(arch)) if arch.position_embedding == "rope" else 0
    split = activation + rotary
    per_token = (replicated + permute) / (
        plan.layout.tp if plan.sequence_parallel else 1
    ) + split / plan.layout.tp
    return per_token * tokens_per_gpu(plan)


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
    BF16."""
    return 1 if plan.precision == "fp8" and stack.tp_fp8_all_gather else BF16_BYTES


def tp_grad_gather_bytes(plan: ParallelPlan, stack: Stack) -> int:
    """Bytes per element of the backward's all-gathers of output gradients: FP8 where the
    stack casts the gradient before gathering it, else BF16. torchao's
    ``Float8RowwiseParallel._prepare_output_fn`` applies ``_NoopFwToFloat8BwDynamic`` after
    the output's redistribution, so in the backward the gradient is cast to float8 first and
    the redistribution's all-gather then moves the FP8 data (``torchao/float8/
    float8_tensor_parallel.py``)."""
    return tp_input_gather_bytes(plan, stack)


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
    counts the calls). Zero without sequence-parallel TP and for stacks without the copies;
    under PyTorch's async TP the fused collectives do without them
    (:func:`~clusterforge.perf.async_tp.hbm_work`).
    """
    if plan.layout.tp == 1 or not plan.sequence_parallel:
        return 0.0, 0.0
    if not stack.tp_layout_copies:
        return 0.0, 0.0
    elements = plan.micro_batch * plan.seq_length / plan.layout.cp * arch.hidden_size
    pairs = 1 if arch.parallel_block else 2
    gathered_input = tp_input_gather_bytes(plan, stack) * elements
    activation = BF16_BYTES * elements
    forward = pairs * (gathered_input + activation)
    backward = pairs * (tp_grad_gather_bytes(plan, stack) * elements + activation)
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
# The same rotation in BF16 halves (NeMo AutoModel's ``_apply_rotary_emb``,
# nemo_automodel/components/models/gpt_oss/layers.py at 8d9bfb90e, 2025-10-08, which its
# Qwen3 MoE imports): ``x1 * cos``, ``x2 * sin``, ``x2 * cos``, ``x1 * sin`` (2 B per
# element each: half the tensor read, half written), ``o1 = .. - ..``, ``o2 = .. + ..``
# (3 B each) and ``torch.cat`` (2 + 2) = 18 B per Q/K element in 7 kernels against 1 fused.
EAGER_BF16_ROTARY_BYTES = 18
EAGER_BF16_ROTARY_EXTRA_KERNELS = 6 * 2  # per tensor, Q and K
# Extra kernels in eager per op chain: 6 more per RMSNorm (7 ops for one), 1 more for
# SwiGLU (2 for 1), 2 more per rotary tensor, Q and K (3 for 1).
EAGER_EXTRA_KERNELS = {"rmsnorm": 6, "swiglu": 1, "rotary": 2 * 2}


def _elementwise_kernels(arch: ModelArch, stack: Stack) -> int:
    """Element-wise kernel launches of one layer's forward (fused, plus eager's extras)."""
    if stack.fused_elementwise:
        rotary = stack.eager_rotary and arch.position_embedding == "rope"
        return ELEMENTWISE_KERNELS_PER_LAYER + (EAGER_BF16_ROTARY_EXTRA_KERNELS if rotary else 0)
    num_norms = 1 if arch.parallel_block else 2
    extra = EAGER_EXTRA_KERNELS["rmsnorm"] * num_norms if arch.normalization == "rmsnorm" else 0
    extra += EAGER_EXTRA_KERNELS["swiglu"] if arch.gated_mlp else 0
    extra += EAGER_EXTRA_KERNELS["rotary"] if arch.position_embedding == "rope" else 0
    return ELEMENTWISE_KERNELS_PER_LAYER + extra


ELEMENTWISE_BACKWARD_RATIO = 2.0  # read saved input + incoming grad, write grad


def _elementwise_forward_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> float:
    """Seconds of one layer's forward element-wise ops: as the eager op census counts them
    (:func:`~clusterforge.perf.eager_llama.llama_census_forward`) where it covers the layer."""
    counted = llama_census_forward(arch, plan, stack)
    if counted is None:
        counted = _elementwise_bytes(arch, plan, stack), _elementwise_kernels(arch, stack)
    return memory_time_s(counted[0], perf, num_kernels=counted[1])


def _elementwise_backward_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> float:
    """Seconds of one layer's backward element-wise ops: as the eager op census counts them
    (:func:`~clusterforge.perf.eager_backward.census_backward`) where it covers the layer,
    else ``ELEMENTWISE_BACKWARD_RATIO`` times the forward's."""
    counted = census_backward(arch, plan, stack)
    if counted is not None:
        return memory_time_s(counted[0], perf, num_kernels=counted[1])
    forward = _elementwise_bytes(arch, plan, stack)
    kernels = _elementwise_kernels(arch, stack)
    return ELEMENTWISE_BACKWARD_RATIO * memory_time_s(forward, perf, num_kernels=kernels)


def _expert_passes_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of the memory-bound passes over an MoE layer's routed
    copies outside its GEMMs: the per-expert output bias, gpt-oss's eager activation clamp,
    Transformer Engine's FP8 row padding, the flex dispatcher's permutations (0 for a dense
    layer)."""
    bias_fwd, bias_bwd = expert_output_bias_s(arch, plan, perf, stack)
    clamp_fwd, clamp_bwd = glu_clamp_s(arch, plan, perf, stack)
    padding = fp8_padding_s(arch, plan, perf, stack)
    permute_fwd, permute_bwd = flex_permute_s(arch, plan, perf, stack)
    forward = bias_fwd + clamp_fwd + padding + permute_fwd
    return forward, bias_bwd + clamp_bwd + padding + permute_bwd


def _attention_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one layer's attention: the kernel, plus the
    element-wise passes between context-parallel steps and the unpadding around a varlen
    FlashAttention-2 call."""
    forward = attention_forward_s(arch, plan, perf, stack)
    backward = attention_backward_s(arch, plan, perf, stack)
    for (fwd, fwd_kernels), (bwd, bwd_kernels) in (
        context_parallel_passes(arch, plan, stack),
        flash_unpad_passes(arch, plan, stack),
    ):
        forward += memory_time_s(fwd, perf, num_kernels=fwd_kernels) if fwd else 0.0
        backward += memory_time_s(bwd, perf, num_kernels=bwd_kernels) if bwd else 0.0
    return forward, backward


def layer_times(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> LayerTimes:
    """Forward, backward and recomputation time of one layer for one micro-batch.

    FP8, MXFP8 and NVFP4 runs add their quantization passes
    (:func:`~clusterforge.perf.quantize_passes.quantize_passes_s`);
    Context parallelism adds its element-wise passes between the attention steps to the
    attention (PyTorch's FP32 merges, Transformer Engine's rescaling and gradient sums:
    :func:`~clusterforge.perf.attention.context_parallel_passes`), and so does the unpadding
    around a varlen FlashAttention-2 call (:func:`~clusterforge.perf.attention.flash_unpad_passes`).
    """
    gemm, gemm_bwd = _weight_gemms_s(arch, plan, perf, stack)
    attention_fwd, attention_bwd = _attention_s(arch, plan, perf, stack)
    elementwise = _elementwise_forward_s(arch, plan, perf, stack)
    cast_fwd, cast_bwd = quantize_passes_s(arch, plan, perf, stack)
    experts_fwd, experts_bwd = _expert_passes_s(arch, plan, perf, stack)
    rotary_fwd, rotary_bwd = unfused_rotary_s(arch, plan, perf, stack)
    forward = gemm + attention_fwd + elementwise + experts_fwd + rotary_fwd
    backward = gemm_bwd + attention_bwd + _elementwise_backward_s(arch, plan, perf, stack)
    backward += experts_bwd + rotary_bwd
    fused_tp = fused_matmuls(arch, plan, perf, stack)
    copy_fwd, copy_bwd = tp_layout_copy_bytes(arch, plan, stack)
    if is_micro_pipelined(plan, stack) and not arch.parallel_block:
        work = hbm_work(
            fused_tp,
            plan,
            arch,
            stack,
            input_bytes=tp_input_gather_bytes(plan, stack),
            grad_bytes=tp_grad_gather_bytes(plan, stack),
            regathers=tp_backward_regathers(plan, stack),
        )
        forward += memory_time_s(work.forward_bytes, perf, num_kernels=work.forward_kernels)
        backward += memory_time_s(work.backward_bytes, perf, num_kernels=work.backward_kernels)
    elif copy_fwd > 0:
        pairs = 1 if arch.parallel_block else 2
        regathers = tp_backward_regathers(plan, stack)
        forward += memory_time_s(copy_fwd, perf, num_kernels=2 * pairs)
        backward += memory_time_s(copy_bwd, perf, num_kernels=(3 if regathers else 2) * pairs)
    if cast_fwd > 0:
        forward += cast_fwd
        backward += cast_bwd
    recompute = 0.0
    if plan.recompute == "full":
        recompute = forward - early_stop_skipped_s(arch, plan, perf, stack)
    elif plan.recompute == "selective" and stack.selective_recompute == "every_other_matmul":
        tokens = tokens_per_gpu(plan)
        shapes = layer_matmul_shapes(arch, plan)[1::2]  # the second, fourth, ... matmul
        recompute = sum(gemm_time_s(tokens, n, k, perf) for n, k in shapes) + elementwise
        recompute += recomputed_cast_s(arch, plan, perf, stack)
    elif saves_named_tensors(plan, stack):
        recompute = named_recompute_s(arch, plan, perf, stack, attention_fwd, elementwise)
    elif plan.recompute == "selective" and stack.attention == "unfused":
        recompute = attention_fwd
    recompute += recompute_modules_s(arch, plan, perf, stack)
    return LayerTimes(
        forward, backward, recompute, gemm, attention_fwd, attention_bwd, fused_tp=fused_tp
    )
