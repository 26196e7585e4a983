"""Megatron-Core's overlapped parameter all-gather runs one bucket ahead: the serial waits of
a grouped expert linear whose weights span several buckets.

Under the distributed optimizer with ``overlap_param_gather``, Megatron-Core's
``DistributedDataParallel`` gathers the parameters bucket by bucket during the step's first
forward. A forward pre-hook on every module waits, parameter by parameter, for the bucket
group holding it (``finish_param_sync``) and only then dispatches the next group's
all-gather (``next_param_gather_bucket_group``, set in forward order); a group not yet
dispatched is dispatched and waited on at once (megatron/core/distributed/
distributed_data_parallel.py ``_make_forward_pre_hook`` and param_and_grad_buffer.py
``_ParamAndGradBucketGroup.finish_param_sync``, NVIDIA/Megatron-LM 2edffad, the Megatron Core
of Megatron-Bridge v0.4.2). So the first new group a module needs was dispatched during the
previous module's compute, and every further one is gathered while the GPU waits.

Buckets close once they hold ``bucket_size`` parameters (a parameter is never split,
``_ParamAndGradBuffer.__init__``), by default ``max(40,000,000, 1,000,000 x DP)``
(``DistributedDataParallel.__init__``, DP without context parallelism). Dense modules hold one
large weight each and need at most one new group. Transformer Engine's ``GroupedLinear`` (the
experts of ``TEGroupedMLP``) holds one weight per local expert, so the expert linears of a
layer span ``n / ceil(bucket / w)`` groups for ``n`` local weights of ``w`` parameters, all
but one gathered in series. The expert parameters live in their own buffers, gathered over
the expert-data-parallel group (``DP x CP / EP`` ranks); with one rank there is nothing to
gather. Megatron-Bridge's ``CommOverlapConfig`` sets ``bucket_size = 128 Mi`` when a recipe
builds one (training/comm_overlap.py ``_get_optimizer_overlap_cfgs``, v0.4.2); the gpt-oss
DGX B300 and H100 performance configs do not (scripts/performance/configs/gpt_oss), so the
default stands there and is the rule here.
"""

from __future__ import annotations

import math

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.flops import ffn_size
from clusterforge.perf.parallel import ParallelPlan, rank_groups
from clusterforge.perf.stack import Stack

__all__ = [
    "BUCKET_MIN_PARAMS",
    "BUCKET_PARAMS_PER_DP_RANK",
    "bucket_params",
    "expert_gather_chain_s",
    "serial_bucket_waits",
]

BUCKET_MIN_PARAMS = 40_000_000  # Megatron-Core's default bucket floor
BUCKET_PARAMS_PER_DP_RANK = 1_000_000  # ... and its growth with the data-parallel size


def bucket_params(plan: ParallelPlan) -> float:
    """Parameters per all-gather bucket, Megatron-Core's default rule."""
    return float(max(BUCKET_MIN_PARAMS, BUCKET_PARAMS_PER_DP_RANK * plan.layout.dp))


def serial_bucket_waits(num_weights: float, weight_params: float, bucket: float) -> float:
    """Bucket gathers a module with ``num_weights`` weights of ``weight_params`` each waits on
    in series: the groups it spans (``ceil(bucket / w)`` weights close a bucket) less the one
    dispatched ahead."""
    per_bucket = max(1, math.ceil(bucket / weight_params))
    return max(0.0, num_weights / per_bucket - 1.0)


def expert_gather_chain_s(
    arch: ModelArch, plan: ParallelPlan, comm: CommModel, stack: Stack, layers: int
) -> float:
    """Seconds per step the GPU waits on serial expert-parameter bucket gathers.

    Zero for dense models, stacks without Megatron-Core's one-ahead gather
    (``Stack.param_gather_one_ahead``) or without an overlapped gather (``Stack.dp_overlap``),
    ZeRO stages that gather unit by unit or not at all, and one expert-data-parallel rank;
    otherwise ``layers`` times the serial waits of the two expert linears
    (:func:`serial_bucket_waits`) times one bucket's all-gather over the expert-data-parallel
    group.
    """
    edp = rank_groups(plan, "edp")
    if (
        arch.num_experts == 1
        or not (stack.param_gather_one_ahead and stack.dp_overlap)
        or plan.zero_stage not in (1, 2)
        or stack.gathers_per_unit(plan.zero_stage)
        or edp.shape[1] == 1
    ):
        return 0.0
    local = arch.num_experts // plan.layout.ep
    h, f = arch.hidden_size, ffn_size(arch) / plan.layout.tp
    up = (2 if arch.gated_mlp else 1) * f
    bucket = bucket_params(plan)
    waits = serial_bucket_waits(local, h * up, bucket) + serial_bucket_waits(local, f * h, bucket)
    one = comm.collective_time_s(
        "all_gather", bucket * stack.gathered_weight_bytes(plan.precision), edp
    )
    return layers * waits * one
