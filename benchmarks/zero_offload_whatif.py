"""What-if: DeepSpeed ZeRO-3 with the optimizer offloaded to the host CPU (ZeRO-Offload).

Not a model change (``src/`` is untouched). The rows of
``validation/pub_mleng_zero3_h200_b200.toml`` ran ``offload_optimizer {device cpu,
pin_memory true}``; the model keeps the FP32 master weights and Adam moments in HBM and steps
them on the GPU. What DeepSpeed does per step instead (deepspeedai/DeepSpeed at
edaa7221267243c7be7fb49c5d5f5c4fb97b4641, ``deepspeed/runtime/zero/stage3.py``):

During the backward, on the reduce-and-partition stream (``overlap_comm``), each reduced BF16
gradient partition is copied into the rank's gradient-partition buffer, which lives on the
host (``self.device`` is the CPU under offload, pinned with ``pin_memory``;
``gradient_accumulation_dtype`` is the model's BF16 when ``grad_accum_dtype`` is unset,
``engine.get_data_types``), copied back to the GPU as the working copy
(``partition_grads``), its norm taken there, cast to FP32 and copied into the optimizer's
FP32 gradient on the host (``_offload_grad_partition_at_boundary``): 2 + 4 B/parameter down,
2 B up. ``independent_gradient_partition_epilogue`` waits for that stream at the end of the
backward, so only what exceeds the backward is exposed.

After the backward, serially (``step``), for each sub-group: the FP32 gradient is unscaled
and clipped on the host (``unscale_and_clip_grads``: ``grad.mul_``, read and write 4 B),
DeepSpeedCPUAdam steps it (``csrc/includes/cpu_adam.h`` ``Step_AVX``: loads gradient,
momentum, variance and parameter, stores parameter, momentum and variance, all FP32: 28 B),
and the FP32 partition is copied into the GPU's BF16 shard
(``_reassign_or_swap_out_partitioned_parameters``: ``fp16_partitioned_groups_flat.copy_``;
PyTorch converts the dtype on the CPU for a CPU-to-GPU copy, ``aten/src/ATen/native/cuda/
Copy.cu`` ``copy_kernel_cuda``: read 4 B and write 2 B on the host, then 2 B up the link).

Pricing: the host's passes are bound by its DRAM bandwidth, shared by the host's ranks (all
eight steps run at once); the copies by the GPU's ``host_link`` each way. Host DRAM
bandwidth: channels x transfer rate x 8 B per socket, from Intel's product specifications
(Xeon Platinum 8480C: 8 channels DDR5-4800; Xeon Platinum 8570: 8 channels DDR5-5600), two
sockets per node (the catalog's ``dgx-h200`` and ``dgx-b200``). A lower bound: write-allocate
reads, thread placement and the pageable CPU-to-GPU copy are not counted.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/zero_offload_whatif.py

Development rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.catalog import load_catalog
from clusterforge.perf.memory import stage_params
from clusterforge.perf.offload import host_link_gbyte_per_s
from clusterforge.perf.step import Prediction
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run

__all__ = [
    "GRAD_DOWN_BYTES",
    "GRAD_UP_BYTES",
    "HOST_BYTES_PER_PARAM",
    "OffloadCost",
    "host_dram_gbyte_per_s",
    "offload_cost",
    "offload_error",
]

OFFLOAD_FILE = "pub_mleng_zero3_h200_b200.toml"

# Link bytes per owned parameter during the backward: BF16 partition down, back up, FP32 down.
GRAD_DOWN_BYTES = 2.0 + 4.0
GRAD_UP_BYTES = 2.0
# After the backward: the updated parameter up as BF16.
PARAM_UP_BYTES = 2.0
# Host DRAM bytes per owned parameter after the backward: unscale (read + write FP32
# gradient), CPU Adam (4 FP32 loads, 3 FP32 stores), FP32 -> BF16 cast (read 4, write 2).
UNSCALE_BYTES = 4.0 + 4.0
CPU_ADAM_BYTES = 4 * 4.0 + 3 * 4.0
CAST_BYTES = 4.0 + 2.0
HOST_BYTES_PER_PARAM = UNSCALE_BYTES + CPU_ADAM_BYTES + CAST_BYTES

# DDR channels per socket and transfer rate (MT/s), Intel product specifications.
CPU_MEMORY = {"xeon-8480c": (8, 4800.0), "xeon-8570": (8, 5600.0)}


@dataclass(frozen=True)
class OffloadCost:
    """Seconds of one step that the offloaded optimizer costs one rank."""

    transfer_s: float  # link time: backward gradients (longer direction) + parameters up
    host_adam_s: float  # host DRAM passes of the unscale, Adam and cast, all ranks sharing
    exposed_s: float  # what the step waits for: backward copies beyond the backward, + serial


def host_dram_gbyte_per_s(cpu_id: str, sockets: int) -> float:
    """Peak DRAM bandwidth of a host, GB/s: sockets x channels x MT/s x 8 B."""
    channels, mt_per_s = CPU_MEMORY[cpu_id]
    return sockets * channels * mt_per_s * 8 / 1e3


def offload_cost(
    *,
    owned_params: float,
    ranks_per_host: int,
    link_gbyte_per_s: float,
    host_dram_gbyte_per_s: float,
    backward_s: float,
) -> OffloadCost:
    """The offload's parts for a rank owning ``owned_params`` parameters.

    The backward's copies run on the reduce stream, each direction on its own, and are
    exposed only by what exceeds the backward; the host passes and the parameter copy up run
    after the backward, one after the other, before the next step."""
    link = link_gbyte_per_s * 1e9
    grad_link_s = owned_params * max(GRAD_DOWN_BYTES, GRAD_UP_BYTES) / link
    param_up_s = owned_params * PARAM_UP_BYTES / link
    host_s = ranks_per_host * owned_params * HOST_BYTES_PER_PARAM / (host_dram_gbyte_per_s * 1e9)
    exposed = max(0.0, grad_link_s - backward_s) + host_s + param_up_s
    return OffloadCost(grad_link_s + param_up_s, host_s, exposed)


def _owned_params(run: Run, pred: Prediction) -> float:
    plan = pred.plan
    params = stage_params(run.arch, plan, pred.stage_layers[0], first=True)
    return params / (plan.shard_size or plan.layout.dp * plan.layout.cp)


def run_cost(run: Run) -> tuple[Prediction, OffloadCost]:
    """The model's prediction of ``run`` and the offload's cost on its plan. The backward
    window is 3/4 of the compute under full recomputation (forward 1, recomputed forward 1,
    backward 2 units)."""
    pred = predict_run(run).prediction
    assert pred is not None
    catalog = load_catalog()
    node = catalog.nodes[run.node]
    gpu = catalog.gpus[node.gpu]
    cost = offload_cost(
        owned_params=_owned_params(run, pred),
        ranks_per_host=min(node.num_gpus, pred.plan.layout.num_gpus),
        link_gbyte_per_s=host_link_gbyte_per_s(gpu),
        host_dram_gbyte_per_s=host_dram_gbyte_per_s(node.cpu, node.num_cpus),
        backward_s=0.75 * pred.breakdown.compute_s,
    )
    return pred, cost


def offload_error(run: Run) -> float:
    """The run's signed error with the offload priced (other files: as modelled)."""
    outcome = predict_run(run)
    if run.file != OFFLOAD_FILE:
        return outcome.error
    pred, cost = run_cost(run)
    step_s = pred.step_time_s - pred.breakdown.optimizer_s + cost.exposed_s
    return outcome.predicted * pred.step_time_s / step_s / run.published - 1.0


