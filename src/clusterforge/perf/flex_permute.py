"""The flex MoE dispatcher's permutation passes around its dispatch and combine kernels.

Megatron-Core's flex token dispatcher (``MoEFlexTokenDispatcher``) hands a token to a rank
once per destination rank (:func:`~clusterforge.perf.moe.flex_ranks_per_token`), and the
grouped expert GEMMs want one row per routed copy in expert order. The rows arrive by rank,
so a separate permutation turns the received rows into expert-major copies after the
dispatch and an unpermutation sums each token's copies back into one row per rank before
the combine:

- DeepEP backend: ``_DeepepManager.get_permuted_hidden_states_by_experts`` calls
  ``permute(..., fused=moe_permute_fusion)`` (Transformer Engine's ``moe_permute``) on the
  dispatched rows and ``get_restored_hidden_states_by_experts`` calls ``unpermute``
  (megatron/core/transformer/moe/token_dispatcher.py, NVIDIA/Megatron-LM 2edffad, the
  Megatron Core of Megatron-Bridge v0.4.2; NeMo AutoModel's copy, nemo_automodel/components/
  moe/megatron/token_dispatcher.py at 8d9bfb90e, does the same).
- HybridEP backend: ``HybridEPBuffer.dispatch_with_permute`` runs the dispatch kernel, then,
  unless ``fuse_permute_dispatch`` is set, a standalone permute kernel reading the received
  rows from its NVLink buffer and writing the expert-major copies
  (``Executor::dispatch_postprocess``, ``permute_launcher``); ``combine_with_unpermute`` runs
  the standalone unpermute kernel before the combine kernel (``Executor::combine_preprocess``,
  ``unpermute_launcher``) (deepseek-ai/DeepEP branch hybrid-ep, csrc/hybrid_ep/executor/
  executor.cu at 94a9f8f; at 7febc6e, Feb 2026, the same two kernels were the only path, the
  fused one came with a0d27f1, Mar 2026). Megatron-Core passes ``fused`` only from
  ``moe_permute_fusion_into_hybridep``, False by default (transformer_config.py at 2edffad),
  and not at all at 55ac708 and d728871 (Megatron-Bridge v0.3.1 and v0.4.0), and falls back
  to the unfused path on a DeepEP build without the option (``HybridEPDispatch.forward``,
  fused_a2a.py): no Megatron-Bridge recipe sets it (v0.2.0 to v0.5.0).

Each pass reads its input rows and writes its output rows once, BF16 [D]: the permutation
reads ``R`` received rows and writes ``C`` copies, the unpermutation reads the ``C`` copies
and writes ``R`` rows, ``R = tokens x ranks per token`` (by symmetry each rank receives as
many (token, rank) pairs as it sends), ``C = tokens x top_k``. The backward runs the same two
passes on the gradients (the combine's backward is a dispatch with its permutation, the
dispatch's backward a combine with its unpermutation). The FP32 probabilities that ride
along (one per copy, against ``h`` BF16 elements per row) are left out, and so is the
re-reading of a received row for each of its local copies (up to ``C - R`` more rows read,
counted once: a lower bound).
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.moe import flex_ranks_per_token
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["FLEX_PERMUTE_KERNELS", "flex_permute_bytes", "flex_permute_s"]

FLEX_PERMUTE_KERNELS = 2  # the permutation and the unpermutation, each direction


def flex_permute_bytes(arch: ModelArch, plan: ParallelPlan) -> float:
    """HBM bytes of one direction's permutation and unpermutation on one GPU, one
    micro-batch: ``2 x (R + C) x h x 2`` (module docstring), ``h`` split over TP under
    sequence parallelism as the dispatcher's rows are."""
    shard = plan.layout.tp if plan.sequence_parallel else 1
    tokens = tokens_per_gpu(plan) / shard
    received = tokens * flex_ranks_per_token(arch, plan)
    copies = tokens * arch.top_k
    return 2.0 * (received + copies) * arch.hidden_size * BF16_BYTES


def flex_permute_s(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """(forward, backward) seconds of one MoE layer's flex-dispatcher permutation passes.

    Zero for dense models and the all-to-all dispatcher (whose permutations are priced with
    the layer's element-wise work, :func:`~clusterforge.perf.moe.permutation_bytes_per_token`);
    otherwise :func:`flex_permute_bytes` each way in :data:`FLEX_PERMUTE_KERNELS` kernels.
    """
    if arch.num_experts == 1 or stack.moe_dispatcher != "flex":
        return 0.0, 0.0
    one_way = memory_time_s(flex_permute_bytes(arch, plan), perf, num_kernels=FLEX_PERMUTE_KERNELS)
    return one_way, one_way
