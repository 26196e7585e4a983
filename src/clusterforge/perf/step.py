"""Step-time assembly: compute, exposed communication, pipeline bubble, optimizer.

For every pipeline stage the time of one micro-batch is its layers' forward + backward
(+ recomputation) plus the exposed TP/CP/EP communication of those layers, plus the
embedding on the first stage and the logits/loss on the last. The pipeline runs at the pace
of its slowest stage ``t_max`` (1F1B, Narayanan et al. 2021 §2.2):

    t_pipeline = m t_max + (p - 1)/v t_max      bubble fraction (p - 1)/(v m)

A stack without gradient-accumulation fusion adds, per micro-batch, a memory-bound pass
accumulating the weight gradients (:func:`~clusterforge.perf.update.grad_accumulation_s`);
activation offloading adds the host copies one layer's compute does not hide
(:mod:`clusterforge.perf.offload`). The step then adds what is not hidden: data-parallel
traffic, fill/drain pipeline sends, the tied-embedding all-reduce, the optimizer (Adam,
memory-bound) and "other" (gradient norm, clipping, zeroing), with the overlaps of the
:class:`~clusterforge.perf.stack.Stack`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.attention import flash_unpad_idle_s
from clusterforge.perf.blockscale import check_block_scaled_stack
from clusterforge.perf.calibration import Calibration, calibrated_perf
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes, layer_times
from clusterforge.perf.early_stop import recomputed_flops_per_token
from clusterforge.perf.embedding import embedding_times
from clusterforge.perf.ep_overlap_rules import check_ep_overlap, check_ep_overlap_model
from clusterforge.perf.exposure import (
    LayerComm,
    dp_exposed_s,
    embedding_sync_s,
    layer_comm,
    pp_exposed_s,
)
from clusterforge.perf.flops import hardware_flops_per_step, model_flops_per_step
from clusterforge.perf.fp8 import fp8_weight_cast_s
from clusterforge.perf.fp8_amax import amax_reduction_s
from clusterforge.perf.host import (
    flex_dropless_idle_s,
    host_cpu,
    interleaved_overlap_chunk_s,
    interleaved_overlap_idle_s,
    moe_forward_host_s,
)
from clusterforge.perf.input_dropout import input_dropout_s
from clusterforge.perf.logits import logits_times
from clusterforge.perf.megatron_fsdp import root_module_delta_s
from clusterforge.perf.memory import (
    MemoryBreakdown,
    memory_per_gpu,
    stage_expert_params,
    stage_params,
)
from clusterforge.perf.offload import offload_s
from clusterforge.perf.optimizer_offload import HostMemory, OptimizerOffload, optimizer_offload
from clusterforge.perf.optimizer_state import optimizer_state_bytes
from clusterforge.perf.parallel import (
    ParallelPlan,
    num_micro_batches,
    recompute_fraction,
    validate_plan,
)
from clusterforge.perf.param_gather import expert_gather_chain_s
from clusterforge.perf.roofline import GpuPerf, check_precision, gpu_perf
from clusterforge.perf.sharded import (
    deferred_copy_in_s,
    zero3_copy_in_s,
    zero3_copy_out_s,
    zero3_exposed_s,
)
from clusterforge.perf.stack import Stack
from clusterforge.perf.stage import Stage, blend, stage_time
from clusterforge.perf.train_metrics import train_metrics_collectives_s
from clusterforge.perf.uncertainty import Band, run_class, validation_band
from clusterforge.perf.update import grad_accumulation_s, optimizer_step_s, owned_params

__all__ = ["FLOP_CONVENTION", "Breakdown", "Prediction", "predict_step"]

FLOP_CONVENTION = (
    "MFU: model FLOPs (fwd+bwd = 3x fwd, full s^2 attention, no recomputation; Korthikanti "
    "et al. 2022) / (BF16 dense peak x GPUs); HFU adds recomputed FLOPs (Narayanan et al. "
    "2021 eq. 3 with full recomputation)"
)


@dataclass(frozen=True)
class Breakdown:
    """Where the step time goes, seconds (they add up to the step time)."""

    compute_s: float
    tp_comm_s: float
    pp_comm_s: float
    dp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    bubble_s: float
    optimizer_s: float
    other_s: float

    @property
    def total_s(self) -> float:
        return float(sum(vars(self).values()))

    def largest_overhead(self) -> str:
        """The biggest non-compute line, e.g. ``"dp_comm_s"``: what to fix first."""
        items = {k: v for k, v in vars(self).items() if k != "compute_s"}
        return max(items, key=lambda k: items[k])


@dataclass(frozen=True)
class Prediction:
    """One plan's predicted step on one cluster."""

    plan: ParallelPlan
    model_id: str
    gpu_id: str
    stack: str
    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    memory: MemoryBreakdown
    fits: bool
    breakdown: Breakdown
    stage_layers: tuple[int, ...]
    run_class: str = "megatron-3d"  # what the run exercises (uncertainty.run_class)
    optimizer_offload: OptimizerOffload | None = None  # its parts when the plan offloads
    optimizer_bytes_per_param: float = 12.0  # Adam state before sharding (.optimizer_state)
    # the EP overlap's cost per model-chunk pass under the interleaved schedule (.host)
    ep_overlap_chunk_s: float = 0.0

    @property
    def memory_per_gpu_gib(self) -> float:
        return self.memory.total_gib

    @property
    def band(self) -> Band:
        """Where the real throughput lies around this one (spread of its class of run on
        published calibration and development runs)."""
        return validation_band(self.run_class)

    def time_to_train_s(self, tokens: float) -> float:
        """Seconds to train ``tokens`` tokens at this step rate (no restarts or failures)."""
        return tokens / self.tokens_per_s

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary: the fields of ``clusterforge predict --json``."""
        values = asdict(self.plan)
        plan = {**values.pop("layout"), **values, "pipeline_layers": list(self.stage_layers)}
        return {
            "model": self.model_id,
            "gpu": self.gpu_id,
            "num_gpus": self.plan.layout.num_gpus,
            "plan": plan,
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "memory_per_gpu_gib": self.memory_per_gpu_gib,
            "fits": self.fits,
            "memory_gib": {**asdict(self.memory), "total_gib": self.memory.total_gib},
            "breakdown": asdict(self.breakdown),
            "largest_overhead": self.breakdown.largest_overhead(),
            "stack": self.stack,
            "tokens_per_s_per_gpu_range": list(self.band.range_of(self.tokens_per_s_per_gpu)),
            "range_fraction": [self.band.low_fraction, self.band.high_fraction],
            "run_class": self.run_class,
            "optimizer_offload": asdict(self.optimizer_offload) if self.optimizer_offload else None,
            "optimizer_bytes_per_param": self.optimizer_bytes_per_param,
            "ep_overlap_chunk_s": self.ep_overlap_chunk_s,
            "flop_convention": FLOP_CONVENTION,
        }


def _dp_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    first: Stage,
    layers: int,
    num_micro: int,
    *,
    perf: GpuPerf,
) -> float:
    """Exposed data-parallel seconds per step: unit by unit for ZeRO-3 without pipelining
    (and for ZeRO-2 where the stack shards it per unit, FSDP's SHARD_GRAD_OP), else once per step (measured on the first stage, which also holds the embedding)."""
    if (
        stack.gathers_per_unit(plan.zero_stage)
        and plan.layout.pp == 1
        and plan.layout.dp * plan.layout.cp > 1
    ):
        return zero3_exposed_s(
            arch, plan, comm, stack, times, layers=layers, num_micro=num_micro, perf=perf
        ) + root_module_delta_s(arch, plan, comm, stack, times, layers=layers, num_micro=num_micro)
    params = stage_params(arch, plan, layers, first=True)
    expert = stage_expert_params(arch, plan, layers)
    return dp_exposed_s(
        plan,
        params,
        comm,
        stack,
        first.forward_s,
        first.backward_s,
        num_micro,
        expert_params=expert,
        serial_gather_s=expert_gather_chain_s(arch, plan, comm, stack, layers),
    )


def predict_step(
    arch: ModelArch,
    plan: ParallelPlan,
    gpu: Gpu,
    comm: CommModel,
    nvlink_domain_gpus: int,
    stack: Stack | None = None,
    *,
    calibration: Calibration | None = None,
    host: HostMemory | None = None,
) -> Prediction:
    """Predict the step time, MFU/HFU and memory of ``plan`` (raises PlanError if invalid).

    ``calibration``: the cluster's measured GEMM rate and HBM bandwidth replace the model's
    (:func:`~clusterforge.perf.calibration.calibrated_perf`). ``host``: the node's host
    memory, needed by a plan with ``optimizer_offload``, whose host step and copies
    (:mod:`~clusterforge.perf.optimizer_offload`) replace the GPU's optimizer step.
    """
    stack = stack or Stack.megatron_core()
    stages = validate_plan(arch, plan, plan.layout.num_gpus)
    check_precision(gpu, plan.precision)
    check_block_scaled_stack(stack.name, plan.precision)
    check_ep_overlap_model(arch, stack)
    check_ep_overlap(plan, stack)  # what Megatron-Core refuses under its EP overlap
    perf = calibrated_perf(gpu_perf(gpu, plan.precision), calibration)
    times, per_layer_comm = _layer_costs(
        arch, plan, perf, comm, stack, nvlink_domain_gpus, stages, gpu
    )
    per_stage = _stages(arch, plan, gpu, perf, comm, stack, stages, times, per_layer_comm)
    slowest = max(per_stage, key=lambda s: s.total_s)
    m = num_micro_batches(plan)
    opt_s, other_s = optimizer_step_s(arch, plan, perf, stages[0], stack=stack, cpu=host_cpu(gpu))
    offloaded = None
    if plan.optimizer_offload:
        owned = owned_params(arch, plan, stages[0])
        backward_s = m * per_stage[0].backward_s
        offloaded = optimizer_offload(
            plan, gpu, host, stack_name=stack.name, owned_params=owned, backward_s=backward_s
        )
        opt_s = offloaded.exposed_s
    other_s += train_metrics_collectives_s(stack, comm, plan.layout.num_gpus)
    breakdown = Breakdown(
        compute_s=m * slowest.compute_s,
        tp_comm_s=m * slowest.tp_s,
        pp_comm_s=pp_exposed_s(plan, arch, comm, stack, m)
        + embedding_sync_s(plan, arch, comm, stack),
        dp_comm_s=_dp_s(arch, plan, comm, stack, times, per_stage[0], stages[0], m, perf=perf)
        + deferred_copy_in_s(arch, plan, stack, perf, stages[0]),
        cp_comm_s=m * slowest.cp_s,
        ep_comm_s=m * slowest.ep_s,
        bubble_s=(plan.layout.pp - 1) / plan.layout.vpp * slowest.total_s,
        optimizer_s=opt_s,
        other_s=other_s,
    )
    return replace(
        _assemble(arch, plan, gpu, stack, stages, breakdown), optimizer_offload=offloaded
    )


def _layer_costs(
    arch: ModelArch,
    plan: ParallelPlan,
    perf: GpuPerf,
    comm: CommModel,
    stack: Stack,
    nvlink_domain_gpus: int,
    stages: tuple[int, ...],
    gpu: Gpu,
) -> tuple[LayerTimes, LayerComm]:
    """One layer's compute and communication times; under block recomputation (full
    recompute of only some layers) the average of a recomputed and a kept layer."""
    times = layer_times(arch, plan, perf, stack)
    per_layer_comm = layer_comm(arch, plan, times, comm, stack, nvlink_domain_gpus, gpu)
    share = recompute_fraction(plan, stages)
    if plan.recompute == "full" and share < 1.0:
        kept = plan.with_(recompute="none")
        kept_times = layer_times(arch, kept, perf, stack)
        kept_comm = layer_comm(arch, kept, kept_times, comm, stack, nvlink_domain_gpus, gpu)
        times = blend(times, kept_times, share)
        per_layer_comm = blend(per_layer_comm, kept_comm, share)
    return times, per_layer_comm


def _stages(
    arch: ModelArch,
    plan: ParallelPlan,
    gpu: Gpu,
    perf: GpuPerf,
    comm: CommModel,
    stack: Stack,
    stages: tuple[int, ...],
    times: LayerTimes,
    per_layer_comm: LayerComm,
) -> list[Stage]:
    """Each pipeline stage's time per micro-batch: its layers, the embedding and logits at
    the ends, the per-stage extras (gradient accumulation, FP8 weight casts and delayed
    scaling's amax reductions, layer-input dropouts, offload, ZeRO-3 copies out and in) and
    the MoE forward's host floor and measured idles."""
    ends = (*embedding_times(arch, plan, perf, stack), *logits_times(arch, plan, perf, stack))
    host_s = moe_forward_host_s(
        arch, stack, host_cpu(gpu), max(1, arch.num_experts // plan.layout.ep)
    )
    layout = plan.layout
    sync_idle_s = flash_unpad_idle_s(arch, plan, perf, stack, gpu) + interleaved_overlap_idle_s(
        arch, stack, host_cpu(gpu), layout.pp, layout.vpp
    )
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    idle_floor_s = flex_dropless_idle_s(arch, stack, host_cpu(gpu), tokens)
    return [
        stage_time(
            i,
            n,
            plan,
            times,
            per_layer_comm,
            ends,
            grad_accumulation_s(arch, plan, stack, perf, i, n)
            + fp8_weight_cast_s(arch, plan, stack, perf, n)
            + input_dropout_s(arch, plan, stack, perf, n)
            + amax_reduction_s(arch, plan, comm, stack, perf, stages, n)
            + offload_s(arch, plan, stack, gpu, times, n)
            + zero3_copy_out_s(arch, plan, stack, perf, n)
            + zero3_copy_in_s(arch, plan, stack, perf, i, n),
            host_s,
            sync_idle_s,
            idle_floor_s,
        )
        for i, n in enumerate(stages)
    ]


def _assemble(
    arch: ModelArch,
    plan: ParallelPlan,
    gpu: Gpu,
    stack: Stack,
    stages: tuple[int, ...],
    breakdown: Breakdown,
) -> Prediction:
    step_s = breakdown.total_s
    tokens = plan.global_batch * plan.seq_length
    model = model_flops_per_step(arch, plan.global_batch, plan.seq_length)
    hardware = hardware_flops_per_step(
        arch,
        plan.global_batch,
        plan.seq_length,
        plan.recompute,
        recompute_fraction(plan, stages) if plan.recompute == "full" else 1.0,
        recompute_per_token=recomputed_flops_per_token(arch, plan, stack),
    )
    peak = gpu.bf16_dense_tflops * 1e12 * plan.layout.num_gpus
    memory = memory_per_gpu(arch, plan, stages, stack)
    return Prediction(
        plan=plan,
        model_id=arch.id,
        gpu_id=gpu.id,
        stack=stack.name,
        step_time_s=step_s,
        tokens_per_s=tokens / step_s,
        tokens_per_s_per_gpu=tokens / step_s / plan.layout.num_gpus,
        model_tflops_per_gpu=model / step_s / plan.layout.num_gpus / 1e12,
        hardware_tflops_per_gpu=hardware / step_s / plan.layout.num_gpus / 1e12,
        mfu=model / step_s / peak,
        hfu=hardware / step_s / peak,
        memory=memory,
        fits=memory.total_gib <= gpu.hbm_gib,
        breakdown=breakdown,
        stage_layers=stages,
        run_class=run_class(arch, plan, stack),
        optimizer_bytes_per_param=optimizer_state_bytes(
            plan.optimizer_state, plan.precision, stack
        ),
        ep_overlap_chunk_s=interleaved_overlap_chunk_s(
            arch, stack, host_cpu(gpu), plan.layout.pp, plan.layout.vpp
        ),
    )
