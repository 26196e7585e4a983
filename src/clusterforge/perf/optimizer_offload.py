"""DeepSpeed ZeRO-Offload of the optimizer: the step's host-side part and its copies.

With ``zero_optimization.offload_optimizer {device: cpu}`` DeepSpeed keeps each rank's FP32
master weights, Adam moments and FP32 gradient partition in host memory and steps them with
DeepSpeedCPUAdam on the CPU (deepspeedai/DeepSpeed at
edaa7221267243c7be7fb49c5d5f5c4fb97b4641; Ren et al., "ZeRO-Offload", USENIX ATC 2021).
Per owned parameter and step:

During the backward (on the reduce-and-partition stream under ``overlap_comm``, each
direction of the GPU's host link on its own):

- ZeRO-3 (``deepspeed/runtime/zero/stage3.py``): ``partition_grads`` copies each reduced
  BF16 gradient partition into the host gradient-partition buffer (2 B down; the buffer's
  dtype is the model's BF16 when ``grad_accum_dtype`` is unset, ``engine.get_data_types``),
  back to the GPU as the working copy (2 B up), and ``_offload_grad_partition_at_boundary``
  casts it to FP32 into the optimizer's host gradient (4 B down): 6 B down, 2 B up.
- ZeRO-1/2 (``deepspeed/runtime/zero/stage_1_and_2.py``,
  ``async_inplace_copy_grad_to_fp32_buffer_from_gpu``): the gradient is cast to FP32 on the
  GPU and copied into the host FP32 gradient: 4 B down.

``independent_gradient_partition_epilogue`` (ZeRO-3) waits for that stream at the end of the
backward, so these copies cost the step only what exceeds the backward.

After the backward, serially (``step``), on the host: ``unscale_and_clip_grads`` (``mul_``
on the FP32 gradient: read and write 4 B), DeepSpeedCPUAdam (``csrc/includes/cpu_adam.h``
``Step_AVX``: loads gradient, parameter, momentum and variance, stores parameter, momentum
and variance, all FP32: 28 B), and the FP32 partition written into the GPU's BF16 shard
(``_reassign_or_swap_out_partitioned_parameters`` in stage3.py, the ``bit16_partition_buffer``
copy in stage_1_and_2.py ``step``: the cast runs on the CPU, read 4 B and write 2 B, PyTorch
``aten/src/ATen/native/cuda/Copy.cu`` ``copy_kernel_cuda``), then 2 B up the link, read
once more from host DRAM on the way: under ZeRO-3 the cast lands in a fresh pageable
temporary (the FP32 partition is made by ``.to(cpu).clone()`` in ``_create_fp32_partitions``
and never pinned, ``Copy.cu`` casts into a new tensor), which the CUDA driver
copies into its pinned staging buffer before the transfer ("the CUDA driver must first
allocate a temporary page-locked, or pinned, host array, copy the host data to the pinned
array, and then transfer the data from the pinned array to device memory", M. Harris, "How to
Optimize Data Transfers in CUDA C/C++", NVIDIA Technical Blog, 2012); under ZeRO-1/2 the copy
engine reads the pinned BF16 buffer. Either way 2 B more, from DRAM (a rank's BF16 copy,
2 B x its owned parameters, is far beyond the last-level cache). The host passes are bound
by the node's DRAM bandwidth, shared by the node's ranks (all step at once): a lower bound,
without the staging buffer's own write, write-allocate reads, NUMA placement or thread
oversubscription (``benchmarks/cpu_adam_host_whatif.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.catalog import Catalog, Gpu, Node, host_dram_gbyte_per_s
from clusterforge.errors import PlanError
from clusterforge.perf.parallel import ParallelPlan

__all__ = [
    "ADAM_HOST_BYTES",
    "CAST_HOST_BYTES",
    "HOST_BYTES_PER_PARAM",
    "PARAM_UP_BYTES",
    "UNSCALE_HOST_BYTES",
    "UPLOAD_HOST_BYTES",
    "HostMemory",
    "OptimizerOffload",
    "grad_link_bytes",
    "host_memory",
    "offload_parts",
    "optimizer_offload",
]

# Host DRAM bytes per owned parameter after the backward (module docstring).
UNSCALE_HOST_BYTES = 4.0 + 4.0
ADAM_HOST_BYTES = 4 * 4.0 + 3 * 4.0
CAST_HOST_BYTES = 4.0 + 2.0
UPLOAD_HOST_BYTES = 2.0  # the BF16 copy read on its way up: staging copy (ZeRO-3) or DMA
HOST_BYTES_PER_PARAM = UNSCALE_HOST_BYTES + ADAM_HOST_BYTES + CAST_HOST_BYTES + UPLOAD_HOST_BYTES
# Link bytes per owned parameter after the step: the updated BF16 parameter up.
PARAM_UP_BYTES = 2.0


def grad_link_bytes(zero_stage: int) -> tuple[float, float]:
    """(down, up) link bytes per owned parameter during the backward (module docstring)."""
    return (2.0 + 4.0, 2.0) if zero_stage >= 3 else (4.0, 0.0)


@dataclass(frozen=True)
class HostMemory:
    """A node's host memory as the offloaded optimizer uses it: peak DRAM bandwidth, GB/s
    (None: the catalog has no figure for its CPU), and the GPUs that share it."""

    node_id: str
    dram_gbyte_per_s: float | None
    gpus_per_node: int


def host_memory(catalog: Catalog, node: Node) -> HostMemory:
    """A node's host memory: sockets x per-CPU DRAM bandwidth, shared by its GPUs."""
    return HostMemory(node.id, host_dram_gbyte_per_s(catalog, node), node.num_gpus)


