"""Fine-grained activation offloading: the saved inputs of named modules wait in host memory.

Megatron-Core's ``--fine-grained-activation-offloading --offload-modules ...``
(NVIDIA/Megatron-LM ``docs/source/api-guide/fine_grained_activation_offloading.md``;
``megatron/core/pipeline_parallel/fine_grained_activation_offload.py`` @008df8aca148,
``PipelineOffloadManager``) records, through saved-tensor hooks, the tensors a module saves
for its backward, copies them to pinned host memory on a dedicated device-to-host stream once
the module's forward is committed and frees them on the GPU; in the backward the main stream
waits on each group's reload event (host-to-device stream), the next group's reload
prefetched behind it. In ``TEGroupedMLP.forward`` (``megatron/core/transformer/moe/
experts.py``) the ``expert_fc1`` group wraps the experts' first grouped GEMM and the
``moe_act`` group the (recomputed) activation. Megatron-MoE-ModelZoo's Qwen3-235B GB200 MXFP8
command offloads both (yanring/Megatron-MoE-ModelZoo ``best_practice/qwen3/readme.md``
@e8650517d60d).

Priced here, per layer and micro-batch (the terms of
:func:`~clusterforge.perf.memory.activation_bytes_per_layer`):

- ``expert_fc1``: the first GEMM's saved input, the top-k dispatched copies of each token
  (``gemm_in`` bytes per element: the quantized column-wise copy under FP8 and MXFP8);
- ``moe_act``: the activation's saved input, the first GEMM's output (gate and up, BF16,
  ``2 x 2 f`` bytes per routed token), which ``moe_act`` recomputation keeps.

Left out: the manager keeps the last group of each name on the GPU so that its reload does
not block the compute stream (one layer's worth, ``_offload_margin``).

Time: the copies run on side streams over the GPU-host link while the layer's later
modules and the next layers compute; like whole-layer offloading (:mod:`.offload`) a
layer's copies are exposed only by what exceeds one layer's forward or backward.
"""

from __future__ import annotations

from typing import Literal

from clusterforge.catalog import ModelArch
from clusterforge.perf.blockscale import is_block_scaled, saved_input_bytes
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.parallel import ParallelPlan

__all__ = ["OFFLOAD_MODULES", "OffloadModule", "offloaded_module_bytes"]

OffloadModule = Literal["expert_fc1", "moe_act"]
OFFLOAD_MODULES: tuple[OffloadModule, ...] = ("expert_fc1", "moe_act")


def _gemm_input_bytes(plan: ParallelPlan) -> float:
    """Bytes per element of a GEMM input kept for its weight gradient (as the memory model)."""
    if is_block_scaled(plan.precision):
        return saved_input_bytes(plan.precision)
    return 1.0 if plan.precision == "fp8" else 2.0


def offloaded_module_bytes(arch: ModelArch, plan: ParallelPlan) -> float:
    """Saved bytes of one layer and micro-batch on one GPU that the plan's offloaded modules
    move to host memory (0 for dense layers: both modules are the experts')."""
    if arch.num_experts <= 1 or not plan.offload_modules:
        return 0.0
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    routed = tokens * arch.top_k
    moved = 0.0
    if "expert_fc1" in plan.offload_modules:
        moved += routed * arch.hidden_size * _gemm_input_bytes(plan)
    if "moe_act" in plan.offload_modules:
        moved += routed * 4.0 * ffn_size(arch) / plan.layout.tp
    return moved
