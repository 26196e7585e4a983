"""Peak-memory parts of a Hugging Face Llama under Liger-Kernel's patches
(``Stack.liger_kernels``: ``AutoLigerKernelForCausalLM``, as the ml-engineering DeepSpeed
ZeRO-3 runs build their model, stas00/ml-engineering 380e078a
``insights/when-to-upgrade-gpus/benchmark.py``, ``USE_LIGER = 1``; Liger-Kernel 0.8.0,
linkedin/Liger-Kernel c4b16d43, the runs' release per that directory's ``install.sh``).

- The loss: ``fused_linear_cross_entropy_forward``
  (``src/liger_kernel/ops/fused_linear_cross_entropy.py``) walks the tokens in chunks of
  ``next_power_of_2(ceil(BT / ceil(V / H)))`` rows, so the whole logits never exist; it
  keeps ``grad_weight = torch.zeros_like(weight)`` (BF16, ``accum_dtype`` None) from the
  forward into the backward, and per chunk ``grad_weight += torch.mm(grad_logits_chunk.t(),
  _input_chunk).float()`` holds the BF16 product and its FP32 copy beside it: 2 + 2 + 4 B
  per output-layer weight, one chunk's BF16 logits, and, under ZeRO-3, the output weight
  gathered in BF16 (beyond the one gathered layer the model already counts).
- The recomputed layer's backward: at the down projection's backward the gradient of its
  input (BF16, ``ffn`` per token) is formed beside the layer's incoming gradient (BF16,
  ``h`` per token) while the saved gate, up and SwiGLU outputs are still alive; Liger's
  SwiGLU backward (``src/liger_kernel/ops/swiglu.py`` ``_swiglu_backward_kernel``:
  ``tl.store(a_ptr ..., da_row)``, ``tl.store(b_ptr ..., db_row)``) then writes its two
  gradients into the saved gate and up tensors, so nothing larger follows.
"""

from __future__ import annotations

import math

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import BF16_BYTES

__all__ = ["LIGER_WEIGHT_GRAD_BYTES", "liger_layer_grad_bytes", "liger_loss_bytes"]

# grad_weight (BF16), the chunk's BF16 product and its FP32 copy, per output weight.
LIGER_WEIGHT_GRAD_BYTES = 2.0 + 2.0 + 4.0


def liger_loss_bytes(arch: ModelArch, plan: ParallelPlan, layer_params: float) -> float:
    """Liger's fused linear cross-entropy on one GPU at its peak (no TP: Liger's loss runs
    on the whole vocabulary); ``layer_params`` are those of the one gathered layer."""
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    h, v = arch.hidden_size, arch.vocab_size
    chunk = float(2 ** math.ceil(math.log2(math.ceil(tokens / math.ceil(v / h)))))
    gathered = BF16_BYTES * max(0.0, v * h - layer_params) if plan.zero_stage >= 3 else 0.0
    return LIGER_WEIGHT_GRAD_BYTES * v * h + gathered + BF16_BYTES * chunk * v


def liger_layer_grad_bytes(arch: ModelArch, plan: ParallelPlan) -> float:
    """The incoming gradient and the down projection's input gradient the recomputed
    layer's backward holds beside its recomputed activations."""
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    return BF16_BYTES * tokens * (arch.hidden_size + ffn_size(arch) / plan.layout.tp)
