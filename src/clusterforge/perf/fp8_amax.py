"""Delayed scaling's amax reductions: a blocking all-reduce per model chunk and micro-batch.

Megatron-Core runs each model chunk's forward of one micro-batch (``TransformerBlock.forward``)
inside one Transformer Engine ``fp8_autocast`` when the FP8 recipe is delayed scaling
(``use_outer_fp8_context`` in ``megatron/core/transformer/transformer_block.py``,
NVIDIA/Megatron-LM 7094270; the same single autocast around the layer loop since
``core_r0.5.0``), with ``fp8_group = get_amax_reduction_group(with_context_parallel=True)``:
the tensor x data x context parallel group, every GPU of the pipeline stage
(``megatron/core/fp8_utils.py``, ``megatron/core/parallel_state.py``). Current scaling and
MXFP8 enter one autocast per layer and buffer no amaxes, so nothing below happens for them.

Transformer Engine (NVIDIA/TransformerEngine v2.2, ``transformer_engine/pytorch/fp8.py``;
the same code path from v1.6 to v2.4) keeps one global buffer per direction and (recipe,
group) holding the current amax (``amax_history[0]``) of every FP8 module of the rank that
ever ran: every chunk of the stage. ``reduce_and_update_fp8_tensors`` concatenates those
amaxes (``torch.cat``), all-reduces them with ``ReduceOp.MAX`` over the group with
``async_op=False`` (the compute stream waits for it), then runs one fused
``fused_amax_and_scale_update_after_reduction`` kernel that rolls each tensor's amax
history and recomputes its scale (``transformer_engine/common/recipe/delayed_scaling.cu``).
The message is the current amaxes only, 4 B per FP8 tensor; the history length enters the
update kernel, which reads and writes every history buffer. It runs:

* forward: when the outermost autocast exits (``fp8_autocast_exit``), once per chunk;
* backward: at the end of the chunk's first FP8 module's backward
  (``reduce_and_update_bwd_fp8_tensors`` in ``module/linear.py``, ``layernorm_linear.py``,
  ``grouped_linear.py``), once per chunk; Megatron's per-layer CUDA graphs keep it outside
  the graph (``_CudagraphReplayNode.backward``, ``megatron/core/transformer/cuda_graphs.py``)
  and the outer autocast still exits eagerly, so graphs change neither;
* full recomputation: Megatron checkpoints through Transformer Engine's ``checkpoint`` in FP8
  runs (``te_checkpoint``), whose backward reruns the unit inside a fresh ``fp8_autocast``
  with gradients enabled (``_CheckpointFunction.backward``, ``transformer_engine/pytorch/
  distributed.py``): its exit reduces the forward buffer once more per checkpointed unit,
  counted here as one per recomputed layer (``recompute_num_layers`` 1).

FP8 tensors per module (``set_meta_tensor`` in ``module/base.py``): 3 per GEMM forward
(input, weight, output), 2 per GEMM backward (output gradient, input gradient). A Megatron
layer has four GEMMs (QKV, projection, FC1 with the gate fused, FC2); a MoE layer's grouped
expert linears have one GEMM per local expert each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.perf.parallel import ParallelPlan, rank_groups, recompute_fraction
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

if TYPE_CHECKING:
    from clusterforge.catalog import ModelArch
    from clusterforge.perf.comm import CommModel

__all__ = [
    "AMAX_BYTES",
    "amax_reduction_s",
    "amax_reductions_per_micro",
    "fp8_tensors_per_layer",
]

AMAX_BYTES = 4  # FP32 amax per FP8 tensor
FORWARD_TENSORS_PER_GEMM = 3
BACKWARD_TENSORS_PER_GEMM = 2
ATTENTION_GEMMS = 2  # QKV and the output projection
MLP_LINEARS = 2  # FC1 (gate and up fused) and FC2
# Kernels per reduction: the ``torch.cat`` of the buffered amaxes and the fused update.
KERNELS_PER_REDUCTION = 2


def _applies(plan: ParallelPlan, stack: Stack) -> bool:
    return plan.precision == "fp8" and stack.fp8_scaling == "delayed" and stack.fp8_amax_all_reduce


def fp8_tensors_per_layer(arch: ModelArch, plan: ParallelPlan) -> tuple[int, int]:
    """(forward, backward) FP8 tensors with an amax in one layer (module docstring)."""
    experts = max(1, arch.num_experts // plan.layout.ep) if arch.num_experts > 1 else 1
    gemms = ATTENTION_GEMMS + MLP_LINEARS * experts
    return FORWARD_TENSORS_PER_GEMM * gemms, BACKWARD_TENSORS_PER_GEMM * gemms


def amax_reductions_per_micro(
    plan: ParallelPlan, stack: Stack, stage_layers: tuple[int, ...], layers: int
) -> tuple[int, int]:
    """(forward, backward) amax reductions of a stage holding ``layers`` layers per
    micro-batch: one per chunk each way, plus one forward per recomputed layer."""
    if not _applies(plan, stack):
        return 0, 0
    chunks = max(1, plan.layout.vpp)
    recomputed = round(recompute_fraction(plan, stage_layers) * layers)
    return chunks + recomputed, chunks


def amax_reduction_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    perf: GpuPerf,
    stage_layers: tuple[int, ...],
    layers: int,
) -> float:
    """Exposed seconds per micro-batch of the amax reductions of a stage holding ``layers``
    layers: each all-reduce over the stage's GPUs plus its concatenation and fused update
    (a pass reading and writing every amax history of that direction)."""
    forward, backward = amax_reductions_per_micro(plan, stack, stage_layers, layers)
    if forward + backward == 0:
        return 0.0
    stage_group = rank_groups(plan, "tp").reshape(1, -1)  # TP x CP x DP of one stage
    history = stack.fp8_amax_history
    total = 0.0
    for count, tensors in zip((forward, backward), fp8_tensors_per_layer(arch, plan), strict=True):
        amaxes = layers * tensors
        reduce_s = comm.collective_time_s("all_reduce", amaxes * AMAX_BYTES, stage_group)
        update_bytes = amaxes * AMAX_BYTES * (2 + 2 * history)
        update_s = memory_time_s(update_bytes, perf, num_kernels=KERNELS_PER_REDUCTION)
        total += count * (reduce_s + update_s)
    return total
