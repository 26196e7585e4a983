"""What FP8 training costs besides its faster GEMMs: casts, transposes, scaling, weight copies.

FP8 GEMMs need per-tensor scaled FP8 operands (Micikevicius et al. 2022, "FP8 Formats for
Deep Learning", arXiv 2209.05433, §3-4), and on Hopper the FP8 tensor-core GEMM takes only
the "TN" layout, so every operand that a backward GEMM consumes transposed is also written
transposed (Transformer Engine ``cast_transpose``; NVIDIA Transformer Engine user guide,
"Using FP8 with Transformer Engine"). Per layer and micro-batch on one GPU this adds
memory-bound passes over the GEMM operands:

* forward, each GEMM input (QKV, projection, FC1, FC2): read BF16 (2 B), write FP8 and its
  transpose (1 + 1 B) = 4 B per element; when the stack emits FP8 straight from the norm
  or the activation (Transformer Engine ``LayerNormLinear``/``LayerNormMLP``) only the
  transpose pass remains (read 1 B, write 1 B);
* backward, each GEMM output gradient: cast and transpose, 4 B per element;
* dynamic (current) scaling first reads each tensor once more to find its amax (2 B per
  element; torchao ``Float8Linear`` tensor-wise recipe), delayed scaling takes the scale
  from the amax history of earlier steps; Transformer Engine then all-reduces the amaxes
  and updates the scales after every model chunk's forward and backward
  (:mod:`clusterforge.perf.fp8_amax`);
* weights: cast (and transpose) to FP8: once per step when the stack caches the FP8 copy
  across micro-batches (Transformer Engine ``is_first_microbatch``) or stores FP8
  parameters (NeMo ``fp8_params``: nothing left), else in every micro-batch's forward and
  again in its backward (torchao with ``force_recompute_fp8_weight_in_bwd``).

Element counts follow the Megatron column/row split: inputs of QKV and FC1 are the
sequence-parallel shard ``h / t``, the projection input ``h / t``, the FC2 input ``f / t``.

torchao's float8 training (``Stack.fp8_torchao``; pytorch/ao at eab345c, 20 Dec 2024, the
version of torchtitan's ``benchmarks/llama3_h100_202412_torchtitan.md``) works one
``Float8Linear`` at a time and is costed by :func:`torchao_layer_bytes` and
:func:`torchao_weight_bytes_per_micro` instead; see :func:`torchao_layer_bytes`.

Blackwell: compute capability 10.x (B200, GB200: sm_100; B300, GB300: sm_103) runs FP8
tensor-core GEMMs in every operand layout, so Transformer Engine's per-tensor (delayed or
current) scaling writes no transposed copy there. NVIDIA/TransformerEngine v2.9 (the NeMo
25.11 container's): ``nvte_is_non_tn_fp8_gemm_supported`` is true for compute capability
10.0-11.x and >= 13.0 (``transformer_engine/common/transformer_engine.cpp``), and
``Float8Quantizer`` / ``Float8CurrentScalingQuantizer::create_tensor`` allocate the
transpose only when ``columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported()``, reusing
the row-wise data otherwise (``transformer_engine/pytorch/csrc/quantizer.cpp``), read
2026-12-02. Earlier tags have the same rule: v2.1 and v2.2 test compute capability
major >= 10 (``non_tn_fp8_gemm_supported``, ``transformer_engine/pytorch/csrc/extensions/
util.cpp``) before ``quantizer.cpp`` writes a transpose, v2.3 onwards call
``nvte_is_non_tn_fp8_gemm_supported``. There a Transformer Engine stack's cast is read 2 B +
write 1 B, and the norm and activation outputs it emits in FP8 need no second pass. The rule
is Transformer Engine's (the stacks with ``fp8_fused_norm_cast``, i.e. TE's
``LayerNormLinear`` / ``LayerNormMLP``); other stacks keep their own casts.
"""

from __future__ import annotations

from functools import cache

from clusterforge.catalog import ModelArch, gpu_architecture, load_catalog
from clusterforge.perf.blockscale import is_block_scaled, weight_cast
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.fp8_tp import gathered_grad_copy_bytes
from clusterforge.perf.memory import deferred_fsdp_reduce, layer_params_per_gpu
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = [
    "FP8_KERNELS_PER_LAYER",
    "expert_widths",
    "fp8_layer_bytes",
    "fp8_weight_cast_bytes_per_micro",
    "fp8_weight_cast_s",
    "quantized_gather_bytes_per_micro",
    "te_writes_fp8_transposes",
    "torchao_kernels",
    "torchao_layer_bytes",
    "torchao_weight_bytes_per_micro",
]

