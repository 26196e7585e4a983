"""Adam's state per parameter by how the optimizer stores it (``optimizer_state``).

``"fp32"`` is the stack's own layout (``Stack.optimizer_bytes``: FP32 moments, and FP32
master weights where the weights are not FP32). Two others are what the NVIDIA stacks run:

- ``"fp32-remainders"``: the FP32 master weight is kept as its low 16 bits only; the high 16
  bits are the BF16 weight itself, so the master is rebuilt exactly from the two. Apex
  ``DistributedFusedAdam(store_params=False, store_param_remainders=True)`` allocates one
  ``torch.int16`` ``param_remainders_shard`` beside the FP32 ``exp_avg_shard`` and
  ``exp_avg_sq_shard`` and refuses it unless the state is FP32 and the parameters BF16
  (NVIDIA/apex ``apex/contrib/optimizers/distributed_fused_adam.py`` at 6424da3b);
  NeMo 1.0's ``setup_optimization`` sets it when the optimizer dtype is FP32, the model BF16
  and ``fp8_params`` off (NVIDIA/NeMo ``nemo/collections/nlp/models/language_modeling/
  megatron_base_model.py`` at v2.0.0 e938df32 and v2.1.0 633cb602); Transformer Engine's
  ``FusedAdam(store_param_remainders=True)``, which Megatron-Core's precision-aware
  distributed optimizer passes (``OptimizerConfig.store_param_remainders``,
  NVIDIA/Megatron-LM core_v0.13.0 c550cf6c), stores an ``int16`` master likewise and
  "works only when param type is BF16" (NVIDIA/TransformerEngine v2.4 ``fused_adam.py``).
  12 - 2 = 10 bytes where the stack keeps FP32 masters.
- ``"bf16"``: Apex ``DistributedFusedAdam(dtype=torch.bfloat16)`` keeps both moments in
  BF16 and, when the optimizer dtype equals the model's, no master copy (NeMo sets
  ``store_params=False``), so the BF16 weights are updated in place: 2 + 2 = 4 bytes. With
  FP8 parameters (NeMo ``fp8_params``) NeMo sets ``store_params=True`` and Apex allocates
  ``params_shard`` in the state dtype: 2 + 2 + 2 = 6 bytes (same sources).
"""

from __future__ import annotations

from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.stack_base import Stack
from clusterforge.spec.optimizer_state import (
    BF16_STATE_STACKS,
    OPTIMIZER_STATES,
    REMAINDER_STACKS,
    OptimizerState,
    optimizer_state_error,
)

__all__ = [
    "BF16_STATE_STACKS",
    "OPTIMIZER_STATES",
    "REMAINDER_STACKS",
    "OptimizerState",
    "optimizer_state_bytes",
    "optimizer_state_error",
]

# The 16 bits of an FP32 master that the BF16 weight already holds (BF16 is the high half
# of FP32: 1 sign, 8 exponent and 7 mantissa bits).
REMAINDER_SAVED_BYTES = 2.0


def optimizer_state_bytes(state: OptimizerState, precision: str, stack: Stack) -> float:
    """Bytes of optimizer state per parameter (before ZeRO sharding) for ``state``."""
    match state:
        case "fp32":
            return stack.optimizer_bytes
        case "fp32-remainders":
            return stack.optimizer_bytes - REMAINDER_SAVED_BYTES
        case "bf16":
            fp8_params = precision == "fp8" and stack.fp8_weight_bytes <= 1.0
            return 2 * BF16_BYTES + (BF16_BYTES if fp8_params else 0.0)
