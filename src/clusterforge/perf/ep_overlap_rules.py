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

__all__ = ["check_ep_overlap", "check_ep_overlap_model", "ep_overlap_error"]

_FIELD = "moe_a2a_overlap (Megatron-Core overlap_moe_expert_parallel_comm)"


def check_ep_overlap_model(arch: ModelArch, stack: Stack) -> None:
    """Refuse the EP overlap on a dense model, whose plans all have expert parallelism 1."""
    if stack.moe_a2a_overlap and arch.num_experts == 1:
        raise PlanError(
            f"{_FIELD} on the dense model {arch.id}: the overlap needs expert parallelism "
            "above 1, which only an MoE model has; turn moe_a2a_overlap off"
        )


def ep_overlap_error(plan: ParallelPlan, stack: Stack) -> str | None:
    """Why Megatron-Core refuses ``plan`` under ``stack``'s EP overlap, or None."""
    if not stack.moe_a2a_overlap:
        return None
    layout = plan.layout
    if layout.ep == 1:
        return (
            f"{_FIELD} with expert_parallel = 1: the overlap runs only with expert "
            "parallelism; set expert_parallel to 2 or more, or turn moe_a2a_overlap off"
        )
    if plan.recompute == "full":
        return (
            f"{_FIELD} with recompute = 'full': Megatron-Core refuses full and block "
            "recomputation with the overlap; use recompute 'selective' or 'none', or turn "
            "moe_a2a_overlap off"
        )
    if layout.pp > 1 and layout.vpp == 1:
        return (
            f"{_FIELD} with pipeline_parallel = {layout.pp} and virtual_pipeline_stages = 1: "
            "a pipelined run needs the interleaved schedule; set virtual_pipeline_stages to "
            "2 or more, or turn moe_a2a_overlap off"
        )
    return None


def check_ep_overlap(plan: ParallelPlan, stack: Stack) -> None:
    """Raise :class:`PlanError` when Megatron-Core refuses ``plan`` under the EP overlap."""
    error = ep_overlap_error(plan, stack)
    if error is not None:
        raise PlanError(error)
