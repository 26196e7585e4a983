"""Megatron-FSDP's root module and FP8 shard scales: what it adds to per-unit FSDP.

Megatron-FSDP (Megatron-Core's fully sharded data parallelism, ``use_megatron_fsdp`` with
``data_parallel_sharding_strategy = "optim_grads_params"``; NVIDIA/Megatron-LM
``megatron/core/distributed/fsdp/mcore_fsdp_adapter.py`` and
``megatron/core/distributed/fsdp/src/megatron_fsdp/`` at 0d8e0714cd29, the pin of
NVIDIA-NeMo/Megatron-Bridge v0.2.1, the same at core_v0.14.0 and at d98e8a64dd, 2026-08)
gathers and reduce-scatters each transformer layer as
:func:`~clusterforge.perf.sharded.zero3_exposed_s` prices, and differs in two places:

* Only ``TransformerLayer`` is an FSDP unit (``fsdp_unit_modules = [TransformerLayer]``).
  The embedding, the output layer and the final norm are gathered by their own forward
  pre-hook (``_pre_forward_param_unshard`` with ``recurse=False``), in BF16, and never
  released within the step: ``_post_forward`` and the release in ``_post_backward`` act on
  units only, ``_root_pre_backward`` marks only unit buckets releasable
  (``group.fsdp_unit_id is not None``), and ``all_gather_params`` gathers only buckets that
  are ``EMPTY``. So they are all-gathered once per step, while their gradients are
  reduce-scattered after every micro-batch's backward (``grad_reduce_every_bprop`` for
  ``optim_grads_params``). The per-unit pricing gathers the embedding every micro-batch
  (:func:`~clusterforge.perf.sharded.unit_collectives`, ``ends``); an untied output layer
  (vocabulary x hidden) is a second gather, prefetched in forward order behind the last
  layer's forward, and a second reduce-scatter, behind the last layer's backward.
* With FP8 parameters (``fp8_param_gather``, set by Megatron-Bridge's
  ``bf16_with_fp8_current_scaling_mixed``) each step ends by quantizing the FP32 shards
  (``quantize_param_shard``, ``megatron_fsdp/utils.py``, which with Transformer Engine 2.3
  or later calls TE's ``cast_master_weights_to_fp8`` with the data-parallel group; its
  current-scaling path, ``_cast_master_weights_to_fp8_current_scaling`` in NVIDIA/
  TransformerEngine ``transformer_engine/pytorch/tensor/utils.py``, computes each shard's
  amax and all-reduces the packed float32 amaxes, one per FP8 weight, with ``MAX`` over
  the group): four per layer (QKV, projection, FC1, FC2), one call, exposed.

Neither grows much with the data-parallel width: each is one call (or two per
micro-batch) at the shard group's collective time.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes, overlapped_s
from clusterforge.perf.parallel import ParallelPlan, shard_groups
from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.stack import Stack

__all__ = ["AMAX_BYTES", "FP8_WEIGHTS_PER_LAYER", "root_module_delta_s"]

# TE linears of a Megatron-Core GPT layer that hold an FP8 weight: linear_qkv, linear_proj,
# linear_fc1, linear_fc2 (one amax each in quantize_param_shard's packed all-reduce).
FP8_WEIGHTS_PER_LAYER = 4
AMAX_BYTES = 4  # one float32 amax per weight (``packed_amaxes``, torch.float32)


def root_module_delta_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    *,
    layers: int,
    num_micro: int,
) -> float:
    """Seconds per step that Megatron-FSDP's root module and FP8 shard scales change in the
    per-unit ZeRO-3 pricing of a stage with ``layers`` layers (PP = 1): the embedding
    gathered once per step instead of once per micro-batch (negative), an untied output
    layer's gather and reduce-scatter behind one layer's forward and backward, and the
    amax all-reduce of FP8 parameters. Zero without ``Stack.fsdp_root_once_per_step``."""
    if not stack.fsdp_root_once_per_step or plan.zero_stage != 3 or plan.layout.pp > 1:
        return 0.0
    shard, _ = shard_groups(plan)
    if shard.shape[1] < 2:
        return 0.0
    matrix = arch.vocab_size * arch.hidden_size / plan.layout.tp
    gather_s = comm.collective_time_s("all_gather", matrix * BF16_BYTES, shard)
    delta = -(num_micro - 1) * gather_s
    if not arch.tied_embeddings:
        reduce_s = comm.collective_time_s("reduce_scatter", matrix * stack.grad_reduce_bytes, shard)
        delta += overlapped_s(gather_s, times.forward_s)
        delta += num_micro * overlapped_s(reduce_s, times.backward_s + times.recompute_s)
    if plan.precision == "fp8" and stack.gathered_weight_bytes("fp8") <= 1.0:
        amax_bytes = FP8_WEIGHTS_PER_LAYER * layers * AMAX_BYTES
        delta += comm.collective_time_s("all_reduce", amax_bytes, shard)
    return delta
