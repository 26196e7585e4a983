"""Activation offloading to host memory: what it saves in HBM and what it costs in time.

Megatron-Core moves the saved activations of the first ``k`` transformer layers of a stage to
host memory during the forward and brings them back before their backward
(``TransformerConfig.cpu_offloading``, ``cpu_offloading_num_layers``; NVIDIA/Megatron-LM
``megatron/core/transformer/transformer_block.py`` and ``megatron/core/cpu_offload.py``).
Megatron-Bridge's performance recipes use it instead of recomputation where host memory is
close: the Grace-Blackwell Llama 3 70B FSDP recipes offload 40 (GB200) and 20 (GB300) of
80 layers (NVIDIA-NeMo/Megatron-Bridge ``scripts/performance/configs/llama3/
workload_base_configs.py``, ``cpu_offloading_num_layers``).

Memory: an offloaded layer keeps no activations in HBM between its forward and its
backward, except the one layer whose copy is in flight (the handler's staging buffer);
the memory model counts it (:func:`clusterforge.perf.memory.resident_layers`).

Time: the copies run on the copy engines over the GPU-host link while the next layer computes
(forward) or the later layer's backward runs (reload), so a layer's copy is exposed only by
what exceeds one layer's compute: ``max(0, bytes / link - t_layer)`` in each direction. The
link and its bandwidth each way are the GPU's ``host_link`` in the catalog (NVLink-C2C on
Grace superchips, PCIe Gen4 or Gen5 x16 on x86 hosts, each from its datasheet).
"""

from __future__ import annotations

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.memory import activation_bytes_per_layer
from clusterforge.perf.offload_modules import offloaded_module_bytes
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import Stack

__all__ = ["host_link_gbyte_per_s", "offload_s", "offload_stall_s"]


def host_link_gbyte_per_s(gpu: Gpu) -> float:
    """GPU-to-host bandwidth in one direction, GB/s (the catalog's ``host_link``)."""
    return gpu.host_link_gbyte_per_s


def offload_stall_s(
    *,
    activation_bytes: float,
    link_gbyte_per_s: float,
    forward_s: float,
    backward_s: float,
) -> float:
    """Exposed seconds per offloaded layer and micro-batch: the copy out (behind one layer's
    forward) and the copy back (behind one layer's backward), each only where it is longer."""
    copy_s = activation_bytes / (link_gbyte_per_s * 1e9)
    return max(0.0, copy_s - forward_s) + max(0.0, copy_s - backward_s)


def offload_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, gpu: Gpu, times: LayerTimes, layers: int
) -> float:
    """Seconds per micro-batch that a stage's activation copies to and from host memory are
    not hidden behind one layer's compute: the whole offloaded layers' and, on every other
    layer, the offloaded modules' (:mod:`.offload_modules`)."""
    moved = min(plan.offload_layers, layers)
    module_bytes = offloaded_module_bytes(arch, plan)
    if moved == 0 and module_bytes == 0.0:
        return 0.0
    link = host_link_gbyte_per_s(gpu)
    backward_s = times.backward_s + times.recompute_s
    layer_bytes = activation_bytes_per_layer(arch, plan, stack)
    stall = offload_stall_s(
        activation_bytes=layer_bytes,
        link_gbyte_per_s=link,
        forward_s=times.forward_s,
        backward_s=backward_s,
    )
    module_stall = offload_stall_s(
        activation_bytes=module_bytes,
        link_gbyte_per_s=link,
        forward_s=times.forward_s,
        backward_s=backward_s,
    )
    return moved * stall + (layers - moved) * module_stall
