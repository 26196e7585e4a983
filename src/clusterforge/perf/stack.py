"""Software stacks: the documented mechanisms of each training framework that change a step.

A :class:`Stack` is a set of mechanisms, never a speed factor: which attention kernel runs,
which communications overlap with compute, how gradients are accumulated and reduced, how
ZeRO-3/FSDP gathers weights, what the model states weigh in memory, and how FP8 is applied.
Each named stack states the defaults of that framework with their source:

``megatron-2021``
    Megatron-LM as in Narayanan et al. 2021 (arXiv 2104.04473): explicit attention with a
    fused softmax, dropout 0.1, no TP/DP/PP overlap, FP16 gradients all-reduced after the
    backward and accumulated by a separate ``main_grad.add_(grad)`` per parameter.
``megatron-core``
    Megatron-Core with Transformer Engine (NVIDIA/Megatron-LM README, "Training Speed and
    Scalability", r0.8): flash attention, no dropout, ``--tp-comm-overlap``,
    ``--overlap-grad-reduce --overlap-param-gather``, overlapped pipeline sends, FP32
    ``main_grad`` buffer reduced in FP32, gradient-accumulation fusion. FP8: Transformer Engine
    delayed scaling; BF16 weights plus an FP8 weight copy cached across micro-batches
    (Transformer Engine ``is_first_microbatch``).
``nemo``
    NeMo's published performance configurations on Megatron-Core
    (NVIDIA/NeMo-Framework-Launcher ``launcher_scripts/conf/training/*/*.yaml``, e.g.
    ``nemotron/nemotron_340b.yaml``: ``mcore_distributed_optim`` with
    ``grad_sync_dtype: bf16``, ``overlap_grad_sync``/``overlap_param_sync``,
    ``ub_tp_comm_overlap``, ``overlap_p2p_comm``, gradient-accumulation fusion): the
    Megatron-Core mechanisms with a BF16 gradient buffer reduced in BF16. FP8: Transformer
    Engine with FP8 parameters (``fp8_params: true``; NeMo's ``bf16_with_fp8_mixed`` recipe
    in ``nemo/collections/llm/recipes/precision/mixed_precision.py``), so the weights are
    stored in FP8 only.
``megatron-bridge``
    NeMo Framework 25.x on Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge
    ``docs/performance-summary.md`` and ``scripts/performance``): the ``nemo`` mechanisms
    with Transformer Engine 2.x, whose attention is cuDNN's fused flash attention on Hopper
    and Blackwell (TE ``get_attention_backend`` prefers FusedAttention on sm90+ since
    TE 1.8), FP8 with current (per-tensor, per-step) scaling, the "FP8-CS" recipe of the
    published benchmarks, and Transformer Engine's fused cross-entropy
    (``cross_entropy_loss_fusion = True`` in ``GPTModelProvider``,
    ``cross_entropy_fusion_impl = "te"`` in the Llama providers and the performance scripts).
``deepspeed``
    Megatron-DeepSpeed with DeepSpeed ZeRO (Rajbhandari et al. 2020; BigScience
    ``train/tr11-176B-ml``): unfused attention and dropout, no TP overlap, the pipeline
    engine reduces gradients after the last micro-batch, BF16_Optimizer accumulating in an
    FP32 buffer (a separate pass), no FP8 recipe of its own (Transformer Engine layers as in
    Megatron-Core, without the fused norm cast). ZeRO-3 fetches parameters in buckets of
    ``stage3_prefetch_bucket_size`` = 5e7 elements (DeepSpeed config docs) with
    ``overlap_comm``, and keeps BF16 shards plus FP32 master weights.
``fsdp``
    PyTorch FSDP (Zhao et al. 2023, arXiv 2304.11277, §3-4): one FSDP unit per transformer
    block, ``BACKWARD_PRE`` prefetch of one unit in the backward and, in the forward, the
    next unit's all-gather issued by the CPU running ahead of the GPU (§3.3.2, with
    ``limit_all_gathers`` bounding it), parameters resharded after the forward, no TP overlap, FP32 sharded parameters with BF16 compute
    (``MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)``), flash attention (PyTorch SDPA).
``torchtitan``
    torchtitan with FSDP2 (Liang et al. 2024, arXiv 2410.06511, §2-3): per-block
    ``fully_shard`` with implicit forward and backward prefetch of one block, FP32 sharded
    parameters and gradients, BF16 compute, SDPA flash attention, float8 with dynamic
    tensor-wise scaling (torchao) and FP8 weight all-gather; no persistent FP8 weight copy.
    Context parallelism is PyTorch's experimental ``context_parallel`` with the all-gather
    rotation (torchtitan ``experimental.context_parallel_rotate_method = "allgather"``,
    ``torchtitan/config_manager.py`` at 9dec370, Dec 2024), under
    ``sdpa_kernel([FLASH_ATTENTION, EFFICIENT_ATTENTION])`` ("currently we only support these
    two SDP backends", ``torchtitan/utils.py`` ``get_train_context``): SDPA's FlashAttention-2,
    not cuDNN, which SDPA does not pick on its own either (cuDNN opt-in since PyTorch 2.5.1); K, V are repeated to all query heads before the attention (``repeat_kv`` in
    ``torchtitan/models/llama/model.py``).
``maxtext``
    MaxText on JAX/XLA (AI-Hypercomputer/maxtext ``configs/base.yml``, 8e55ab1, 2024-12-09):
    FP32 parameters and AdamW moments, XLA-fused element-wise ops, named-tensor
    ``remat_policy`` (``saved_names``), cuDNN attention (``cudnn_flash_te``), BF16 gradient
    reductions (the weight-gradient dot's BF16 output, reduced before its cast to FP32), FP8
    as Flax's ``Fp8DotGeneralOp`` (delayed scaling, inputs quantized per call in XLA fusions)
    with FP8 weight gathers (XLA's ``CollectiveQuantizer`` moves the quantization first).

Pipeline schedule: non-interleaved 1F1B (Megatron-LM and NeMo without a virtual pipeline,
torchtitan's ``"1F1B"``, DeepSpeed's ``PipelineEngine``); interleaving is the layout's ``vpp``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, assert_never, get_args

from clusterforge.perf.stack_options import (
    ZERO3_DEEPSPEED_GATHERS_PER_LAYER,
    AttentionKernel,
    ContextParallelKernel,
    CrossEntropyKernel,
    CudaGraphModule,
    Fp8Scaling,
    FsdpBackwardPrefetch,
    MoeDispatcher,
    OptimizerImpl,
    RecomputeModule,
    RematName,
    SelectivePolicy,
    TpOverlapKind,
)

__all__ = [
    "STACK_NAMES",
    "AttentionKernel",
    "ContextParallelKernel",
    "CrossEntropyKernel",
    "CudaGraphModule",
    "Fp8Scaling",
    "FsdpBackwardPrefetch",
    "MoeDispatcher",
    "SelectivePolicy",
    "Stack",
    "StackName",
    "TpOverlapKind",
    "stack_named",
]

StackName = Literal[
    "megatron-2021",
    "megatron-core",
    "nemo",
    "megatron-bridge",
    "deepspeed",
    "fsdp",
    "torchtitan",
    "maxtext",
]
STACK_NAMES: tuple[StackName, ...] = get_args(StackName)


@dataclass(frozen=True)
class Stack:
    """Software-stack mechanisms that change the physics of a step (stated in outputs).

    Memory layout, bytes per parameter: ``weight_bytes`` resident weights (``fp8_weight_bytes``
    replaces it in FP8 when the stack stores FP8 parameters), ``fp8_copy_bytes`` an extra
    FP8 weight copy kept in FP8 runs, ``grad_buffer_bytes`` the gradient buffer,
    ``optimizer_bytes`` Adam state (+ FP32 master weights when the weights are not FP32).
    ``cp_overlap``: context-parallel K/V exchange hidden behind the attention (ring
    attention, Megatron-Core) or on the critical path (an all-gather of K and V before the
    attention, as in Llama 3's context parallelism: Llama Team 2024, arXiv 2407.21783, §3.3.2).
    ``context_parallel`` names the implementation (:data:`ContextParallelKernel`).
    ``kv_heads_expanded``: the model repeats its K, V heads to the query heads before the
    attention (torchtitan's Llama ``repeat_kv``), so everything that moves K, V or dK, dV
    moves ``num_heads / num_kv_heads`` times the bytes of the grouped tensors.
    ``attention`` and ``cross_entropy`` name the kernels (:data:`AttentionKernel`,
    :data:`CrossEntropyKernel`); a run may change them (LLM Foundry: Triton, xentropy).
    ZeRO-3/FSDP: ``fsdp_prefetch`` units gathered ahead of compute (0 = gathered on demand),
    ``fsdp_unit_params`` parameters per gathered unit (0 = one transformer layer; DeepSpeed's
    prefetch bucket), ``zero3_gathers_per_layer`` all-gather calls per layer when a layer
    holds more than a bucket (FSDP: one per block; DeepSpeed: one per weight matrix),
    ``zero3_reduce_bucket_params`` gradients per reduce-scatter (0 = one per unit).
    ``fsdp_backward_prefetch``: when FSDP1 issues the backward's next all-gather
    (:data:`FsdpBackwardPrefetch`). ``train_metric_passes``: PyTorch cross-entropies run on
    every micro-batch's logits for training metrics (:func:`~clusterforge.perf.compute.logits_times`).
    ``optimizer``: how the step updates the weights (:data:`OptimizerImpl`).
    ``fsdp_copy_out``: every all-gather's output is copied out into per-parameter tensors
    on the compute stream (FSDP2's per-parameter sharding; FSDP1's flat parameter is a view).
    ``zero2_per_unit``: ZeRO-2 is FSDP's ``SHARD_GRAD_OP``, sharded unit by unit like full
    sharding: each unit is all-gathered before its forward (one unit prefetched) and kept
    until its backward, whose gradient it reduce-scatters right away, in every micro-batch
    while gradients are synchronised (FSDP1 ``_runtime_utils.py``: ``_post_forward`` does not
    reshard strategies outside ``RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES``, and
    ``_should_free_in_backward`` frees the unit after its backward whenever gradients sync;
    FSDP2 ``reshard_after_forward=False`` alike). False is a distributed optimizer that
    reduce-scatters the gradients and gathers the updated weights once per step
    (Megatron-Core, DeepSpeed ZeRO-1/2).
    ``flash_unpad``: the model calls FlashAttention-2's varlen kernel through an unpadding
    wrapper, as LLM Foundry's ``flash_attn_fn`` does (``llmfoundry/models/layers/attention.py``
    at 5e85bd62d, 2024-01-06): every layer unpads Q, K and V with flash-attn's
    ``bert_padding.unpad_input`` and pads the output back with ``pad_input``, HBM passes
    around the kernel (:func:`~clusterforge.perf.attention.flash_unpad_bytes`) and two
    blocking host calls per ``unpad_input`` (:mod:`clusterforge.perf.host`). Only with
    ``attention = "flash"``.
    ``pipelined_fsdp_no_sync``: under pipeline parallelism a sharded stage accumulates its
    gradients unsharded across the micro-batches, one separate ``accumulator += grad`` per
    micro-batch in the reduce dtype, and reduce-scatters them once, after the schedule's
    last backward, with no compute left to hide behind (PyTorch ``torch.distributed.
    pipelining``: the stage turns FSDP's gradient sync off for every backward and runs FSDP's
    ``post_backward`` after the last; FSDP2 ``FSDPParam.accumulate_unsharded_grad_if_needed``).
    ``selective_recompute``: what ``recompute = "selective"`` keeps (:data:`SelectivePolicy`),
    ``remat_saved`` the names a ``saved_names`` policy keeps (:data:`RematName`).
    ``master_in_parameters``: the FP32 parameters are the master weights (PyTorch FSDP, which
    shards them at every stage and gathers a BF16 compute copy) rather than a BF16 model
    with FP32 masters in the optimizer (Megatron, DeepSpeed).
    ``tp_overlap`` hides TP collectives behind GEMMs the way ``tp_overlap_kind`` names
    (:data:`TpOverlapKind`): Transformer Engine's userbuffers, or PyTorch's micro-pipelined
    async TP, which a PyTorch run turns on under ``torch.compile`` (off by default).
    ``tp_layout_copies``: sequence-parallel TP gathers and scatters the sequence dimension of
    ``[batch, sequence, hidden]`` activations with PyTorch's functional collectives, which
    work on dimension 0 and so copy the whole activation next to every call (DTensor's
    ``Shard(1)`` placements, torchtitan; :func:`~clusterforge.perf.compute.tp_layout_copy_bytes`).
    ``tp_saves_gathered_input``: autograd keeps the all-gathered input of each column-parallel
    matmul for its weight gradient (DTensor TP), so the backward gathers it again only when
    per-op checkpointing dropped it; False is Megatron's sequence parallelism, which keeps
    the input shard and always re-gathers it in the backward (Korthikanti et al. 2022 §4.2.2).
    ``tp_fp8_all_gather``: in FP8 runs the column-parallel inputs are cast to FP8 before
    their sequence-parallel all-gather (torchao ``PrepareFloat8ModuleInput`` and
    ``Float8ColwiseParallel``, "all-gather in float8", as torchtitan applies them with
    Float8 and TP), so those gathers move one byte per element.
    ``fp8_torchao``: FP8 is torchao's ``Float8Linear`` with tensor-wise dynamic scaling, one
    Linear at a time, no fused norm cast (:func:`~clusterforge.perf.fp8.torchao_layer_bytes`).
    ``fused_elementwise``: norms, activations and rotary embeddings run as fused kernels
    (Megatron/Transformer Engine/Apex, or a PyTorch model under ``torch.compile``); False
    is PyTorch eager, one kernel per op (:mod:`clusterforge.perf.compute`).
    ``moe_dispatch_sync``: the MoE token dispatcher copies the token counts to the host and
    blocks on them once per layer forward (Megatron-Core's all-to-all dispatcher), so the
    CPU's issue time of that layer is exposed (:mod:`clusterforge.perf.host`).
    ``moe_dispatch_metadata``: the dispatcher also all-gathers the per-expert token counts
    over the EP group, sends the routing probabilities in an all-to-all of their own and,
    with TP, gathers the routed top-k copies over TP in place of the MLP's sequence-parallel
    pair (Megatron-Core's all-to-all dispatcher; :mod:`clusterforge.perf.exposure`).
    ``moe_expert_bias_eager``: the experts' second linear leaves its bias to the MoE layer,
    which adds it expert by expert in PyTorch eager (Megatron-Core's ``TEGroupedMLP``;
    :func:`~clusterforge.perf.moe.expert_output_bias_s`).
    ``moe_glu_clamp_eager``: a clamped gated activation (``ModelArch.glu_clamp``) clamps and
    re-joins its two halves in PyTorch eager ahead of the fused activation (Megatron-Core's
    ``weighted_bias_quick_geglu_impl``; :func:`~clusterforge.perf.moe.glu_clamp_s`).
    ``moe_fp8_padding``: in FP8 the grouped expert linears copy each expert's rows into a
    16-aligned buffer and back (Megatron-Core's ``TEGroupedMLP`` with Transformer Engine's
    ``Fp8Padding``; :func:`~clusterforge.perf.moe.fp8_padding_s`).
    ``moe_dispatcher``: Megatron-Core's token dispatcher (:data:`MoeDispatcher`); under
    ``"flex"`` (DeepEP / HybridEP) one fused kernel per direction replaces the permutation
    passes, the counts all-gather and the probabilities all-to-all, moving the tokens at the
    rate DeepEP publishes (:func:`~clusterforge.perf.moe.flex_dispatch_s`) on
    ``moe_flex_sms`` SMs of its own (Megatron-Core's ``moe_flex_dispatcher_num_sms``, 20
    when unset for DeepEP, ``_DeepepManager``).
    ``moe_a2a_overlap``: Megatron-Core's ``overlap_moe_expert_parallel_comm``: the 1F1B
    steps run one micro-batch's forward together with another's backward, layer by layer,
    so each one's EP dispatch and combine hide behind the other's compute
    (``combined_1f1b.py``; :func:`~clusterforge.perf.exposure.ep_overlapped_s`).
    ``recompute_modules``: further Megatron-Core recompute modules of the run's recipe,
    rerun in the backward (:func:`~clusterforge.perf.moe.recompute_modules_s`; none by
    default).
    ``cuda_graph_modules``: scopes replayed from CUDA graphs (Megatron
    ``--cuda-graph-modules``; none in eager runs, the default of every stack here).
    ``distribute_checkpoints``: under full recomputation without sequence parallelism each
    TP rank keeps only its 1/t slice of the layer input it recomputes from, and gathers it
    back before the recomputation (Megatron-LM's ``--distribute-checkpointed-activations``,
    which metaseq's OPT launcher sets); off by default.
    """

    name: str = "megatron-core"
    attention: AttentionKernel = "flash"
    dropout: bool = False
    tp_overlap: bool = True
    tp_overlap_kind: TpOverlapKind = "userbuffers"
    cp_overlap: bool = True
    context_parallel: ContextParallelKernel = "te"
    kv_heads_expanded: bool = False
    dp_overlap: bool = True
    pp_overlap: bool = True
    grad_reduce_bytes: int = 4
    fused_grad_accumulation: bool = True
    cross_entropy: CrossEntropyKernel = "unfused"
    weight_bytes: float = 2.0
    fp8_weight_bytes: float = 2.0
    fp8_copy_bytes: float = 1.0
    grad_buffer_bytes: float = 4.0
    optimizer_bytes: float = 12.0
    fsdp_prefetch: int = 1
    fsdp_unit_params: float = 0.0
    fsdp_reshard_after_forward: bool = True
    fsdp_backward_prefetch: FsdpBackwardPrefetch = "pre"
    train_metric_passes: int = 0
    optimizer: OptimizerImpl = "fused"
    zero2_per_unit: bool = False
    flash_unpad: bool = False
    zero3_gathers_per_layer: int = 1
    fsdp_copy_out: bool = False
    pipelined_fsdp_no_sync: bool = False
    selective_recompute: SelectivePolicy = "attention"
    master_in_parameters: bool = False
    zero3_reduce_bucket_params: float = 0.0
    fused_elementwise: bool = True
    fp8_scaling: Fp8Scaling = "delayed"
    fp8_fused_norm_cast: bool = True
    fp8_all_gather: bool = False
    fp8_torchao: bool = False
    tp_layout_copies: bool = False
    tp_saves_gathered_input: bool = False
    tp_fp8_all_gather: bool = False
    moe_dispatch_sync: bool = True
    moe_dispatch_metadata: bool = True
    moe_expert_bias_eager: bool = True
    moe_glu_clamp_eager: bool = True
    moe_fp8_padding: bool = True
    moe_dispatcher: MoeDispatcher = "alltoall"
    moe_flex_sms: int = 20
    moe_a2a_overlap: bool = False
    cuda_graph_modules: tuple[CudaGraphModule, ...] = ()
    recompute_modules: tuple[RecomputeModule, ...] = ()
    distribute_checkpoints: bool = False
    remat_saved: tuple[RematName, ...] = ()

    def gathered_weight_bytes(self, precision: str) -> float:
        """Wire bytes per weight in parameter all-gathers (ZeRO/FSDP): FP8 in FP8 runs when
        the stack stores FP8 parameters (NeMo ``fp8_params``, whose distributed optimizer and
        Megatron-FSDP gather the FP8 buffer) or gathers FP8 (torchao float8 all-gather,
        XLA's collective quantizer), else BF16."""
        fp8_wire = self.fp8_all_gather or self.fp8_weight_bytes <= 1.0
        return 1.0 if precision == "fp8" and fp8_wire else 2.0

    def gathers_per_unit(self, zero_stage: int) -> bool:
        """Whether ZeRO stage ``zero_stage`` gathers the parameters unit by unit and
        reduce-scatters each unit's gradients per micro-batch, the FSDP mechanisms: ZeRO-3,
        or ZeRO-2 run as FSDP's ``SHARD_GRAD_OP`` (``zero2_per_unit``); otherwise the weights
        are gathered once per step (a distributed optimizer) or not sharded at all."""
        return zero_stage == 3 or (zero_stage == 2 and self.zero2_per_unit)

    @classmethod
    def megatron_core(cls) -> Stack:
        return stack_named("megatron-core")

    @classmethod
    def megatron_2021(cls) -> Stack:
        return stack_named("megatron-2021")


def _unfused_2021(name: str, **changes: object) -> Stack:
    """Megatron-LM of 2021 and Megatron-DeepSpeed: explicit attention, dropout, no overlap."""
    base = Stack(
        name=name,
        attention="unfused",
        dropout=True,
        tp_overlap=False,
        dp_overlap=False,
        pp_overlap=False,
        fused_grad_accumulation=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _pytorch(name: str, **changes: object) -> Stack:
    """PyTorch FSDP stacks: FP32 sharded parameters and moments, torchao float8 (dynamic
    scaling, no persistent FP8 copy, no fused norm cast), no Megatron TP overlap, eager
    mode (``torch.compile`` is off by default in torchtitan's ``[compile]`` config and in
    fms-fsdp's ``use_torch_compile``; a run's configuration may turn it on); under pipeline
    parallelism the gradients wait unsharded for the last micro-batch
    (``pipelined_fsdp_no_sync``), and the pipeline sends are not overlapped: PyTorch's
    ``Schedule1F1B`` and the multi-stage schedules wait on each batched send/receive before
    the next forward or backward (``_wait_batch_p2p`` in
    ``torch/distributed/pipelining/schedules.py``)."""
    base = Stack(
        name=name,
        tp_overlap=False,
        tp_overlap_kind="micro_pipeline",
        fused_elementwise=False,
        master_in_parameters=True,
        weight_bytes=4.0,
        fp8_weight_bytes=4.0,
        fp8_copy_bytes=0.0,
        optimizer_bytes=8.0,
        fp8_scaling="dynamic",
        fp8_fused_norm_cast=False,
        fp8_torchao=True,
        pp_overlap=False,
        pipelined_fsdp_no_sync=True,
        zero2_per_unit=True,
        moe_dispatch_sync=False,
        moe_dispatch_metadata=False,
        moe_expert_bias_eager=False,
        moe_glu_clamp_eager=False,
        moe_fp8_padding=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def stack_named(name: StackName) -> Stack:
    """The documented mechanisms of stack ``name`` (see the module docstring for sources)."""
    match name:
        case "megatron-core":
            return Stack()
        case "megatron-2021":
            return _unfused_2021(name, grad_reduce_bytes=2, grad_buffer_bytes=2.0, fsdp_prefetch=0)
        case "nemo":
            return Stack(
                name=name,
                grad_reduce_bytes=2,
                grad_buffer_bytes=2.0,
                fp8_weight_bytes=1.0,
                fp8_copy_bytes=0.0,
            )
        case "megatron-bridge":
            return replace(
                stack_named("nemo"),
                name=name,
                attention="cudnn",
                fp8_scaling="dynamic",
                cross_entropy="te",
            )
        case "deepspeed":
            return _unfused_2021(
                name,
                fsdp_unit_params=5e7,
                zero3_gathers_per_layer=ZERO3_DEEPSPEED_GATHERS_PER_LAYER,
                zero3_reduce_bucket_params=5e8,
                fp8_fused_norm_cast=False,
                moe_dispatch_sync=False,
                moe_dispatch_metadata=False,
                moe_expert_bias_eager=False,
                moe_glu_clamp_eager=False,
                moe_fp8_padding=False,
            )
        case "fsdp":
            return _pytorch(name)
        case "maxtext":
            return replace(
                _pytorch(name, attention="cudnn", fused_elementwise=True, fp8_all_gather=True),
                grad_reduce_bytes=2,
                fp8_scaling="delayed",
                fp8_fused_norm_cast=True,
                fp8_torchao=False,
                selective_recompute="saved_names",
            )
        case "torchtitan":
            return _pytorch(
                name,
                fp8_all_gather=True,
                fsdp_copy_out=True,
                attention="sdpa_flash",
                cross_entropy="torch",
                context_parallel="torch",
                kv_heads_expanded=True,
                selective_recompute="every_other_matmul",
                tp_layout_copies=True,
                tp_saves_gathered_input=True,
                tp_fp8_all_gather=True,
            )
        case _:
            assert_never(name)
