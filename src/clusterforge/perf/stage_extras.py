"""Per-micro-batch costs of a pipeline stage beyond its layers' compute and communication:
casting its weights to FP8, and activation copies to host memory that are not hidden."""

from __future__ import annotations

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.compute import GpuPerf, LayerTimes, memory_time_s
from clusterforge.perf.fp8 import fp8_weight_cast_bytes_per_micro
from clusterforge.perf.memory import activation_bytes_per_layer, layer_params_per_gpu
from clusterforge.perf.offload import host_link_gbyte_per_s, offload_stall_s
from clusterforge.perf.parallel import ParallelPlan, num_micro_batches
from clusterforge.perf.stack import Stack

__all__ = ["fp8_weight_cast_s", "offload_s"]


def fp8_weight_cast_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int
) -> float:
    """Seconds per micro-batch to cast a stage's weights to FP8 (:mod:`clusterforge.perf.fp8`)."""
    params = layers * layer_params_per_gpu(arch, plan)
    num_bytes = fp8_weight_cast_bytes_per_micro(params, plan, stack, num_micro_batches(plan))
    return memory_time_s(num_bytes, perf, num_kernels=layers) if num_bytes else 0.0


def offload_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, gpu: Gpu, times: LayerTimes, layers: int
) -> float:
    """Seconds per micro-batch that a stage's activation copies to and from host memory are
    not hidden behind one layer's compute (:mod:`clusterforge.perf.offload`)."""
    moved = min(plan.offload_layers, layers)
    if moved == 0:
        return 0.0
    stall = offload_stall_s(
        activation_bytes=activation_bytes_per_layer(arch, plan, stack),
        link_gbyte_per_s=host_link_gbyte_per_s(gpu),
        forward_s=times.forward_s,
        backward_s=times.backward_s + times.recompute_s,
    )
    return moved * stall
