"""Plans Megatron-Core refuses to run with its EP all-to-all overlap (``Stack.moe_a2a_overlap``).

Megatron-Core's ``overlap_moe_expert_parallel_comm`` (the combined 1F1B schedule that hides
one micro-batch's EP dispatch and combine behind another's compute) is checked when its
``TransformerConfig`` is built; ``__post_init__`` asserts, at both releases the development
rows ran (NVIDIA/Megatron-LM@0d8e0714cd29, Megatron-Bridge v0.2.0's pin, lines 1665-1704, and
NVIDIA/Megatron-LM@b0cc2706ddc6, Megatron-Bridge v0.3.0's pin, lines 1852-1906;
``megatron/core/transformer/transformer_config.py``):

- ``expert_model_parallel_size > 1``: "overlap_moe_expert_parallel_comm is only supported
  with expert model parallelism";
- ``recompute_granularity != 'full'``, ``recompute_method is None`` and
  ``recompute_num_layers is None``: "disable full recomputation when enabling
  overlap_moe_expert_parallel_comm" (full or block recomputation, the plan's
  ``recompute = "full"`` with or without ``recompute_layers``; selective recomputation of
  modules passes);
- with ``pipeline_model_parallel_size > 1``, ``virtual_pipeline_model_parallel_size`` is set:
  "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when
  pipeline_model_parallel_size > 1"; ``validate_args`` turns an interleaving of 1 into
  ``None`` (``megatron/training/arguments.py`` at 0d8e0714cd29, lines 581-611), so a pipelined
  plan needs ``vpp >= 2``.

The other asserts there always hold for the plans priced here: the dispatcher is
``alltoall`` or ``flex`` (:data:`~clusterforge.perf.stack_options.MoeDispatcher`), the model
is BF16 or FP16 (FP8 runs keep BF16 weights), and no plan has a shared-expert overlap,
multi-token-prediction layers or CUDA graphs of the MoE or MLP scope.
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.errors import PlanError
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack_base import Stack

__all__ = [
    "EP_OVERLAP_FIX",
    "EP_OVERLAP_RULES",
    "check_ep_overlap",
    "check_ep_overlap_model",
    "ep_overlap_error",
]

# What a plan needs under the overlap, in a line (a plan search says why it dropped plans).
EP_OVERLAP_RULES = (
    "the overlap needs expert_parallel >= 2, recompute 'none' or 'selective' (no full or "
    "block recomputation) and, when pipeline_parallel > 1, virtual_pipeline_stages >= 2"
)
# The spec change that removes every refusal here (the planner offers it as a fix).
EP_OVERLAP_FIX = {"workload.expert_parallel_overlap": False}

# The spec's field (workload.expert_parallel_overlap) and the stack's, which it sets.
_FIELD = (
    "expert_parallel_overlap (Stack.moe_a2a_overlap, Megatron-Core "
    "overlap_moe_expert_parallel_comm)"
)
_OFF = "turn expert_parallel_overlap off"


def check_ep_overlap_model(arch: ModelArch, stack: Stack) -> None:
    """Refuse the EP overlap on a dense model, whose plans all have expert parallelism 1."""
    if stack.moe_a2a_overlap and arch.num_experts == 1:
        raise PlanError(
            f"{_FIELD} on the dense model {arch.id}: the overlap needs expert parallelism "
            f"above 1, which only an MoE model has; {_OFF}",
            fix=EP_OVERLAP_FIX,
        )


def ep_overlap_error(plan: ParallelPlan, stack: Stack) -> str | None:
    """Why Megatron-Core refuses ``plan`` under ``stack``'s EP overlap, or None."""
    if not stack.moe_a2a_overlap:
        return None
    layout = plan.layout
    if layout.ep == 1:
        return (
            f"{_FIELD} with expert_parallel = 1: the overlap runs only with expert "
            f"parallelism; set expert_parallel to 2 or more, or {_OFF}"
        )
    if plan.recompute == "full":
        return (
            f"{_FIELD} with recompute = 'full': Megatron-Core refuses full and block "
            f"recomputation with the overlap; use recompute 'selective' or 'none', or {_OFF}"
        )
    if layout.pp > 1 and layout.vpp == 1:
        return (
            f"{_FIELD} with pipeline_parallel = {layout.pp} and virtual_pipeline_stages = 1: "
            "a pipelined run needs the interleaved schedule; set virtual_pipeline_stages to "
            f"2 or more, or {_OFF}"
        )
    return None


def check_ep_overlap(plan: ParallelPlan, stack: Stack) -> None:
    """Raise :class:`PlanError` when Megatron-Core refuses ``plan`` under the EP overlap."""
    error = ep_overlap_error(plan, stack)
    if error is not None:
        raise PlanError(error, fix=EP_OVERLAP_FIX)
