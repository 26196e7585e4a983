"""Memory per GPU: weights, gradients, optimizer states, activations, runtime reserve.

Model states follow Rajbhandari et al. 2020 (ZeRO, §3 and Fig. 1): mixed-precision Adam keeps
2 bytes of BF16/FP16 weights, gradients (4 bytes here: Megatron accumulates them in FP32
``main_grad``) and 12 bytes of FP32 master weights, momentum and variance per parameter.
ZeRO-1 shards the 12 optimizer bytes over DP, ZeRO-2 also the gradients, ZeRO-3 (FSDP full
shard) also the weights.

Activations per layer follow Korthikanti et al. 2022 (§4, eqs. 1-5), generalised to GQA,
gated MLPs and MoE term by term; the attention score terms ``5 a s^2 b`` disappear with
flash attention or selective recomputation; full recomputation keeps only each layer's input
``2 s b h``. The first pipeline stage holds the most micro-batches in flight: ``p`` for 1F1B,
times ``1 + (p - 1)/(p v)`` for the interleaved schedule (Korthikanti et al. 2022 §4.2.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.catalog import ModelArch
from clusterforge.perf.blockscale import is_block_scaled, param_weight_bytes, saved_input_bytes
from clusterforge.perf.flops import ffn_size, kv_dim, q_dim
from clusterforge.perf.fsdp2_memory import fsdp2_root_bytes
from clusterforge.perf.liger_memory import liger_layer_grad_bytes, liger_loss_bytes
from clusterforge.perf.offload_modules import offloaded_module_bytes
from clusterforge.perf.optimizer_state import optimizer_state_bytes
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches, recompute_fraction
from clusterforge.perf.remat import named_saved_bytes, saves_named_tensors
from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.stack import Stack

__all__ = [
    "RUNTIME_RESERVE_GIB",
    "MemoryBreakdown",
    "activation_bytes_per_layer",
    "deferred_fsdp_reduce",
    "layer_matmul_shapes",
    "layer_params_per_gpu",
    "memory_per_gpu",
    "resident_layers",
    "stage_expert_params",
    "stage_params",
]

GIB = 1024**3
# [U] Reserved memory the model does not price (tensors left out, cached free blocks), net of
# the FSDP2 blocks it prices (:mod:`.fsdp2_memory`): ~3-5 GiB above the tensors on 80 GB GPUs,
# 4 GiB taken. CUDA context and NCCL buffers lie outside ``max_memory_reserved`` (docs).
RUNTIME_RESERVE_GIB = 4.0


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak memory on the most loaded GPU (the first pipeline stage), GiB."""

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    reserve_gib: float

    @property
    def total_gib(self) -> float:
        return (
            self.weights_gib
            + self.gradients_gib
            + self.optimizer_gib
            + self.activations_gib
            + self.reserve_gib
        )


def _layer_params(arch: ModelArch) -> tuple[float, float]:
    """(dense, expert) parameters of one layer."""
    h, q = arch.hidden_size, q_dim(arch)
    dense = h * (q + 2 * kv_dim(arch)) + q * h + 2 * h
    mlp = (3 if arch.gated_mlp else 2) * h * ffn_size(arch)
    if arch.num_experts > 1:
        return dense + h * arch.num_experts, mlp * arch.num_experts
    return dense + mlp, 0.0


def layer_matmul_shapes(arch: ModelArch, plan: ParallelPlan) -> list[tuple[float, float]]:
    """The weight matmuls of a dense layer on one GPU in the order a PyTorch Llama block
    runs them (Q, K, V, output; gate, up, down, or up, down), as (output columns, inner
    dimension) per token. Column-parallel outputs are split over TP, row-parallel ones are
    whole (partial sums before the reduction). A MoE layer's expert matmuls are grouped
    GEMMs, not ``aten.mm``: only its attention matmuls are listed."""
    t, h, q, kv = plan.layout.tp, arch.hidden_size, q_dim(arch), kv_dim(arch)
    f = ffn_size(arch)
    shapes = [(q / t, h), (kv / t, h), (kv / t, h), (h, q / t)]
    if arch.num_experts == 1:
        ups = [(f / t, h)] * (2 if arch.gated_mlp else 1)
        shapes += [*ups, (h, f / t)]
    return shapes


