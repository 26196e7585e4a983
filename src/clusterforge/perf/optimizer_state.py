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

from typing import get_args

from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.stack_base import Stack
from clusterforge.spec.workload import OptimizerState

__all__ = [
    "BF16_STATE_STACKS",
    "OPTIMIZER_STATES",
    "REMAINDER_STACKS",
    "OptimizerState",
    "optimizer_state_bytes",
    "optimizer_state_error",
]

OPTIMIZER_STATES: tuple[OptimizerState, ...] = get_args(OptimizerState)

# The 16 bits of an FP32 master that the BF16 weight already holds (BF16 is the high half
# of FP32: 1 sign, 8 exponent and 7 mantissa bits).
REMAINDER_SAVED_BYTES = 2.0
# Stacks whose optimizer can keep remainders: Apex's DistributedFusedAdam under NeMo 1.0,
# Megatron-Core's precision-aware optimizer with Transformer Engine's FusedAdam (Megatron-Core,
# NeMo 2.0 and Megatron-Bridge run it); BF16 state without masters: Apex's, under NeMo 1.0.
REMAINDER_STACKS = ("megatron-core", "nemo", "megatron-bridge")
BF16_STATE_STACKS = ("nemo",)


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


def optimizer_state_error(state: object, precision: str, stack_name: str) -> str | None:
    """Why ``state`` cannot be priced for ``precision`` under stack ``stack_name``, or None."""
    if state not in OPTIMIZER_STATES:
        return (
            f"optimizer_state = {state!r}: use one of {', '.join(OPTIMIZER_STATES)} "
            "(fp32: the stack's FP32 state; fp32-remainders: FP32 moments and the low 16 bits "
            "of each FP32 master; bf16: Apex's BF16 moments without masters)"
        )
    if state == "fp32-remainders":
        if stack_name not in REMAINDER_STACKS:
            return (
                f"optimizer_state = 'fp32-remainders' with stack {stack_name!r}: remainders are "
                f"priced for {', '.join(REMAINDER_STACKS)} (Apex DistributedFusedAdam, "
                "Transformer Engine FusedAdam); use optimizer_state 'fp32'"
            )
        if precision == "fp16" or (precision == "fp8" and stack_name == "nemo"):
            return (
                f"optimizer_state = 'fp32-remainders' with precision {precision!r} under "
                f"stack {stack_name!r}: remainders need BF16 weights (the high half of the "
                "FP32 master), not FP16 ones or NeMo's FP8 parameters; use 'fp32'"
            )
    if state == "bf16" and stack_name not in BF16_STATE_STACKS:
        return (
            f"optimizer_state = 'bf16' with stack {stack_name!r}: BF16 state without masters "
            "is Apex DistributedFusedAdam's (stack 'nemo'); use optimizer_state 'fp32'"
        )
    if state == "bf16" and precision == "fp16":
        return (
            "optimizer_state = 'bf16' with precision 'fp16': NeMo keeps BF16 state without "
            "masters only for a BF16 model; use 'fp32'"
        )
    return None