def _rows(runs: list[Run]) -> None:
    print(
        f"{'row':<30} {'published':>9} {'predicted':>9} {'error':>8} {'what-if':>8} {'error':>8}"
        f" {'link ms':>8} {'host ms':>8} {'exposed':>8} {'GPU opt':>8} {'HBM GiB':>13}"
    )
    for run in runs:
        pred, cost = run_cost(run)
        outcome = predict_run(run)
        err = offload_error(run)
        mem = pred.memory
        print(
            f"{run.name:<30} {run.published:>9.0f} {outcome.predicted:>9.0f}"
            f" {100 * outcome.error:>+7.1f}% {run.published * (1 + err):>8.0f} {100 * err:>+7.1f}%"
            f" {1e3 * cost.transfer_s:>8.1f} {1e3 * cost.host_adam_s:>8.1f}"
            f" {1e3 * cost.exposed_s:>8.1f} {1e3 * pred.breakdown.optimizer_s:>8.1f}"
            f" {mem.total_gib:>6.1f}->{mem.total_gib - mem.optimizer_gib:>5.1f}"
        )


def main() -> None:
    runs = [r for r in load_runs() if r.subset == "development"]
    fitted = [r for r in runs if predict_run(r).prediction is not None]
    offloaded = [r for r in fitted if r.file == OFFLOAD_FILE]
    print(f"{OFFLOAD_FILE}, development rows (HBM: as modelled -> without optimizer states)")
    _rows(offloaded)
    print(f"\ndevelopment ({len(fitted)} runs): MAPE, median | class MAPE (median)")
    print("  as modelled  " + class_summary(fitted, lambda r: predict_run(r).error, medians=True))
    print("  offload      " + class_summary(fitted, offload_error, medians=True))


if __name__ == "__main__":
    main()
