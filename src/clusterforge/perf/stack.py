"""Software stacks: the documented mechanisms of each training framework that change a step.

A :class:`Stack` (:mod:`clusterforge.perf.stack_base`) is a set of mechanisms, never a speed
factor. Each named stack states the defaults of that framework with their source
(:func:`stack_named`):

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
    stored in FP8 only, and delayed scaling with an amax history of 1,024
    (``fp8_amax_history_len``, ``fp8_amax_compute_algo = "max"``).
``megatron-bridge``
    NeMo Framework 25.x on Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge
    ``docs/performance-summary.md`` and ``scripts/performance``): the ``nemo`` mechanisms
    with Transformer Engine 2.x, whose attention is cuDNN's fused flash attention on Hopper
    and Blackwell (TE ``get_attention_backend`` prefers FusedAttention on sm90+ since
    TE 1.8), FP8 with current (per-tensor, per-step) scaling, the "FP8-CS" recipe of the
    published benchmarks, and Transformer Engine's fused cross-entropy
    (``cross_entropy_loss_fusion = True`` in ``GPTModelProvider``,
    ``cross_entropy_fusion_impl = "te"`` in the Llama providers and the performance scripts).
    Its MoE benchmarks force-balance the routing with random router logits and drop no
    token ("In MoE training benchmarks, we force-balance the token distribution among
    experts and all benchmarks are token-dropless", docs/performance-summary.md).
    ZeRO-3 is Megatron-FSDP (``use_megatron_fsdp``, Megatron-Core 0.14 onward), whose root
    module is gathered once per step (:mod:`clusterforge.perf.megatron_fsdp`).
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
    Full recomputation is ``checkpoint_wrapper`` with ``CheckpointImpl.NO_REENTRANT``
    (Composer with LLM Foundry's ``activation_checkpointing_reentrant: false``, fms-fsdp's
    ``non_reentrant_wrapper``), whose rerun stops early (:mod:`~clusterforge.perf.early_stop`).
    Each unit's gradient is cast to the reduce dtype and pre-divided before its
    reduce-scatter (FSDP1's flat parameter, ``_post_backward_hook`` and ``_reduce_grad``).
``torchtitan``
    torchtitan with FSDP2 (Liang et al. 2024, arXiv 2410.06511, §2-3): per-block
    ``fully_shard`` with implicit forward and backward prefetch of one block, FP32 sharded
    parameters and gradients, BF16 compute and FP32 gradient reduction
    (``training.mixed_precision_reduce = "float32"``) with FSDP2's copy-out and reduce-scatter
    copy-in, SDPA flash attention, float8 with dynamic
    tensor-wise scaling (torchao) and FP8 weight all-gather; no persistent FP8 weight copy.
    Context parallelism is PyTorch's experimental ``context_parallel`` with the all-gather
    rotation (torchtitan ``experimental.context_parallel_rotate_method = "allgather"``,
    ``torchtitan/config_manager.py`` at 9dec370, Dec 2024), under
    ``sdpa_kernel([FLASH_ATTENTION, EFFICIENT_ATTENTION])`` ("currently we only support these
    two SDP backends", ``torchtitan/utils.py`` ``get_train_context``): SDPA's FlashAttention-2,
    not cuDNN, which SDPA does not pick on its own either (cuDNN opt-in since PyTorch 2.5.1); K, V are repeated to all query heads before the attention (``repeat_kv`` in
    ``torchtitan/models/llama/model.py``). With TP the loss runs under ``loss_parallel()``
    (torchtitan ``train.py`` at 9dec370, line 57: ``parallel_dims.loss_parallel_enabled``).
``maxtext``
    MaxText on JAX/XLA (AI-Hypercomputer/maxtext ``configs/base.yml``, 8e55ab1, 2024-12-09):
    FP32 parameters and AdamW moments, XLA-fused element-wise ops, named-tensor
    ``remat_policy`` (``saved_names``), cuDNN attention (``cudnn_flash_te``), BF16 gradient
    reductions (the weight-gradient dot's BF16 output, reduced before its cast to FP32), FP8
    as Flax's ``Fp8DotGeneralOp`` (delayed scaling, inputs quantized per call in XLA fusions)
    with FP8 weight gathers (XLA's ``CollectiveQuantizer`` moves the quantization first).
    The scanned layer loop is double-buffered (``--xla_gpu_enable_while_loop_double_buffering
    =true`` in NVIDIA's dgxc-benchmarking MaxText recipes), so XLA does not copy the
    pipelined gathers' carried weights (``scan_carry_copies`` off). Those recipes and
    MaxText's A3 scripts set ``--xla_gpu_enable_pipelined_all_gather=true``
    (``xla_pipelined_all_gather`` on); a run whose XLA leaves it off states it
    (:mod:`clusterforge.perf.xla_scan`).
    A gathered layer's unsharded weight gradients are that BF16 dot output, 2 bytes per
    weight until their reduce-scatter (``unit_grad_bytes``); the FP32 gradient exists only
    sharded. The same in Paxml with Transformer Engine's JAX layers: FP32 kernels
    (``param_with_axes(..., jnp.float32)``), cast to the input's BF16 for a BF16 dot, and in
    FP8 the weight gradient written in ``grad.dtype`` (``_fp8_dot_bwd_rule``,
    ``transformer_engine/jax/dot.py``, NVIDIA/TransformerEngine at 4e2ce51, 2024-03-04).
    Embedding tables are looked up as one-hot matmuls (``embedding_onehot``): every MaxText
    GPU recipe of these runs sets ``use_iota_embed=true`` (NVIDIA/dgxc-benchmarking
    ``maxtext/configure.sh``; MaxText's A3 scripts), and Paxml's GPT configurations use
    ``lookup_style = 'matmul'`` (:mod:`clusterforge.perf.embedding`).
``automodel``
    NVIDIA NeMo AutoModel's MoE recipes (NVIDIA-NeMo/Automodel at 8d9bfb90e, 2025-10-08:
    ``nemo_automodel/components/moe/``): PyTorch FSDP2 (``fully_shard`` per block, FP32
    sharded parameters, ``MixedPrecisionPolicy`` BF16 compute and FP32 reduction, per-parameter
    copy-out and reduce-scatter copy-in), ``reshard_after_forward=False`` unless the run sets it
    (``parallelize_model``'s default), Transformer Engine ``Linear``, ``RMSNorm`` and
    ``DotProductAttention`` (cuDNN fused attention on Hopper), the experts' SwiGLU and
    quick-GEGLU under ``torch.compile`` (``moe/megatron/moe_utils.py``, ``moe/layers.py``),
    the rotary embedding in eager BF16 ops (``models/gpt_oss/layers.py``
    ``_apply_rotary_emb``), DeepEP through Megatron's ``MoEFlexTokenDispatcher`` with fused
    permutation (``GroupedExpertsDeepEP.init_token_dispatcher``), expert biases added
    expert by expert in eager (``GroupedExpertsDeepEP._apply_bias``), a host
    synchronisation per MoE layer forward (``if torch.count_nonzero(tokens_per_expert) >
    0``), full recomputation as a non-reentrant ``checkpoint_wrapper`` per block
    (``apply_ac``), no ``torch.compile`` of the model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, assert_never

from clusterforge.errors import PlanError
from clusterforge.perf.ep_overlap_rules import EP_OVERLAP_FIX
from clusterforge.perf.stack_base import STACK_NAMES, Stack, StackName
from clusterforge.perf.stack_options import ZERO3_DEEPSPEED_GATHERS_PER_LAYER
from clusterforge.spec.workload import MEGATRON_CORE_STACKS

if TYPE_CHECKING:
    from clusterforge.spec import WorkloadSpec

__all__ = ["STACK_NAMES", "Stack", "StackName", "stack_named", "workload_stack"]


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
        yarn_rotary_unfused=False,
        param_gather_one_ahead=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _pytorch(name: str, **changes: object) -> Stack:
    """PyTorch FSDP stacks: FP32 sharded parameters and moments, torchao float8 (dynamic
    scaling, no persistent FP8 copy, no fused norm cast, none of Megatron-Core's per-chunk
    Transformer Engine amax all-reduces), no Megatron TP overlap, eager
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
        fp8_amax_all_reduce=False,
        pp_overlap=False,
        pipelined_fsdp_no_sync=True,
        zero2_per_unit=True,
        moe_dispatch_sync=False,
        moe_dispatch_metadata=False,
        moe_expert_bias_eager=False,
        moe_glu_clamp_eager=False,
        moe_fp8_padding=False,
        yarn_rotary_unfused=False,
        param_gather_one_ahead=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _maxtext() -> Stack:
    """The ``maxtext`` stack (see the module docstring)."""
    return replace(
        _pytorch("maxtext", attention="cudnn", fused_elementwise=True, fp8_all_gather=True),
        grad_reduce_bytes=2,
        unit_grad_bytes=2.0,
        fp8_scaling="delayed",
        fp8_fused_norm_cast=True,
        fp8_torchao=False,
        selective_recompute="saved_names",
        embedding_onehot=True,
    )


