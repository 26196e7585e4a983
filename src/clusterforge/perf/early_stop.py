"""Early stop of PyTorch's non-reentrant activation checkpointing.

A block wrapped by ``checkpoint_wrapper`` with ``CheckpointImpl.NO_REENTRANT`` (Composer's
FSDP with LLM Foundry's ``activation_checkpointing_reentrant: false``,
``composer/trainer/dist_strategy.py`` v0.17.2) reruns its forward in the backward only until
every tensor the original forward saved for the backward has been rebuilt: the rerun counts
the tensors it packs and raises ``_StopRecomputationError`` at the last one
(``torch/utils/checkpoint.py``, ``_recomputation_hook``; early stop on by default since
pytorch/pytorch PR #96866, March 2023, so in PyTorch 2.1). Autograd packs an operator's
saved inputs before its kernel runs, so the rerun ends before the last operator that saves
anything runs its kernel. In a pre-norm transformer block that operator is the MLP output
projection (it saves its input and weight); the residual add after it saves nothing. The
recomputation therefore skips the output projection's GEMM and the last residual add:
about a third of a dense block's GEMM FLOPs for a 4x MLP.

Not applied (the whole forward reruns, as before) when the skip is not established here:
reentrant checkpointing (``torch.autograd.Function`` reruns the segment to its end), a
compiled block (``Stack.fused_elementwise``: the partitioner, not the checkpoint, decides
what reruns), FP8 (torchao's float8 matmul is a custom ``autograd.Function``, which saves
its tensors after its GEMM has run), an MoE layer, a parallel block, and tensor parallelism.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size, recompute_flops_per_token
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.remat import named_recompute_flops
from clusterforge.perf.roofline import BF16_BYTES, GpuPerf, gemm_time_s, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["early_stop_skipped_s", "recomputed_flops_per_token", "stops_early"]

RESIDUAL_ADD_TENSORS = 3  # the add reads two tensors and writes one


def stops_early(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> bool:
    """Whether a fully recomputed layer's rerun stops before its MLP output projection
    (see the module docstring for the conditions)."""
    return (
        plan.recompute == "full"
        and stack.checkpoint_early_stop
        and not stack.fused_elementwise
        and plan.precision != "fp8"
        and arch.num_experts == 1
        and not arch.parallel_block
        and plan.layout.tp == 1
    )


def early_stop_skipped_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> float:
    """Seconds of one layer's forward that the early-stopped recomputation does not rerun:
    the MLP output projection's GEMM and the last residual add (0 when it does not stop
    early)."""
    if not stops_early(arch, plan, stack):
        return 0.0
    tokens, h = tokens_per_gpu(plan), arch.hidden_size
    projection = gemm_time_s(tokens, h, ffn_size(arch), perf)
    residual = memory_time_s(RESIDUAL_ADD_TENSORS * BF16_BYTES * h * tokens, perf)
    return projection + residual


def recomputed_flops_per_token(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> float | None:
    """Forward FLOPs per trained token that the recomputation re-executes (all layers, HFU
    numerator) where the stack states them: a named-tensor policy's
    (:func:`~clusterforge.perf.remat.named_recompute_flops`), or a whole forward less the
    MLP output projections (``2 h f`` per token and layer) when the rerun stops early; None
    otherwise (the default count of
    :func:`~clusterforge.perf.flops.hardware_flops_per_step`)."""
    named = named_recompute_flops(arch, plan, stack)
    if named is not None or not stops_early(arch, plan, stack):
        return named
    whole = recompute_flops_per_token(arch, plan.seq_length, "full")
    return whole - arch.num_layers * 2.0 * arch.hidden_size * ffn_size(arch)