def resident_layers(layers: int, offloaded: int) -> int:
    """Layers of a stage whose activations stay in HBM with ``offloaded`` layers offloaded to
    host memory (:mod:`clusterforge.perf.offload`): the others, plus one in transfer."""
    moved = min(max(offloaded, 0), layers)
    return layers - moved + (1 if moved else 0)


def layer_params_per_gpu(arch: ModelArch, plan: ParallelPlan) -> float:
    """Parameters of one transformer layer held by one GPU (dense / TP, experts / TP x EP)."""
    dense, expert = _layer_params(arch)
    return dense / plan.layout.tp + expert / (plan.layout.tp * plan.layout.ep)


def stage_params(arch: ModelArch, plan: ParallelPlan, layers: int, first: bool) -> float:
    """Parameters held by one GPU of a stage: layers / TP (experts / EP) + embedding on stage 0."""
    dense, expert = _layer_params(arch)
    job = plan.layout
    per_gpu = layers * (dense / job.tp + expert / (job.tp * job.ep))
    if first or job.pp == 1:
        per_gpu += arch.vocab_size * arch.hidden_size / job.tp
    if job.pp == 1 and not arch.tied_embeddings:
        per_gpu += arch.vocab_size * arch.hidden_size / job.tp
    return per_gpu


def stage_expert_params(arch: ModelArch, plan: ParallelPlan, layers: int) -> float:
    """Expert parameters held by one GPU of a stage of ``layers`` layers (experts / TP x EP):
    the share of :func:`stage_params` that is reduced over the expert-data-parallel group."""
    expert = _layer_params(arch)[1]
    return layers * expert / (plan.layout.tp * plan.layout.ep)