CAST_TRANSPOSE_BYTES = 4.0  # read 2 B BF16, write 1 B FP8 + 1 B FP8 transposed
TRANSPOSE_BYTES = 2.0  # read 1 B FP8, write 1 B transposed
CAST_BYTES = 3.0  # read 2 B BF16, write 1 B FP8 (no transposed copy)
# Compute capabilities (major, minor) whose FP8 GEMMs take non-TN layouts, per Transformer
# Engine's ``nvte_is_non_tn_fp8_gemm_supported``: [10.0, 12.0) and >= 13.0.
NON_TN_FP8_RANGES = (((10, 0), (12, 0)), ((13, 0), (99, 99)))
AMAX_READ_BYTES = 2.0  # dynamic scaling: one more BF16 read to find the amax
# Cast/transpose kernels per layer: 4 forward inputs + 4 backward gradients.
FP8_KERNELS_PER_LAYER = 8


def expert_widths(arch: ModelArch, plan: ParallelPlan) -> tuple[float, float, float]:
    """Per-token elements on one GPU of the GEMM inputs (norm-fed, other) and output
    gradients that a Transformer Engine layer quantizes, MoE routing included."""
    norm_fed, others, grads, _ = _widths(arch, plan)
    if arch.num_experts > 1:
        norm_fed, others = _moe_expert_input(arch, plan, norm_fed, others)
        grads = _moe_expert_grads(arch, plan, grads)
    return norm_fed, others, grads


def _moe_expert_input(
    arch: ModelArch, plan: ParallelPlan, norm_fed: float, others: float
) -> tuple[float, float]:
    """(norm-fed, other) input widths of a Transformer Engine MoE layer's FP8 casts.

    Megatron-Core's MoE layer puts a plain norm before the experts
    (``pre_mlp_layernorm=backend.layer_norm() if num_experts``, megatron/core/models/gpt/
    gpt_layer_specs.py, NVIDIA/Megatron-LM core_v0.15.0): its BF16 output feeds the router
    and is permuted, and the grouped linear quantises each of the ``top_k`` routed copies
    itself. The FC1 input thus leaves the norm-fused casts for ``top_k x h`` plain ones (the
    copies are gathered whole over TP, not sharded).
    """
    shard = plan.layout.tp if plan.sequence_parallel else 1
    # A parallel block's one norm output still feeds the fused QKV cast.
    fc1_input = 0.0 if arch.parallel_block else arch.hidden_size / shard
    return norm_fed - fc1_input, others + arch.hidden_size * arch.top_k


def _moe_expert_grads(arch: ModelArch, plan: ParallelPlan, grads: float) -> float:
    """Gradient width per token of an MoE layer's FP8 casts, the expert FC2's whole copies.

    The all-to-all dispatcher gathers the routed copies over the (expert) TP group after the
    dispatch and reduce-scatters them after the experts (``token_permutation`` /
    ``token_unpermutation`` of ``MoEAlltoAllTokenDispatcher``, megatron/core/transformer/moe/
    token_dispatcher.py, NVIDIA/Megatron-LM core_v0.10.0); the reduce-scatter's backward is an
    all-gather (``_ReduceScatterToSequenceParallelRegion``, megatron/core/tensor_parallel/
    mappings.py), so the gradient entering the expert FC2 holds ``top_k x h`` per token, not
    the sequence-parallel shard, and Transformer Engine casts (and transposes) it whole.
    """
    shard = plan.layout.tp if plan.sequence_parallel else 1
    return grads + arch.hidden_size * arch.top_k * (1.0 - 1.0 / shard)


def _widths(arch: ModelArch, plan: ParallelPlan) -> tuple[float, float, float, float]:
    """Per-token elements on one GPU: (norm-fed inputs, other inputs, gradients, fused share).

    Norm-fed inputs are the QKV and FC1 inputs (a norm output each, shard ``h / t`` with
    sequence parallelism); the other inputs are the projection's ``h / t`` and FC2's ``f / t``
    (the activation's output); gradients are the four GEMM outputs' gradients.
    """
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    experts = arch.top_k if arch.num_experts > 1 else 1
    shard = t if plan.sequence_parallel else 1
    q, kv = q_dim(arch), kv_dim(arch)
    up_cols = (2 if arch.gated_mlp else 1) * f
    norm_fed = (1 if arch.parallel_block else 2) * h / shard
    others = q / t + f / t * experts
    grads = (q + 2 * kv) / t + h / shard + (up_cols / t + h / shard) * experts
    return norm_fed, others, grads, f / t * experts


