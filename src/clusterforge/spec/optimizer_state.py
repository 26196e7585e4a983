"""Which optimizer-state layouts (``workload.optimizer_state``) a stack and precision allow.

The layouts and their bytes are priced in :mod:`clusterforge.perf.optimizer_state`, whose
docstring gives the sources; this module holds only the rule a spec is checked against, so
that the spec layer does not import the performance model.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "BF16_STATE_STACKS",
    "OPTIMIZER_STATES",
    "REMAINDER_STACKS",
    "OptimizerState",
    "optimizer_state_error",
]

OptimizerState = Literal["fp32", "fp32-remainders", "bf16"]
OPTIMIZER_STATES: tuple[OptimizerState, ...] = get_args(OptimizerState)

# Stacks whose optimizer can keep remainders: Apex's DistributedFusedAdam under NeMo 1.0,
# Megatron-Core's precision-aware optimizer with Transformer Engine's FusedAdam (Megatron-Core,
# NeMo 2.0 and Megatron-Bridge run it); BF16 state without masters: Apex's, under NeMo 1.0.
REMAINDER_STACKS = ("megatron-core", "nemo", "megatron-bridge")
BF16_STATE_STACKS = ("nemo",)


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