def _torchtitan() -> Stack:
    """The ``torchtitan`` stack (see the module docstring)."""
    return _pytorch(
        "torchtitan",
        fp8_all_gather=True,
        fsdp_copy_out=True,
        fsdp_copy_in=True,
        fsdp2_root_unit="all",
        attention="sdpa_flash",
        cross_entropy="torch",
        loss_parallel=True,
        context_parallel="torch",
        kv_heads_expanded=True,
        selective_recompute="every_other_matmul",
        tp_layout_copies=True,
        tp_saves_gathered_input=True,
        tp_fp8_all_gather=True,
    )


def _automodel() -> Stack:
    """The ``automodel`` stack (see the module docstring)."""
    return _pytorch(
        "automodel",
        attention="cudnn",
        fused_elementwise=True,
        eager_rotary=True,
        fsdp_copy_out=True,
        fsdp_copy_in=True,
        fsdp_reshard_after_forward=False,
        fsdp2_root_unit="dense",
        checkpoint_early_stop=True,
        moe_dispatcher="flex",
        moe_dispatch_sync=True,
        moe_expert_bias_eager=True,
    )


def stack_named(name: StackName) -> Stack:
    """The documented mechanisms of stack ``name`` (the module docstring gives the sources)."""
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
                fp8_amax_history=1024,
            )
        case "megatron-bridge":
            return replace(
                stack_named("nemo"),
                name=name,
                attention="cudnn",
                fp8_scaling="dynamic",
                cross_entropy="te",
                moe_random_routing=True,
                fsdp_root_once_per_step=True,
                # bf16_with_mxfp8_mixed sets fp8_param_gather=True at every tag the rows ran
                # (v0.2.0 .. v0.6.0, src/megatron/bridge/training/mixed_precision.py): MXFP8
                # parameters only. bf16_with_nvfp4_mixed adds fp4_param_gather only from
                # v0.4.2, so NVFP4 keeps the BF16 parameters (blockscale.param_weight_bytes).
                quantized_params=("mxfp8",),
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
            return _pytorch(name, checkpoint_early_stop=True, fsdp_grad_prep=True)
        case "maxtext":
            return _maxtext()
        case "torchtitan":
            return _torchtitan()
        case "automodel":
            return _automodel()
        case _:
            assert_never(name)


def workload_stack(workload: WorkloadSpec, name: StackName | None = None) -> Stack:
    """Stack ``name`` (default: the workload's) with the workload's own switches of it: the
    EP all-to-all overlap (``workload.expert_parallel_overlap``, ``Stack.moe_a2a_overlap``),
    which only the Megatron-Core stacks run."""
    chosen = name or workload.stack
    if not workload.expert_parallel_overlap:
        return stack_named(chosen)
    if chosen not in MEGATRON_CORE_STACKS:
        raise PlanError(
            f"expert_parallel_overlap with stack {chosen!r}: the overlap is Megatron-Core's "
            f"overlap_moe_expert_parallel_comm; use stack {', '.join(MEGATRON_CORE_STACKS)}, "
            "or turn expert_parallel_overlap off",
            fix=EP_OVERLAP_FIX,
        )
    return replace(stack_named(chosen), moe_a2a_overlap=True)