@cache
def _non_tn_fp8_gemms(gpu_id: str) -> bool:
    """True when ``gpu_id``'s FP8 GEMMs take any operand layout (CUDA ISA sm_100 and later,
    by :data:`NON_TN_FP8_RANGES`); False for Hopper, Ada, AMD and GPUs that no catalog
    architecture lists (their layout rule is unknown, so the transposes are kept)."""
    catalog = load_catalog()
    if gpu_id not in catalog.gpus or not any(gpu_id in a.gpus for a in catalog.architectures):
        return False
    isa = gpu_architecture(catalog, gpu_id).isa
    if not isa.startswith("sm_") or not isa[3:].isdigit():
        return False
    number = int(isa[3:])
    capability = (number // 10, number % 10)
    return any(low <= capability < high for low, high in NON_TN_FP8_RANGES)


def te_writes_fp8_transposes(stack: Stack, gpu_id: str | None) -> bool:
    """Whether the stack's FP8 casts also write a transposed copy on ``gpu_id``.

    Transformer Engine stacks (``fp8_fused_norm_cast``) skip it where the GPU's FP8 GEMMs take
    non-TN layouts (Blackwell); other stacks, and an unnamed GPU, keep it.
    """
    if gpu_id is None or not stack.fp8_fused_norm_cast:
        return True
    return not _non_tn_fp8_gemms(gpu_id)


def fp8_layer_bytes(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, gpu_id: str | None = None
) -> tuple[float, float]:
    """HBM bytes of FP8 conversions of one layer and micro-batch: (forward, backward).

    ``gpu_id`` selects the layout rule of :func:`te_writes_fp8_transposes` (None: the
    transposed copies are written, as on Hopper).
    """
    if plan.precision != "fp8":
        return 0.0, 0.0
    if stack.fp8_torchao:
        return torchao_layer_bytes(arch, plan, stack)
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    norm_fed, others, grads, activation_out = _widths(arch, plan)
    if arch.num_experts > 1:
        norm_fed, others = _moe_expert_input(arch, plan, norm_fed, others)
        grads = _moe_expert_grads(arch, plan, grads)
    transposes = te_writes_fp8_transposes(stack, gpu_id)
    cast = CAST_TRANSPOSE_BYTES if transposes else CAST_BYTES
    if stack.fp8_fused_norm_cast:
        # The norm and the activation emit FP8; on GPUs that need TN operands their outputs
        # still need the transpose pass, elsewhere nothing is left.
        fused = norm_fed + activation_out
        fused_bytes = TRANSPOSE_BYTES if transposes else 0.0
        forward = fused * fused_bytes + (others - activation_out) * cast
    else:
        forward = (norm_fed + others) * cast
    backward = grads * cast
    if stack.fp8_scaling == "dynamic":
        forward += (norm_fed + others) * AMAX_READ_BYTES
        backward += grads * AMAX_READ_BYTES
    return forward * tokens, backward * tokens


def fp8_weight_cast_bytes_per_micro(
    params: float,
    plan: ParallelPlan,
    stack: Stack,
    num_micro: int,
    gpu_id: str | None = None,
) -> float:
    """HBM bytes per micro-batch to cast the ``params`` weights of a GPU to FP8.

    Cached copies are cast once per step (spread over the ``num_micro`` micro-batches);
    FP8-stored parameters need no cast; dynamic-scaling stacks cast in every forward and
    backward (amax read + cast-transpose). The transposed copy follows
    :func:`te_writes_fp8_transposes`.
    """
    if plan.precision != "fp8" or stack.fp8_weight_bytes <= 1.0:
        return 0.0
    if stack.fp8_torchao and stack.fp8_all_gather:
        return torchao_weight_bytes_per_micro(params, plan, stack, num_micro)
    if stack.fp8_all_gather and plan.zero_stage == 3:
        return quantized_gather_bytes_per_micro(params, plan, stack, gpu_id)
    cast = CAST_TRANSPOSE_BYTES if te_writes_fp8_transposes(stack, gpu_id) else CAST_BYTES
    if stack.fp8_scaling == "dynamic":
        return 2 * params * (AMAX_READ_BYTES + cast)
    return params * cast / max(1, num_micro)


def quantized_gather_bytes_per_micro(
    params: float, plan: ParallelPlan, stack: Stack, gpu_id: str | None = None
) -> float:
    """HBM bytes per micro-batch of FP8 weights quantized before their FSDP all-gather.

    XLA's collective quantizer (``xla/service/collective_quantizer.h``) moves the
    quantization that Flax's ``Fp8DotGeneralOp`` applies to each gathered weight in front of
    the all-gather, so every gather quantizes the GPU's shard (read the ``Stack.weight_bytes``
    parameter, write FP8; forward and, when the weights are resharded after it, backward)
    and no full FP8 copy is cast or kept. Where FP8 GEMMs take only TN operands (Hopper,
    :func:`te_writes_fp8_transposes`), the gathered FP8 weight is copied transposed once for
    the input-gradient GEMM (2 B per gathered element).
    """
    shard = plan.shard_size or plan.layout.dp * plan.layout.cp
    gathers = 2 if stack.fsdp_reshard_after_forward else 1
    cast = gathers * params / max(1, shard) * (stack.weight_bytes + 1.0)
    layout = params * TRANSPOSE_BYTES if te_writes_fp8_transposes(stack, gpu_id) else 0.0
    return cast + layout


def fp8_weight_cast_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per micro-batch to cast the weights of a stage's ``layers`` layers to FP8
    (MXFP8 / NVFP4: both orientations, cached for the step like Transformer Engine's FP8
    copy, :func:`~clusterforge.perf.blockscale.weight_cast`)."""
    params = layers * layer_params_per_gpu(arch, plan)
    num_micro = num_micro_batches(plan)
    if is_block_scaled(plan.precision):
        per_param, _ = weight_cast(plan.precision)
        return memory_time_s(params * per_param / max(1, num_micro), perf, num_kernels=layers)
    num_bytes = fp8_weight_cast_bytes_per_micro(params, plan, stack, num_micro, perf.gpu_id)
    return memory_time_s(num_bytes, perf, num_kernels=layers) if num_bytes else 0.0


# torchao float8, tensor-wise dynamic scaling (pytorch/ao eab345c, ``torchao/float8``), bytes
# per element of each pass, [D] by counting the loads and stores of each step:
# * ``hp_tensor_to_float8_dynamic`` (``float8_scaling_utils.py``) first reduces the tensor to
#   its amax (``tensor_to_amax``: ``torch.max(torch.abs(x))``), then casts with that scale
#   (``_ToFloat8ConstrFunc``: ``x.to(float32) * scale``, then ``to_fp8_saturated``: clamp,
#   ``.to(float8)``). Under ``torch.compile`` each becomes one kernel (amax: read BF16, 2 B;
#   cast: read BF16, write FP8, 3 B), two passes because the cast needs the finished amax.
#   Eager runs every op on its own: abs (2 + 2) and max (2); to FP32 (2 + 4), multiply
#   (4 + 4), clamp (4 + 4), to FP8 (4 + 1): 6 + 27 B;
# * ``_scaled_mm`` wants its first operand row-major and its second column-major;
#   ``preprocess_addmm`` (``float8_ops.py``) copies any other layout (``.contiguous()``:
#   read FP8, write FP8, 2 B): in the backward the saved FP8 input for the weight gradient
#   and the FP8 output gradient transposed for it, and the gathered FP8 weight for the
#   input gradient (the forward consumes ``weight.t()``, already column-major);
# * under ``torch.compile`` Inductor writes the output gradient's transposed copy from the
#   cast kernel that already holds it (one BF16 read, two FP8 writes: 4 B), and AOTAutograd's
#   common-subexpression pass (``torch._functorch.config.cse``, on by default) merges the
#   identical amax/cast of one input feeding several Linears (torchtitan's Llama has separate
#   ``wq``, ``wk``, ``wv`` and ``w1``, ``w3``); eager casts that input once per Linear.
TORCHAO_AMAX_CAST_BYTES = {"compiled": 5.0, "eager": 6.0 + 27.0}
TORCHAO_LAYOUT_COPY_BYTES = 2.0  # read FP8 1 B, write its transpose 1 B
# Output gradient: amax, cast, transposed copy (compiled: the cast writes both layouts).
TORCHAO_GRAD_BYTES = {"compiled": 2.0 + 4.0, "eager": 6.0 + 27.0 + 2.0}
# Linears reading the attention input in torchtitan's Llama ``Attention``: wq, wk, wv.
TORCHAO_ATTENTION_INPUT_LINEARS = 3


def torchao_layer_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, float]:
    """HBM bytes of torchao's float8 casts of one layer and micro-batch: (forward, backward).

    Forward: each Linear's input gets its amax and its cast (5 B per element compiled, 33 B
    eager; on the sequence-parallel shard when TP gathers in FP8). Backward: each output
    gradient gets its amax, cast and transposed copy (6 B compiled, 35 B eager) and each
    saved FP8 input its
    column-major copy for the weight gradient (2 B per gathered element). Eager casts a
    norm output once per Linear that reads it (3 for attention, 2 for a gated MLP's w1, w3);
    ``torch.compile`` (``Stack.fused_elementwise``) merges them into one.
    """
    t, h, f = plan.layout.tp, arch.hidden_size, ffn_size(arch)
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    _, others, grads, _ = _widths(arch, plan)
    experts = arch.top_k if arch.num_experts > 1 else 1
    shard = t if plan.sequence_parallel else 1
    compiled = stack.fused_elementwise
    mode = "compiled" if compiled else "eager"
    readers, _ = _torchao_linears(arch)
    casts = [1 if compiled else n for n in readers]
    forward = (sum(casts) * h / shard + others) * TORCHAO_AMAX_CAST_BYTES[mode]
    saved_inputs = sum(casts) * h + q_dim(arch) / t + f / t * experts
    backward = saved_inputs * TORCHAO_LAYOUT_COPY_BYTES + grads * TORCHAO_GRAD_BYTES[mode]
    backward += gathered_grad_copy_bytes(arch, plan, stack)  # float8 TP's gathered gradients
    return forward * tokens, backward * tokens


def _torchao_linears(arch: ModelArch) -> tuple[list[int], int]:
    """(Linears reading each norm output, Linears per layer) of torchtitan's Llama block."""
    experts = arch.top_k if arch.num_experts > 1 else 1
    up_linears = (2 if arch.gated_mlp else 1) * experts
    if arch.parallel_block:
        readers = [TORCHAO_ATTENTION_INPUT_LINEARS + up_linears]
    else:
        readers = [TORCHAO_ATTENTION_INPUT_LINEARS, up_linears]
    return readers, sum(readers) + 1 + experts  # + wo and the down projection(s)


# Kernels per cast: compiled, amax and cast (the gradient's cast also writes its transpose);
# eager, abs, max, to FP32, multiply, clamp, to FP8 (see the byte counts above).
TORCHAO_CAST_KERNELS = {"compiled": 2, "eager": 6}


def torchao_kernels(arch: ModelArch, stack: Stack) -> tuple[int, int]:
    """Kernel launches of torchao's float8 casts in one layer: (forward, backward).

    Forward: one cast per Linear input (compiled: one per distinct input). Backward: each
    Linear's output-gradient cast (eager adds its transposed copy) and the column-major copy
    of its saved FP8 input (the weight copies are counted with the weights).
    """
    readers, linears = _torchao_linears(arch)
    mode = "compiled" if stack.fused_elementwise else "eager"
    per_cast = TORCHAO_CAST_KERNELS[mode]
    inputs = linears - sum(readers) + (len(readers) if mode == "compiled" else sum(readers))
    grad_kernels = per_cast + (0 if mode == "compiled" else 1)
    return inputs * per_cast, linears * grad_kernels + inputs


def torchao_weight_bytes_per_micro(
    params: float, plan: ParallelPlan, stack: Stack, num_micro: int
) -> float:
    """HBM bytes per micro-batch of torchao's float8 weights under FSDP2 float8 all-gather.

    With ``enable_fsdp_float8_all_gather`` the weight is cast on its shard before each
    all-gather (``WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather``, ``fsdp_utils.py``:
    read the ``Stack.weight_bytes`` shard, write FP8), with the scale that
    ``precompute_float8_dynamic_scale_for_fsdp`` found once per step (one amax read of every
    shard, as recommended in torchtitan ``docs/float8.md`` at 9dec370, Dec 2024);
    the gathered FP8 weight arrives as a ``Float8Tensor`` that the Linear uses as is, and the
    input-gradient GEMM copies it column-major (2 B per gathered element). FSDP gathers twice
    per micro-batch when it reshards after the forward, else once. Under pipeline
    parallelism it gathers once per step: torchtitan's ``apply_fsdp`` turns
    ``reshard_after_forward`` off there ("to avoid per-microbatch all-gathers", 9dec370) and
    the pipelining schedule keeps the stage unsharded through every micro-batch's backward
    (:func:`~clusterforge.perf.memory.deferred_fsdp_reduce`).
    """
    shard = plan.shard_size or plan.layout.dp * plan.layout.cp
    gathers = 2.0 if stack.fsdp_reshard_after_forward else 1.0
    if deferred_fsdp_reduce(plan, stack):
        gathers = 1.0 / max(1, num_micro)
    shard_params = params / max(1, shard)
    cast = gathers * shard_params * (stack.weight_bytes + 1.0)
    amax = shard_params * stack.weight_bytes / max(1, num_micro)
    return params * TORCHAO_LAYOUT_COPY_BYTES + cast + amax