def activation_bytes_per_layer(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """Stored activation bytes of one layer for one micro-batch on one GPU (Korthikanti eqs.).

    ``s b h (34 + 5 a s / h)`` for MHA, 4h MLP, BF16, no parallelism; terms split by TP are
    divided by ``t``; the ``10 s b h`` of norms, residual inputs and dropout masks also
    with SP.
    """
    h, f = arch.hidden_size, ffn_size(arch)
    sbh = plan.micro_batch * plan.seq_length / plan.layout.cp * h
    if plan.recompute == "full":
        sliced = plan.sequence_parallel or stack.distribute_checkpoints
        return 2.0 * sbh / (plan.layout.tp if sliced else 1)
    if saves_named_tensors(plan, stack):
        return named_saved_bytes(arch, plan, stack)
    if _recomputes_matmuls(plan, stack):
        return _every_other_matmul_bytes(arch, plan)
    q_ratio, kv_ratio = q_dim(arch) / h, kv_dim(arch) / h
    experts = arch.top_k if arch.num_experts > 1 else 1
    masks = 2.0 if stack.dropout else 0.0
    # FP8 GEMMs keep their inputs for the weight gradient in FP8 (1 B): the QKV, MLP and
    # down-projection inputs; flash attention still keeps its BF16 output, so the
    # projection keeps both (2 + 1 B).
    # MXFP8 / NVFP4 keep the column-wise copy with its block scales
    # (:func:`~clusterforge.perf.blockscale.saved_input_bytes`).
    fp8 = plan.precision == "fp8"
    gemm_in = 1.0 if fp8 else 2.0
    proj_in = 3.0 if fp8 else 2.0
    if is_block_scaled(plan.precision):
        gemm_in = saved_input_bytes(plan.precision)
        proj_in = 2.0 + gemm_in
    # Q, K, V (GQA-scaled), projection input; MLP internals (x top-k experts): plain MLP
    # keeps the activation's input (2f) and output (the down-projection input); a fused
    # SwiGLU keeps gate and up outputs (2 x 2f) and the down-projection input.
    mlp = ((4.0 if arch.gated_mlp else 2.0) + gemm_in) * f / h * experts
    split = (2 + proj_in) * q_ratio + 4 * kv_ratio + mlp
    # Norm inputs, QKV input, MLP input, dropout masks: replicated unless SP. A parallel
    # block (PaLM §2) has one norm whose output feeds both branches.
    replicated = (2 + gemm_in if arch.parallel_block else 4 + 2 * gemm_in) + masks
    per_gpu = sbh * (
        split / plan.layout.tp + replicated / (plan.layout.tp if plan.sequence_parallel else 1)
    )
    if arch.num_experts > 1:
        # The experts' first GEMM reads the top-k dispatched copies of each token (permuted
        # after the all-to-all, Megatron-Core ``moe_utils.permute``) and keeps them for its
        # weight gradient; every TP rank holds all of its group's tokens there.
        per_gpu += sbh * gemm_in * arch.top_k
    if stack.attention == "unfused" and plan.recompute == "none":
        heads = arch.num_heads / plan.layout.tp
        scores = plan.micro_batch * heads * (plan.seq_length / plan.layout.cp) * plan.seq_length
        per_gpu += scores * (5.0 if stack.dropout else 4.0)
    return per_gpu


def _every_other_matmul_bytes(arch: ModelArch, plan: ParallelPlan) -> float:
    """Saved bytes of one layer and micro-batch under torchtitan's selective op
    checkpointing: the block's input, the attention kernel's output and the outputs of
    the first, third, ... matmul (BF16); everything else is recomputed in the backward.
    Replicated tensors (the input, row-parallel outputs) split over TP only with SP."""
    h = arch.hidden_size
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    replicated = plan.layout.tp if plan.sequence_parallel else 1
    saved = h / replicated + q_dim(arch) / plan.layout.tp  # block input, attention output
    for columns, _ in layer_matmul_shapes(arch, plan)[::2]:
        saved += columns / replicated if columns == h and plan.layout.tp > 1 else columns
    return BF16_BYTES * tokens * saved


def _recomputes_matmuls(plan: ParallelPlan, stack: Stack) -> bool:
    """True when a selective recomputation rebuilds a whole layer's working set in the
    backward (torchtitan's selective op checkpointing, JAX's named-tensor policies), as
    full recomputation does."""
    policies = ("every_other_matmul", "saved_names")
    return plan.recompute == "selective" and stack.selective_recompute in policies


def context_parallel_working_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """Transient bytes of one layer's attention under PyTorch's context parallelism.

    Its backward (``_templated_ring_attention_backward``, PyTorch 2.6) holds at once every
    rank's K, V from the all-gather (BF16, ``cp`` x the local K, V), FP32 sums of dQ, dK, dV,
    the FP32 dK, dV packed for the next rank and those received from the previous one, and
    one step's BF16 dQ, dK, dV; the forward (the gathered K, V, an FP32 output) holds less.
    K, V count every query head when the model repeats them (``Stack.kv_heads_expanded``).
    Zero for Transformer Engine's ring, whose in-flight K, V chunks are left out.
    """
    cp = plan.layout.cp
    if cp == 1 or stack.context_parallel != "torch":
        return 0.0
    tokens = plan.micro_batch * plan.seq_length / cp
    q = tokens * q_dim(arch) / plan.layout.tp
    kv = 2 * tokens * (q_dim(arch) if stack.kv_heads_expanded else kv_dim(arch)) / plan.layout.tp
    fp32 = 4.0
    gathered = BF16_BYTES * cp * kv
    sums = fp32 * (q + kv) + 2 * fp32 * kv  # dQ, dK, dV sums; packed and received dK, dV
    return gathered + sums + BF16_BYTES * (q + kv)


def _in_flight(plan: ParallelPlan) -> float:
    """Micro-batches whose activations the first stage holds at peak (Korthikanti §4.2.3)."""
    p, v = plan.layout.pp, plan.layout.vpp
    if p == 1:
        return 1.0
    m = num_micro_batches(plan)
    in_flight = float(min(p, m))
    if v > 1:
        in_flight *= 1 + (p - 1) / (p * v)
    return float(in_flight)


def _shard(plan: ParallelPlan) -> int:
    """GPUs that share one copy of the sharded model states: DP x CP (Megatron's distributed
    optimizer shards over both), or the HSDP shard group."""
    return plan.shard_size or plan.layout.dp * plan.layout.cp


def _model_state_bytes(
    params: float, plan: ParallelPlan, stack: Stack, shard: int | None = None
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per GPU under ZeRO stage ``zero_stage``.

    Bytes per parameter are the stack's (:class:`~clusterforge.perf.stack.Stack`): BF16
    weights + FP32 gradient buffer + FP32 master, momentum and variance for Megatron
    (Rajbhandari et al. 2020 §3: 2 + 4 + 12), FP32 sharded weights + FP32 gradients + Adam
    moments for FSDP/torchtitan (4 + 4 + 8). FP8 runs store the weights as the stack does
    (BF16 plus a cached FP8 copy for Transformer Engine, FP8 only with NeMo's ``fp8_params``,
    unchanged for torchao, which casts on the fly), MXFP8 / NVFP4 by ``param_weight_bytes``.
    ``shard``: the ranks the states are sharded over (default the plan's DP x CP shard
    group). With ``optimizer_offload`` the optimizer states and FP32 gradients are on the host.
    """
    shard = shard or _shard(plan)
    fp8 = plan.precision == "fp8"
    weight_bytes = stack.fp8_weight_bytes + stack.fp8_copy_bytes if fp8 else stack.weight_bytes
    if is_block_scaled(plan.precision):  # BF16 + quantized copies, or quantized only
        quantized_only = plan.precision in stack.quantized_params
        weight_bytes = param_weight_bytes(plan.precision, stack.weight_bytes, quantized_only)
    weights = weight_bytes * params / (shard if plan.zero_stage >= 3 else 1)
    if plan.zero_stage == 2 and stack.master_in_parameters:
        # FSDP SHARD_GRAD_OP (and its hybrid form): the FP32 parameters stay sharded; the
        # unsharded BF16 compute copy gathered for the forward is kept until the backward
        # ends (Zhao et al. 2023 §3.2; PyTorch ShardingStrategy.SHARD_GRAD_OP).
        weights = weight_bytes * params / shard + BF16_BYTES * params
    grads = stack.grad_buffer_bytes * params / (shard if plan.zero_stage >= 2 else 1)
    state_bytes = optimizer_state_bytes(plan.optimizer_state, plan.precision, stack)
    optimizer = state_bytes * params / (shard if plan.zero_stage >= 1 else 1)
    if plan.optimizer_offload:
        # ZeRO-Offload (:mod:`.optimizer_offload`): master weights, moments and the FP32
        # gradient partition live on the host; ZeRO-3's gradient-partition buffer too
        # (stage3.py allocates it on ``self.device``, the CPU). Under ZeRO-1/2 the BF16
        # gradients the backward writes stay on the GPU until copied (stage_1_and_2.py).
        grads = 0.0 if plan.zero_stage >= 3 else BF16_BYTES * grads / stack.grad_buffer_bytes
        optimizer = 0.0
    return weights, grads, optimizer


def deferred_fsdp_reduce(plan: ParallelPlan, stack: Stack) -> bool:
    """True when a pipelined, sharded stage keeps its gradients unsharded until the last
    micro-batch and reduce-scatters them after the schedule (``Stack.pipelined_fsdp_no_sync``:
    PyTorch ``torch.distributed.pipelining`` with FSDP)."""
    return stack.pipelined_fsdp_no_sync and plan.layout.pp > 1 and plan.zero_stage >= 2


def _gathered_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float:
    """ZeRO-3/FSDP working set: the weights of the units gathered at once (the one in use
    plus ``fsdp_prefetch`` ahead), in the dtype they are gathered in (BF16, or FP8 where the
    stack gathers FP8: :meth:`~clusterforge.perf.stack.Stack.gathered_weight_bytes`, the same
    bytes the all-gather moves), and one unit's unsharded gradients in the dtype the backward
    produces them (``Stack.unit_grad_bytes``; Zhao et al. 2023 §3.2: a unit is freed after
    use; ``limit_all_gathers`` bounds the units in flight)."""
    if plan.zero_stage < 3:
        return 0.0
    layer = layer_params_per_gpu(arch, plan)
    unit = max(layer, stack.fsdp_unit_params)
    gathered = stack.gathered_weight_bytes(plan.precision)
    grad = unit * (stack.unit_grad_bytes or stack.grad_buffer_bytes)
    if stack.zero3_reduce_bucket_params > 0:
        # DeepSpeed copies each gradient into the contiguous bucket as its hook fires and
        # points ``param.grad.data`` at the copy (v0.19.2 stage3.py lines 1381-1404,
        # ``__add_grad_to_ipg_bucket``); the bucket is counted (``_reduce_bucket_bytes``),
        # so only the fresh BF16 gradient of the largest weight is outside it.
        grad = BF16_BYTES * max(c * k for c, k in layer_matmul_shapes(arch, plan))
    return unit * gathered * (1 + stack.fsdp_prefetch) + grad


def _reduce_bucket_bytes(plan: ParallelPlan, stack: Stack) -> float:
    """DeepSpeed ZeRO-3's contiguous gradient bucket: with ``contiguous_gradients`` (default
    true) the optimizer allocates, once, ``torch.empty(reduce_bucket_size)`` on the GPU in
    the communication dtype and copies every gradient into it before its reduce-scatter
    (deepspeedai/DeepSpeed v0.19.2 ``deepspeed/runtime/zero/stage3.py`` lines 626-630 and
    ``__add_grad_to_ipg_bucket``; ``reduce_bucket_size`` default 5e8 and
    ``contiguous_gradients`` default true in ``deepspeed/runtime/zero/config.py`` lines 102
    and 113), ``Stack.zero3_reduce_bucket_params`` elements of ``grad_reduce_bytes``."""
    if plan.zero_stage < 3 or stack.zero3_reduce_bucket_params <= 0:
        return 0.0
    return stack.zero3_reduce_bucket_params * stack.grad_reduce_bytes


# Peak bytes per logit of the loss: Megatron's FP32 copy, computed on in place; the BF16
# logits whose gradient Transformer Engine's fused cross-entropy writes in place; the BF16
# logits plus the new BF16 gradient tensor of the xentropy kernel; PyTorch's eager
# ``F.cross_entropy`` on an FP32 copy (torchtitan, which deletes the BF16 logits before the
# backward): in ``log_softmax``'s backward the saved FP32 log-probabilities, the NLL's FP32
# gradient and the FP32 input gradient it writes are alive together (3 x 4 B).
LOSS_PEAK_BYTES = {"unfused": 4.0, "te": float(BF16_BYTES), "xentropy": 4.0, "torch": 12.0}
# PyTorch's ``loss_parallel()`` (``Stack.loss_parallel``, with TP) fuses the NLL and
# log-softmax backward on each rank's vocabulary shard: ``_nll_loss_and_log_softmax_backward``
# in ``torch/distributed/tensor/parallel/loss.py`` (v2.5.1, a8d6afb5, and unchanged at
# 02eef6b8) keeps the saved FP32 log-probabilities ``x``, builds ``grad_input =
# torch.zeros_like(x)`` and returns ``(grad_input + torch.exp(x)) * grad_output``: ``x``,
# ``grad_input``, their sum and the product are alive together, 4 x 4 B per logit. Its
# forward (``_log_softmax``: the FP32 input, ``shifted``, ``exp(shifted)``, beside the BF16
# logits) holds 14.
LOSS_PARALLEL_PEAK_BYTES = 16.0


def memory_per_gpu(
    arch: ModelArch, plan: ParallelPlan, stages: tuple[int, ...], stack: Stack
) -> MemoryBreakdown:
    """Peak memory of the first pipeline stage's GPUs (most activations in flight)."""
    params = stage_params(arch, plan, stages[0], first=True)
    # Expert states are sharded over the expert-data-parallel group (the ranks holding the
    # same experts, DP x CP / EP), as Megatron-Core's distributed optimizer shards each
    # parameter buffer over the group that reduces it.
    expert = stage_expert_params(arch, plan, stages[0])
    dense_state = _model_state_bytes(params - expert, plan, stack)
    expert_shard = max(1, _shard(plan) // plan.layout.ep)
    expert_state = _model_state_bytes(expert, plan, stack, expert_shard)
    weights, grads, optimizer = (d + e for d, e in zip(dense_state, expert_state, strict=True))
    if plan.zero_stage >= 3 and plan.layout.pp > 1:  # a stage's weights stay gathered for the step
        weights += BF16_BYTES * params
    if deferred_fsdp_reduce(plan, stack):  # unsharded accumulator in the reduce dtype
        grads += stack.grad_reduce_bytes * params
    else:
        weights += _gathered_bytes(arch, plan, stack)
    unit = max(layer_params_per_gpu(arch, plan), stack.fsdp_unit_params)  # as _gathered_bytes
    weights += fsdp2_root_bytes(arch, plan, stack, unit, not deferred_fsdp_reduce(plan, stack))
    grads += _reduce_bucket_bytes(plan, stack)
    per_layer = activation_bytes_per_layer(arch, plan, stack) - offloaded_module_bytes(arch, plan)
    share = recompute_fraction(plan, stages)
    if (
        plan.recompute == "full" and share < 1.0
    ):  # block recomputation: the other layers keep their activations
        kept = activation_bytes_per_layer(arch, plan.with_(recompute="none"), stack)
        per_layer = share * per_layer + (1.0 - share) * kept
    # Offloaded layers and modules keep activations in host memory (:mod:`.offload`, :mod:`.offload_modules`).
    activations = per_layer * resident_layers(stages[0], plan.offload_layers) * _in_flight(plan)
    # Embedding output kept for the first layer (+ full-recompute working set of one layer).
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    activations += 2.0 * tokens * arch.hidden_size / plan.layout.tp * _in_flight(plan)
    # Transients: one layer's recomputed activations and its context-parallel buffers in
    # its backward, or, before any layer's backward, the loss's logits; never both at once.
    layer_working = context_parallel_working_bytes(arch, plan, stack)
    if plan.recompute == "full" or _recomputes_matmuls(plan, stack):
        layer_working += activation_bytes_per_layer(arch, plan.with_(recompute="none"), stack)
        if stack.liger_kernels:
            layer_working += liger_layer_grad_bytes(arch, plan)
    loss_working = 0.0
    if plan.layout.pp == 1:
        logit_bytes = LOSS_PEAK_BYTES[stack.cross_entropy]
        if stack.loss_parallel and plan.layout.tp > 1:
            logit_bytes = LOSS_PARALLEL_PEAK_BYTES
        loss_working = logit_bytes * tokens * arch.vocab_size / plan.layout.tp
        if stack.liger_kernels:
            loss_working = liger_loss_bytes(arch, plan, layer_params_per_gpu(arch, plan))
    activations += max(layer_working, loss_working)
    return MemoryBreakdown(
        weights_gib=weights / GIB,
        gradients_gib=grads / GIB,
        optimizer_gib=optimizer / GIB,
        activations_gib=activations / GIB,
        reserve_gib=RUNTIME_RESERVE_GIB,
    )
