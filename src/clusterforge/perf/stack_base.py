"""The Stack record: the mechanisms of a training framework that change a step.

A :class:`Stack` is a set of mechanisms, never a speed factor: which attention kernel runs,
which communications overlap with compute, how gradients are accumulated and reduced, how
ZeRO-3/FSDP gathers weights, what the model states weigh in memory, and how FP8 is applied.
Each named stack states the defaults of that framework with their source
(:mod:`clusterforge.perf.stack`, whose :func:`~clusterforge.perf.stack.stack_named` builds one).

Pipeline schedule: non-interleaved 1F1B (Megatron-LM and NeMo without a virtual pipeline,
torchtitan's ``"1F1B"``, DeepSpeed's ``PipelineEngine``); interleaving is the layout's ``vpp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from clusterforge.perf.stack_options import (
    AttentionKernel,
    ContextParallelKernel,
    CrossEntropyKernel,
    CudaGraphModule,
    Fp8Scaling,
    Fsdp2RootUnit,
    FsdpBackwardPrefetch,
    MoeDispatcher,
    OptimizerImpl,
    RecomputeModule,
    RematName,
    SelectivePolicy,
    TpOverlapKind,
)

__all__ = ["STACK_NAMES", "Stack", "StackName"]

StackName = Literal[
    "megatron-2021",
    "megatron-core",
    "nemo",
    "megatron-bridge",
    "deepspeed",
    "fsdp",
    "torchtitan",
    "maxtext",
    "automodel",
]
STACK_NAMES: tuple[StackName, ...] = get_args(StackName)


@dataclass(frozen=True)
class Stack:
    """Software-stack mechanisms that change the physics of a step (stated in outputs).

    Memory layout, bytes per parameter: ``weight_bytes`` resident weights (``fp8_weight_bytes``
    replaces it in FP8 when the stack stores FP8 parameters), ``fp8_copy_bytes`` an extra
    FP8 weight copy kept in FP8 runs, ``grad_buffer_bytes`` the gradient buffer,
    ``optimizer_bytes`` Adam state (+ FP32 master weights when the weights are not FP32).
    ``quantized_params``: the block-scaled precisions (``mxfp8``, ``nvfp4``) whose weights
    the stack stores only quantized (Megatron-Core ``fp8_param_gather``: no BF16 copy;
    :func:`clusterforge.perf.blockscale.param_weight_bytes`).
    ``cp_overlap``: context-parallel K/V exchange hidden behind the attention (ring
    attention, Megatron-Core) or on the critical path (an all-gather of K and V before the
    attention, as in Llama 3's context parallelism: Llama Team 2024, arXiv 2407.21783, §3.3.2).
    ``context_parallel`` names the implementation (:data:`ContextParallelKernel`).
    ``kv_heads_expanded``: the model repeats its K, V heads to the query heads before the
    attention (torchtitan's Llama ``repeat_kv``), so everything that moves K, V or dK, dV
    moves ``num_heads / num_kv_heads`` times the bytes of the grouped tensors.
    ``attention`` and ``cross_entropy`` name the kernels (:data:`AttentionKernel`,
    :data:`CrossEntropyKernel`); a run may change them (LLM Foundry: Triton, xentropy).
    ``loss_parallel``: with tensor parallelism the loss runs under PyTorch's
    ``loss_parallel()`` on the vocabulary-sharded logits (torchtitan), whose fused backward
    holds more than the ``cross_entropy`` kernel's (:mod:`clusterforge.perf.memory`).
    ``liger_kernels``: a Hugging Face Llama under Liger-Kernel's patches (fused linear
    cross-entropy, in-place SwiGLU backward): memory only (:mod:`.liger_memory`); the
    loss's time stays the ``cross_entropy`` kernel's.
    ZeRO-3/FSDP: ``fsdp_prefetch`` units gathered ahead of compute (0 = gathered on demand),
    ``fsdp_unit_params`` parameters per gathered unit (0 = one transformer layer; DeepSpeed's
    prefetch bucket), ``zero3_gathers_per_layer`` all-gather calls per layer when a layer
    holds more than a bucket (FSDP: one per block; DeepSpeed: one per weight matrix),
    ``zero3_reduce_bucket_params`` gradients per reduce-scatter (0 = one per unit).
    ``unit_grad_bytes``: bytes per weight of a gathered unit's unsharded gradient before its
    reduce-scatter (0 = ``grad_buffer_bytes``; JAX/XLA: the weight-gradient dot's BF16 output).
    ``fsdp_backward_prefetch``: when FSDP1 issues the backward's next all-gather
    (:data:`FsdpBackwardPrefetch`). ``train_metric_passes``: PyTorch cross-entropies run on
    every micro-batch's logits for training metrics (:func:`~clusterforge.perf.logits.logits_times`).
    ``optimizer``: how the step updates the weights (:data:`OptimizerImpl`).
    ``fsdp_copy_out``: every all-gather's output is copied out into per-parameter tensors
    on the compute stream (FSDP2's per-parameter sharding; FSDP1's flat parameter is a view).
    ``scan_carry_copies``: the layers run as an XLA while loop (a scan) whose pipelined
    all-gathers (``--xla_gpu_enable_pipelined_all_gather``) carry the next layer's
    gathered weights across iterations, without XLA's while-loop double buffering
    (``--xla_gpu_enable_while_loop_double_buffering=false``): every iteration copies them
    into the loop-carried buffer on the compute stream
    (:func:`~clusterforge.perf.sharded.zero3_copy_out_s`). Off in every named stack:
    MaxText's published recipes turn double buffering on; a run whose recipe turns it off
    with the pipelined all-gather on states it (NVIDIA's Paxml benchmark recipe,
    dgxc-benchmarking ``paxml/configure.sh`` at 35a9aec and 143b90d).
    ``xla_pipelined_all_gather``: XLA's collective pipeliner moves each scanned layer's
    FSDP all-gathers into the loop iteration before (``--xla_gpu_enable_pipelined_all_gather
    =true``, as every MaxText recipe and NVIDIA's Paxml benchmark recipe set it), which is
    the one unit prefetched of :func:`~clusterforge.perf.sharded.zero3_exposed_s`; False is
    a run whose XLA does not pipeline them, each layer's gathers then issued one at a time
    inside its own iteration (:mod:`clusterforge.perf.xla_scan`). True in every named stack;
    a run whose XLA flags leave the flag at an XLA default of false states it.
    ``unrolled_all_reduce_combine_bytes``: the layers are unrolled (MaxText
    ``scan_layers=false``) and XLA's all-reduce combiner merges HSDP's replica all-reduces
    across layers up to this many bytes (``--xla_gpu_all_reduce_combine_threshold_bytes``),
    in the parameter tree's order (:mod:`clusterforge.perf.xla_combine`). 0 (every named
    stack): one replica all-reduce per layer behind the next layer's backward, as a layer
    scan runs it; a run whose recipe unrolls the layers states its threshold.
    ``layer_input_dropout``: every transformer layer drops out its input, a read and a write
    of the BF16 activation in the forward, again in a recomputed forward, and of its gradient
    in the backward (:mod:`clusterforge.perf.input_dropout`); praxis' ``StackedTransformer``
    with ``input_dropout_prob > 0`` as the block of a ``StackedTransformerRepeated`` (Paxml's
    ``GPT5BBase``). Off in every named stack; a run whose model sets it states it.
    ``fsdp_copy_in``: before each reduce-scatter the unit's gradients are chunk-concatenated
    into a buffer of the reduce dtype, and the compute stream waits for that copy (FSDP2's
    ``foreach_reduce``; FSDP1 and DeepSpeed reduce their flat gradient buffers in place).
    ``fsdp_grad_prep``: FSDP1's post-backward hook casts each unit's flat BF16 gradient to the
    reduce dtype and divides it in place by the pre-divide factor before the reduce-scatter
    (:func:`~clusterforge.perf.sharded.fsdp1_grad_prep_s`); FSDP2 divides inside NCCL
    (``ReduceOp.AVG`` for FP32 and BF16, ``_get_gradient_divide_factors``) and casts in its
    copy-in.
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
    ``moe_drop_and_pad``: the run drops tokens past each expert's capacity and pads every
    expert's input to it (Megatron ``moe_expert_capacity_factor`` with
    ``moe_pad_expert_input_to_capacity``): the split sizes are known on the host without a
    copy, so the dispatcher does not sync (:func:`~clusterforge.perf.host.moe_forward_host_s`)
    nor all-gather the counts (:mod:`clusterforge.perf.ep_exposure`), and FP8 runs skip the experts' row padding when the capacity is 16-aligned
    (:func:`~clusterforge.perf.moe.fp8_padding_s`).
    ``moe_random_routing``: the router's logits are replaced by random ones so that the
    routing is balanced on average (Megatron-Core's ``moe_router_force_load_balancing``, as
    the Megatron-Bridge MoE benchmarks run): in a dropless run the expert GEMMs then take
    the busiest EP rank's rows and their ragged row tiles
    (:mod:`clusterforge.perf.expert_rows`).
    ``moe_dispatch_metadata``: the dispatcher also all-gathers the per-expert token counts
    over the EP group, sends the routing probabilities in an all-to-all of their own and,
    with TP, gathers the routed top-k copies over TP in place of the MLP's sequence-parallel
    pair (Megatron-Core's all-to-all dispatcher; :mod:`clusterforge.perf.ep_exposure`).
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
    ``"flex"`` (DeepEP / HybridEP) one fused kernel per direction replaces the all-to-all
    dispatcher's permute-before-send passes, the counts all-gather and the probabilities
    all-to-all (the received rows are still permuted into expert order and back,
    :func:`~clusterforge.perf.flex_permute.flex_permute_s`), moving the tokens at the
    rate DeepEP publishes (:func:`~clusterforge.perf.moe.flex_dispatch_s`) on
    ``moe_flex_sms`` SMs of its own (Megatron-Core's ``moe_flex_dispatcher_num_sms``, 20
    when unset for DeepEP, ``_DeepepManager``).
    ``moe_a2a_overlap``: Megatron-Core's ``overlap_moe_expert_parallel_comm``: the 1F1B
    steps run one micro-batch's forward together with another's backward, layer by layer,
    so each one's EP dispatch and combine hide behind the other's compute, the flex
    dispatcher's up to a measured share (``combined_1f1b.py``;
    :func:`~clusterforge.perf.ep_exposure.ep_overlapped_s`).
    ``param_gather_one_ahead``: Megatron-Core's overlapped parameter all-gather dispatches
    each bucket only when the one before it is waited on, so a module whose weights span
    several buckets (the grouped expert linears) waits on them in series
    (:func:`~clusterforge.perf.param_gather.expert_gather_chain_s`); off for the PyTorch,
    JAX and DeepSpeed stacks.
    ``fsdp_root_once_per_step``: ZeRO-3 is Megatron-FSDP, whose units are the transformer
    layers only: the embedding and output layer are gathered once per step and
    reduce-scattered every micro-batch, and FP8 parameter shards all-reduce their amaxes
    once per step (:mod:`clusterforge.perf.megatron_fsdp`); ``megatron-bridge`` only.
    ``fsdp2_root_unit``: for which models ZeRO-3 is FSDP2's ``fully_shard`` of every block
    and then of the whole model, whose root unit (embedding, final norm, output layer) stays
    unsharded through the step and leaves its all-gather block cached in the copy-in
    stream's pool (:data:`Fsdp2RootUnit`, :mod:`clusterforge.perf.fsdp2_memory`):
    ``torchtitan`` every model, ``automodel`` its dense models; ``none`` elsewhere.
    ``recompute_modules``: further Megatron-Core recompute modules of the run's recipe,
    rerun in the backward (:func:`~clusterforge.perf.moe.recompute_modules_s`; none by
    default).
    ``cuda_graph_modules``: scopes replayed from CUDA graphs (Megatron
    ``--cuda-graph-modules``; none in eager runs, the default of every stack here).
    ``distribute_checkpoints``: under full recomputation without sequence parallelism each
    TP rank keeps only its 1/t slice of the layer input it recomputes from, and gathers it
    back before the recomputation (Megatron-LM's ``--distribute-checkpointed-activations``,
    which metaseq's OPT launcher sets); off by default.
    ``eager_rotary``: the rotary embedding runs as separate PyTorch eager BF16 ops even where
    norms and activations are fused (NeMo AutoModel's ``_apply_rotary_emb``; only with
    ``fused_elementwise``, :mod:`clusterforge.perf.compute`).
    ``yarn_rotary_unfused``: a YaRN-scaled rotary embedding (``ModelArch.rotary_scaling``)
    runs Megatron-Core's unfused PyTorch rotary, whose attention factor TE's fused kernel
    does not take (:mod:`clusterforge.perf.rotary`); Megatron-Core stacks only.
    ``embedding_onehot``: every embedding table (the vocabulary, learned positions) is looked
    up as a matmul of a one-hot encoding with the table, not by index (MaxText's
    ``use_iota_embed``, Paxml's ``lookup_style = 'matmul'``;
    :func:`~clusterforge.perf.embedding.embedding_times`).
    ``fp8_amax_all_reduce``: with delayed scaling, Transformer Engine all-reduces the amaxes
    of the stage's FP8 tensors over its TP x DP x CP GPUs, blocking, after every model
    chunk's forward and backward of a micro-batch (Megatron-Core's one ``fp8_autocast`` per
    ``TransformerBlock``; :mod:`~clusterforge.perf.fp8_amax`); ``fp8_amax_history`` is the
    amax history length its fused update rolls (Megatron-Core's ``fp8_amax_history_len``,
    1 by default; NeMo's FP8 recipes 1,024).
    ``checkpoint_early_stop``: full recomputation runs PyTorch's non-reentrant checkpoint,
    whose rerun stops before the MLP output projection
    (:mod:`~clusterforge.perf.early_stop`); off by default.
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
    loss_parallel: bool = False
    liger_kernels: bool = False
    weight_bytes: float = 2.0
    fp8_weight_bytes: float = 2.0
    fp8_copy_bytes: float = 1.0
    quantized_params: tuple[str, ...] = ()
    grad_buffer_bytes: float = 4.0
    optimizer_bytes: float = 12.0
    fsdp_prefetch: int = 1
    fsdp_unit_params: float = 0.0
    unit_grad_bytes: float = 0.0
    fsdp_reshard_after_forward: bool = True
    fsdp_backward_prefetch: FsdpBackwardPrefetch = "pre"
    train_metric_passes: int = 0
    optimizer: OptimizerImpl = "fused"
    zero2_per_unit: bool = False
    flash_unpad: bool = False
    zero3_gathers_per_layer: int = 1
    fsdp_copy_out: bool = False
    fsdp_copy_in: bool = False
    scan_carry_copies: bool = False
    xla_pipelined_all_gather: bool = True
    unrolled_all_reduce_combine_bytes: float = 0.0
    fsdp_grad_prep: bool = False
    pipelined_fsdp_no_sync: bool = False
    selective_recompute: SelectivePolicy = "attention"
    master_in_parameters: bool = False
    zero3_reduce_bucket_params: float = 0.0
    fused_elementwise: bool = True
    fp8_scaling: Fp8Scaling = "delayed"
    fp8_fused_norm_cast: bool = True
    fp8_all_gather: bool = False
    fp8_torchao: bool = False
    fp8_amax_all_reduce: bool = True
    fp8_amax_history: int = 1
    tp_layout_copies: bool = False
    tp_saves_gathered_input: bool = False
    tp_fp8_all_gather: bool = False
    moe_dispatch_sync: bool = True
    moe_drop_and_pad: bool = False
    moe_random_routing: bool = False
    moe_dispatch_metadata: bool = True
    moe_expert_bias_eager: bool = True
    moe_glu_clamp_eager: bool = True
    moe_fp8_padding: bool = True
    moe_dispatcher: MoeDispatcher = "alltoall"
    moe_flex_sms: int = 20
    moe_a2a_overlap: bool = False
    param_gather_one_ahead: bool = True
    fsdp_root_once_per_step: bool = False
    fsdp2_root_unit: Fsdp2RootUnit = "none"
    cuda_graph_modules: tuple[CudaGraphModule, ...] = ()
    recompute_modules: tuple[RecomputeModule, ...] = ()
    distribute_checkpoints: bool = False
    remat_saved: tuple[RematName, ...] = ()
    checkpoint_early_stop: bool = False
    embedding_onehot: bool = False
    layer_input_dropout: bool = False
    eager_rotary: bool = False
    yarn_rotary_unfused: bool = True

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
        """The ``megatron-core`` stack: every field at its default."""
        return cls()
