"""What-if: Liger's fused linear cross-entropy in place of the whole logits (DeepSpeed rows).

The ml-engineering DeepSpeed ZeRO-3 runs (validation/pub_mleng_zero3_h200_b200.toml) use
Liger-Kernel 0.8.0's fused linear cross-entropy; the rows state ``cross_entropy = "te"``,
which the memory model prices as the whole BF16 logits (2 B per logit). Liger's
``fused_linear_cross_entropy_forward`` (liger-kernel 0.8.0,
``liger_kernel/ops/fused_linear_cross_entropy.py``) never holds the whole logits: it walks
the tokens in chunks of ``next_power_of_2(ceil(BT / ceil(V / H)))`` (BF16 logits of one
chunk), and keeps, from the forward into the backward, ``grad_weight =
torch.zeros_like(weight)`` (BF16, ``accum_dtype`` None as the Hugging Face integration
passes it); per chunk ``grad_weight += torch.mm(grad_logits_chunk.t(), _input_chunk).float()``
holds the BF16 product and its FP32 copy beside it. Under ZeRO-3 the output layer's
weight is gathered in BF16 for the loss (beyond the one gathered layer the model counts).

The loss transient is then, per GPU, ``grad_weight`` + product + FP32 copy (8 B per output
weight), the gathered output weight above a layer's (2 B each) and one chunk's logits,
against one recomputed layer in the backward, whichever is larger. Both sides run with
``Stack.liger_kernels`` off: the Liger parts were adopted later, with the recomputed
layer's gradients (``clusterforge.perf.liger_memory``; the DeepSpeed ZeRO-3 section of
docs/validation.md), so this prints the first estimate against the model without them.

    PYTHONPATH=src:. python benchmarks/liger_flce_memory_whatif.py
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory

from clusterforge.perf.memory import (
    GIB,
    LOSS_PEAK_BYTES,
    MemoryBreakdown,
    activation_bytes_per_layer,
    layer_params_per_gpu,
    memory_per_gpu,
)
from clusterforge.perf.roofline import BF16_BYTES

# grad_weight (BF16), the chunk's BF16 product, its FP32 copy: bytes per output weight.
LIGER_WEIGHT_GRAD_BYTES = 2.0 + 2.0 + 4.0


def _liger_bytes(arch: Any, plan: Any) -> float:
    """Liger's loss transient on one GPU (no TP: the rows' runs have none)."""
    tokens = plan.micro_batch * plan.seq_length
    h, v = arch.hidden_size, arch.vocab_size
    chunk = 2 ** math.ceil(math.log2(math.ceil(tokens / math.ceil(v / h))))
    gathered = BF16_BYTES * max(0.0, v * h - layer_params_per_gpu(arch, plan))
    return LIGER_WEIGHT_GRAD_BYTES * v * h + gathered + BF16_BYTES * chunk * v


def _without_liger(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    """The model with ``Stack.liger_kernels`` off (adopted since: perf/liger_memory.py)."""
    return memory_per_gpu(arch, plan, stages, replace(stack, liger_kernels=False))


def _patched(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    mem = _without_liger(arch, plan, stages, stack)
    if stack.name != "deepspeed" or stack.cross_entropy != "te" or plan.layout.pp > 1:
        return mem
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    layer = activation_bytes_per_layer(arch, plan.with_(recompute="none"), stack)
    layer = layer if plan.recompute == "full" else 0.0
    te_loss = LOSS_PEAK_BYTES["te"] * tokens * arch.vocab_size / plan.layout.tp
    delta = max(layer, _liger_bytes(arch, plan)) - max(layer, te_loss)
    return replace(mem, activations_gib=mem.activations_gib + delta / GIB)


def main() -> None:
    compare(patched_memory(_without_liger), patched_memory(_patched))


if __name__ == "__main__":
    main()
