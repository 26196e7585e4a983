"""FSDP2's root unit in memory: its unsharded parameters and its block in the copy-in pool.

torchtitan shards each transformer block with ``fully_shard`` and then the whole model, the
root unit, which holds what no block holds: the token embedding, the final norm and the
output layer (pytorch/torchtitan@9dec370 ``torchtitan/parallelisms/parallelize_llama.py``
lines 329-339). Two rules of FSDP2 make that unit cost more than the model's per-block
working set (two gathered blocks and one block's gradients,
:func:`clusterforge.perf.memory.memory_per_gpu`), read in the PyTorch releases that bracket
the torch commit of the torchtitan memory rows (1963fc83, 2024-12-23): pytorch/pytorch v2.6.0
(2236df17) and v2.7.0 (13417947), read in their PyPI wheels,
``torch/distributed/fsdp/_fully_shard/`` (line numbers v2.6.0 / v2.7.0):

* The root stays unsharded from its all-gather at the start of the forward to its reshard
  after the backward: ``FSDPState._lazy_init`` sets the root's ``post_forward_mesh_info =
  None`` ("For the root, do not reshard after forward", ``_fsdp_state.py`` line 180 / 171;
  ``FSDPParamGroup._reshard_after_forward`` is ``post_forward_mesh_info is not None``,
  ``_fsdp_param_group.py`` line 595 / 619), and its post-backward runs in
  ``_root_post_backward_final_callback`` (``_fsdp_state.py`` line 284 / 275) at the end of
  the backward. With pipeline stages every stage's units stay unsharded for the step and
  the model already counts the whole stage, so this part is zero there.
* The copy-in stream's pool holds a block as large as the largest unit's all-gather output:
  ``foreach_all_gather`` (``_fsdp_collectives.py`` line 128 / 137) allocates each unit's
  whole all-gather output (``torch.ops.fsdp.all_gather_copy_in``, ``torch.empty``, line
  59 / 82) inside ``device_handle.stream(all_gather_copy_in_stream)`` (line 138 / 147) in the
  forward and in the backward's prefetch (``FSDPCommContext.get_all_gather_streams``,
  ``_fsdp_param_group.py`` lines 82-92). PyTorch's caching allocator keeps a freed block for
  reuse on the stream that allocated it: "Allocations are associated with a stream. Once
  freed, blocks can be re-allocated on the same stream, but not on any other stream"
  (pytorch/pytorch ``c10/cuda/CUDACachingAllocator.cpp``, header comment, read in the form
  that defines ``kLargeBuffer`` in the .cpp, which the v2.6.0 and v2.7.0 headers
  ``torch/include/c10/cuda/CUDACachingAllocator.h`` line 54 declare ``extern``), and a
  cached block returns to CUDA only on an allocation failure or ``empty_cache``. So after the
  root's all-gather (the largest unit of torchtitan's Llama models: the embedding and
  output layer in BF16, since torchao's float8 converts every linear but ``output``,
  torchtitan@9dec370 ``torchtitan/float8.py`` line 99) the copy-in pool keeps a block of
  that size; the model's one prefetched block stands for one unit's all-gather output in
  that pool, so only the difference is added (the whole block with pipeline stages, where
  the model counts the stage's unsharded weights and no all-gather output).

Where it applies (``Stack.fsdp2_root_unit``, ZeRO-3): torchtitan, every model; NeMo AutoModel,
its dense models, which it shards layer by layer and then as ``fully_shard(model, ...,
reshard_after_forward=False)`` (NVIDIA-NeMo/Automodel@2013a4dd6
``nemo_automodel/components/distributed/parallelizer.py`` lines 290-307), the same root
unit. That row's torch release is not stated; the copy-in allocation is the same at v2.13.0
(``foreach_all_gather`` line 325: ``all_gather_comm.allocate`` under the copy-in stream,
``DefaultAllocMixin.allocate`` a ``torch.empty``, lines 52-59). Not AutoModel's MoE models,
whose embedding and output layer are units of their own (Automodel@8d9bfb90e
``nemo_automodel/components/moe/parallelizer.py`` lines 165-172).

Not priced: the root's all-gather output is still held (``comm_ctx.all_gather_state``,
``wait_for_unshard``, ``_fsdp_param_group.py`` line 284 / 289) when the first block's
all-gather is allocated in the same pool, which would add up to one block more; rounding
with ``expandable_segments`` (at most 20 MiB per stream).
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.stack import Stack

__all__ = ["fsdp2_root_bytes", "root_unit_applies", "root_unit_params"]


def root_unit_params(arch: ModelArch, plan: ParallelPlan) -> float:
    """Parameters of the root unit on one GPU of the first stage, after TP: the embedding,
    and the output layer when there is no pipeline and it is not tied (the final norm's
    ``hidden_size`` parameters are left out)."""
    embedding = arch.vocab_size * arch.hidden_size / plan.layout.tp
    if plan.layout.pp == 1 and not arch.tied_embeddings:
        return 2.0 * embedding
    return embedding


def root_unit_applies(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> bool:
    """True when ZeRO-3 runs FSDP2 with the whole model as its root unit
    (``Stack.fsdp2_root_unit``: every model, or dense models only)."""
    if plan.zero_stage < 3 or stack.fsdp2_root_unit == "none":
        return False
    return stack.fsdp2_root_unit == "all" or arch.num_experts == 1


def fsdp2_root_bytes(
    arch: ModelArch,
    plan: ParallelPlan,
    stack: Stack,
    layer_params: float,
    layer_units_counted: bool,
) -> float:
    """Bytes per GPU that FSDP2's root unit holds beyond the model's gathered layer units:
    its copy-in block less the one prefetched unit the model counts there
    (``layer_units_counted``: the model's per-unit working set is priced, i.e. no pipelined
    stage that stays gathered), plus its unsharded BF16 parameters without pipeline stages.
    ``layer_params``: one gathered layer unit's parameters per GPU (one transformer layer, or
    ``Stack.fsdp_unit_params`` where larger, as the model's working set counts it). Zero off
    ``Stack.fsdp2_root_unit`` and below ZeRO-3."""
    if not root_unit_applies(arch, plan, stack):
        return 0.0
    root = root_unit_params(arch, plan)
    gathered = stack.gathered_weight_bytes(plan.precision)
    block = max(BF16_BYTES * root, gathered * layer_params)
    counted = gathered * layer_params * min(1, stack.fsdp_prefetch) if layer_units_counted else 0.0
    copy_in = max(0.0, block - counted)
    unsharded = BF16_BYTES * root if plan.layout.pp == 1 else 0.0
    return copy_in + unsharded
