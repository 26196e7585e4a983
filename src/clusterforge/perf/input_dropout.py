"""Dropout of every transformer layer's input (``Stack.layer_input_dropout``).

praxis' ``StackedTransformer.__call__`` drops out its input before its first layer when
``input_dropout_prob > 0`` (``x_out = self.input_dropout(x_out)``, ``praxis/layers/
transformers.py``, google/praxis at cad2a3a, 2024-03-04). Paxml's repeated models build the
stack as ``StackedTransformerRepeated`` whose block is a one-layer ``StackedTransformer``
repeated ``NUM_LAYERS`` times (``stacked_transformer_tpl.num_layers = 1``, ``x_times =
NUM_LAYERS`` in ``paxml/tasks/lm/model_params.py``), so the dropout runs on every layer's
input; ``GPT5BBase`` sets ``input_dropout_prob = 0.1`` on that block
(``paxml/contrib/gpu/scripts_gpu/configs.py``, nvjax-svc-0/paxml branch
``patch/te_support-2024-03-08``, the configuration behind NVIDIA's Paxml containers of
2024), and ``GPT175BBase`` none.

Priced as HBM traffic of one element-wise pass (BF16 read and write of the layer input:
``INPUT_DROPOUT_PASS_BYTES`` per element) in the forward, again in the recomputed forward
when the layer is rematerialised (full recomputation, or a named-tensor policy, which does
not name the dropout's output: the backward of the layer's first norm reads it), and one
pass over its gradient in the backward. Without recomputation the mask is kept for the
backward, one byte per element written and read. The random bits (JAX's threefry) are
not priced, so this is a lower bound.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.remat import saves_named_tensors
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack_base import Stack

__all__ = ["INPUT_DROPOUT_PASS_BYTES", "input_dropout_bytes", "input_dropout_s"]

# One BF16 element read and one written by a dropout pass (2 + 2 bytes).
INPUT_DROPOUT_PASS_BYTES = 4.0
# The 1-byte mask kept without recomputation: written in the forward, read in the backward.
KEPT_MASK_BYTES = 2.0


def _recomputed(plan: ParallelPlan, stack: Stack) -> bool:
    """Whether the layer's forward, its input dropout included, runs again in the backward."""
    return plan.recompute == "full" or saves_named_tensors(plan, stack)


def input_dropout_bytes(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> tuple[float, int]:
    """(HBM bytes, kernels) of one layer's input dropout per micro-batch on one GPU, forward,
    recomputation and backward together; (0, 0) unless ``Stack.layer_input_dropout``."""
    if not stack.layer_input_dropout:
        return 0.0, 0
    elements = tokens_per_gpu(plan) * arch.hidden_size
    if plan.sequence_parallel:
        elements /= plan.layout.tp
    if _recomputed(plan, stack):
        return 3 * INPUT_DROPOUT_PASS_BYTES * elements, 3
    return (2 * INPUT_DROPOUT_PASS_BYTES + KEPT_MASK_BYTES) * elements, 2


def input_dropout_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per micro-batch of the input dropouts of ``layers`` layers on one GPU."""
    num_bytes, kernels = input_dropout_bytes(arch, plan, stack)
    if kernels == 0:
        return 0.0
    return layers * memory_time_s(num_bytes, perf, num_kernels=kernels)
