"""The kinds a :class:`~clusterforge.perf.stack.Stack` field can take, each with the
mechanism it names and its source."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ZERO3_DEEPSPEED_GATHERS_PER_LAYER",
    "AttentionKernel",
    "ContextParallelKernel",
    "CrossEntropyKernel",
    "CudaGraphModule",
    "Fp8Scaling",
    "Fsdp2RootUnit",
    "FsdpBackwardPrefetch",
    "MoeDispatcher",
    "OptimizerImpl",
    "RecomputeModule",
    "RematName",
    "SelectivePolicy",
    "TpOverlapKind",
]

Fp8Scaling = Literal["delayed", "dynamic"]
# ``flash``: FlashAttention-2 (CUDA); ``cudnn``: cuDNN fused flash attention (Transformer
# Engine on Hopper+); ``sdpa_flash``: PyTorch SDPA's in-tree FlashAttention-2 build (the
# flash backend of ``F.scaled_dot_product_attention``, first in SDPA's order on H100 since
# PyTorch 2.5.1 made cuDNN opt-in, pytorch#138522); ``triton``: HazyResearch's Triton
# FlashAttention ``flash_attn/flash_attn_triton.py``, which LLM Foundry <= 0.3 vendors for
# MPT's ``attn_impl: triton`` (``llmfoundry/models/layers/flash_attn_triton.py``);
# ``unfused``: explicit score GEMM, fused softmax and context GEMM.
AttentionKernel = Literal["flash", "sdpa_flash", "cudnn", "triton", "unfused"]
# ``te``: Transformer Engine's context parallelism (``AttnFuncWithCPAndKVP2P``: K, V passed
# around a ring step by step, or gathered on the critical path when ``cp_overlap`` is off);
# ``torch``: PyTorch's experimental ``context_parallel``
# (``torch.distributed.tensor.experimental._attention``, ``_templated_ring_attention`` and
# its backward, as torchtitan runs it with the default ``rotate_method = "allgather"``):
# K, V all-gathered once per attention call behind its first step, one SDPA call per step
# whose output and log-sum-exp are merged in FP32, dK, dV accumulated in FP32 and passed
# to the next rank after every backward step.
ContextParallelKernel = Literal["te", "torch"]
# ``unfused``: Megatron's FP32 vocab-parallel chain; ``te``: Transformer Engine's Triton
# kernels (gradient written in place in the forward); ``xentropy``: the fused CUDA
# softmax cross-entropy of apex / flash-attention ``csrc/xentropy`` (MPT's default
# ``loss_fn: fused_crossentropy``, ``flash_attn.losses.cross_entropy.CrossEntropyLoss``);
# ``torch``: PyTorch's eager ``F.cross_entropy`` on an FP32 copy of the logits, as
# torchtitan's ``loss_fn`` runs it (``pred.flatten(0, 1).float()``, not compiled: train.py
# at 9dec370).
CrossEntropyKernel = Literal["unfused", "te", "xentropy", "torch"]
# What ``recompute = "selective"`` keeps. ``attention``: Megatron's selective recomputation
# (Korthikanti et al. 2022 §5: only the attention core is recomputed; nothing with flash
# attention). ``every_other_matmul``: torchtitan's selective op checkpointing
# (``selective_ac_option = "op"``, torchtitan ``activation_checkpoint.py``): each block
# saves the outputs of its matmuls except every second one and of the attention kernel,
# and recomputes the rest (the other matmuls, norms, rotary, activation) in the backward.
# ``saved_names``: JAX's ``save_only_these_names`` policies as MaxText's ``remat_policy``
# applies them: the named tensors of ``Stack.remat_saved`` are kept, the rest of what the
# backward reads is recomputed (:mod:`clusterforge.perf.remat`).
SelectivePolicy = Literal["attention", "every_other_matmul", "saved_names"]
# MaxText's checkpoint names of a decoder layer (``checkpoint_name`` in
# ``MaxText/layers/attentions.py`` and ``linears.py``, AI-Hypercomputer/maxtext at 8e55ab1,
# 2024-12-09). ``qkv_proj`` tags the fused QKV projection, which Llama runs without
# (``fused_qkv: False`` in ``configs/base.yml``): saving it keeps nothing more there.
RematName = Literal[
    "query_proj", "key_proj", "value_proj", "qkv_proj", "context", "out_proj", "mlpwi", "mlpwo"
]
# Megatron-Core's per-layer CUDA-graph capture scopes that an MoE layer can use
# (``--cuda-graph-modules``, docs/user-guide/features/cuda_graph.md, NVIDIA/Megatron-LM at
# d98e8a6): the attention block, the router, the dispatcher's preprocess.
CudaGraphModule = Literal["attn", "moe_router", "moe_preprocess"]
# How ``tp_overlap`` hides the sequence-parallel TP collectives. ``userbuffers``: Megatron-Core
# / Transformer Engine ``--tp-comm-overlap``, the collective split into chunks pipelined with
# the GEMM inside one module, forward and backward alike. ``micro_pipeline``: PyTorch's async
# TP (``torch._inductor.config._micro_pipeline_tp``, torchtitan's
# ``enable_async_tensor_parallel`` under ``torch.compile``): an Inductor pass
# (``torch/_inductor/fx_passes/micro_pipeline_tp.py``) rewrites an all-gather whose result
# feeds matmuls as their left operand into ``fused_all_gather_matmul``, and a reduce-scatter
# whose input is one matmul's output into ``fused_matmul_reduce_scatter``; each is decomposed
# into one matmul per rank's chunk with copy-engine peer copies through symmetric memory
# (``torch/distributed/_symmetric_memory/__init__.py``); other collectives stay NCCL's.
TpOverlapKind = Literal["userbuffers", "micro_pipeline"]
# Megatron-Core's selective recompute modules that act on an MoE layer beyond core
# attention (``--recompute-modules``, megatron/core/transformer/transformer_layer.py and
# moe/experts.py, core_v0.15.0): the norms not fused into a linear, the experts' activation.
RecomputeModule = Literal["layernorm", "moe_act"]
# Megatron-Core's MoE token dispatcher (``moe_token_dispatcher_type``,
# megatron/core/transformer/moe/token_dispatcher.py, NVIDIA/Megatron-LM at d98e8a6).
# ``alltoall``: ``MoEAlltoAllTokenDispatcher``, permutation kernels around NCCL all-to-alls,
# a token-count all-gather and a separate probabilities all-to-all. ``flex``:
# ``MoEFlexTokenDispatcher`` with a DeepEP or HybridEP backend, whose one fused kernel
# permutes, sends (tokens with their probabilities) and sorts into expert order, and whose
# combine unpermutes and sums the top-k copies on the way back (``_HybridEPManager`` /
# ``_DeepepManager``), on ``moe_flex_dispatcher_num_sms`` SMs of its own.
MoeDispatcher = Literal["alltoall", "flex"]
# FSDP1's ``backward_prefetch``. ``pre`` (``BACKWARD_PRE``): the next unit's all-gather is
# issued in the current unit's pre-backward hook and runs behind its gradient computation.
# ``post`` (``BACKWARD_POST``, Composer's default: ``fsdp_config.setdefault(
# 'backward_prefetch', 'BACKWARD_POST')`` in ``composer/trainer/dist_strategy.py``,
# v0.14-v0.17): it is issued in the current unit's post-backward hook
# (``_post_backward_reshard`` calls ``_prefetch_handle``, PyTorch 2.0-2.1
# ``torch/distributed/fsdp/_runtime_utils.py``), once the unit's gradients exist, ahead of
# its reduce-scatter on the same NCCL stream, so the next unit's backward waits for the whole
# gather; only the reduce-scatter overlaps compute.
FsdpBackwardPrefetch = Literal["pre", "post"]
# Which models' ZeRO-3 runs FSDP2's ``fully_shard`` of the whole model last, as a root unit
# over the embedding, final norm and output layer that stays unsharded from the forward to
# the end of the backward (:mod:`clusterforge.perf.fsdp2_memory`). ``all``: torchtitan
# (pytorch/torchtitan@9dec370 ``parallelize_llama.py`` lines 329-339; the root's no-reshard
# is FSDP2's own rule). ``dense``: NeMo AutoModel, whose dense models are sharded layer by
# layer and then as ``fully_shard(model, ..., reshard_after_forward=False)``
# (NVIDIA-NeMo/Automodel@2013a4dd6 ``nemo_automodel/components/distributed/parallelizer.py``,
# ``DefaultParallelizationStrategy.parallelize`` lines 290-307), while its MoE models shard
# the embedding and the output layer as units of their own and the root holds the final norm
# (Automodel@8d9bfb90e ``nemo_automodel/components/moe/parallelizer.py`` lines 165-172).
# ``none``: no FSDP2 root unit (FSDP1, DeepSpeed, Megatron's distributed optimizer and
# Megatron-FSDP, XLA).
Fsdp2RootUnit = Literal["none", "all", "dense"]
# How the optimizer step runs. ``fused``: one pass per parameter over the weights, the
# gradient and the moments (fused or multi-tensor Adam; ``optimizer_bytes_per_param``).
# ``per_tensor_sync``: Composer's ``DecoupledAdamW`` (``composer/optim/decoupled_weight_decay.py``,
# v0.16.3-v0.17.2; LLM Foundry's ``decoupled_adamw``): a Python loop over the parameter tensors
# that have a gradient, each reading its step counter, a GPU tensor, with ``.item()`` (the host
# waits for the GPU) and then issuing eight unfused in-place and temporary ops.
OptimizerImpl = Literal["fused", "per_tensor_sync"]

# DeepSpeed ZeRO-3 fetches parameters module by module (``PartitionedParameterCoordinator.
# fetch_sub_module``): the four weight matrices of a transformer layer (QKV, projection,
# MLP in, MLP out) are four fetches, each one all-gather call unless the prefetch bucket
# (``stage3_prefetch_bucket_size`` = 5e7 elements) coalesces several; parameters under
# ``stage3_param_persistence_threshold`` (1e5: norms, biases) stay whole and cost no call.
# Gradients are reduce-scattered in buckets of ``reduce_bucket_size`` = 5e8 elements
# (DeepSpeed configuration documentation, "ZeRO optimizations", defaults).
ZERO3_DEEPSPEED_GATHERS_PER_LAYER = 4