@dataclass(frozen=True)
class OptimizerOffload:
    """The offloaded optimizer's parts for one rank, with the figures they come from.

    ``grad_link_s``: the backward's gradient copies (the longer direction), hidden behind
    ``backward_s`` up to its length; ``host_s``: the host passes, ``ranks_per_host`` x
    ``owned_params`` x ``host_bytes_per_param`` over ``host_dram_gbyte_per_s``;
    ``param_up_s``: the BF16 parameters up; ``exposed_s``: what the step waits for,
    ``max(0, grad_link_s - backward_s) + host_s + param_up_s``."""

    owned_params: float
    ranks_per_host: int
    link_gbyte_per_s: float
    host_dram_gbyte_per_s: float
    grad_down_bytes: float
    grad_up_bytes: float
    host_bytes_per_param: float
    backward_s: float
    grad_link_s: float
    host_s: float
    param_up_s: float
    exposed_s: float


def offload_parts(
    *,
    owned_params: float,
    zero_stage: int,
    ranks_per_host: int,
    link_gbyte_per_s: float,
    host_dram_gbyte_per_s: float,
    backward_s: float,
) -> OptimizerOffload:
    """The parts of the offloaded optimizer step of a rank owning ``owned_params``."""
    down, up = grad_link_bytes(zero_stage)
    link = link_gbyte_per_s * 1e9
    grad_link_s = owned_params * max(down, up) / link
    host_s = ranks_per_host * owned_params * HOST_BYTES_PER_PARAM / (host_dram_gbyte_per_s * 1e9)
    param_up_s = owned_params * PARAM_UP_BYTES / link
    return OptimizerOffload(
        owned_params=owned_params,
        ranks_per_host=ranks_per_host,
        link_gbyte_per_s=link_gbyte_per_s,
        host_dram_gbyte_per_s=host_dram_gbyte_per_s,
        grad_down_bytes=down,
        grad_up_bytes=up,
        host_bytes_per_param=HOST_BYTES_PER_PARAM,
        backward_s=backward_s,
        grad_link_s=grad_link_s,
        host_s=host_s,
        param_up_s=param_up_s,
        exposed_s=max(0.0, grad_link_s - backward_s) + host_s + param_up_s,
    )


def optimizer_offload(
    plan: ParallelPlan,
    gpu: Gpu,
    host: HostMemory | None,
    *,
    stack_name: str,
    owned_params: float,
    backward_s: float,
) -> OptimizerOffload:
    """The offloaded optimizer of ``plan`` on ``gpu`` in a node with ``host`` memory (the
    GPU's ``host_link`` each way; the node's ranks, at most the job's GPUs, share its DRAM).
    Raises :class:`PlanError` on another stack than DeepSpeed, or when the node or its
    CPU's DRAM bandwidth is unknown."""
    if stack_name != "deepspeed":
        raise PlanError(
            f"optimizer_offload with stack {stack_name!r}: the model prices DeepSpeed's "
            "ZeRO-Offload only; use stack deepspeed or turn optimizer_offload off"
        )
    if host is None:
        raise PlanError(
            "optimizer_offload needs the node's host DRAM bandwidth; predict it on a catalog "
            "node (cpus.toml memory_gbyte_per_s) or turn optimizer_offload off"
        )
    if host.dram_gbyte_per_s is None:
        raise PlanError(
            f"optimizer_offload on node {host.node_id!r}: its CPU has no DRAM bandwidth in "
            "the catalog (cpus.toml memory_gbyte_per_s); add it from the vendor's "
            "specification or turn optimizer_offload off"
        )
    return offload_parts(
        owned_params=owned_params,
        zero_stage=plan.zero_stage,
        ranks_per_host=min(host.gpus_per_node, plan.layout.num_gpus),
        link_gbyte_per_s=gpu.host_link_gbyte_per_s,
        host_dram_gbyte_per_s=host.dram_gbyte_per_s,
        backward_s=backward_s,
    )
