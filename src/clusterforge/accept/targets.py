"""What each acceptance test must reach, taken from the design (never from folklore).

Every :class:`Target` says where its number comes from, so a report can show it beside
the measurement.  Absolute targets apply to the hardware the design names (GPUs, NICs,
storage); a run on a CPU stand-in (the emulated cluster) is judged against its peers only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterforge.busbw import bus_factor

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "PEER_FRACTION",
    "Target",
    "Targets",
    "allreduce_bound_gbyte_per_s",
    "design_targets",
]

# A node below this share of the median of its peers is an outlier (the straggler rule the
# localization uses; 0.9 is the same 10 % margin as the bandwidth rule below).
PEER_FRACTION = 0.9
# Share of the theoretical all-reduce bound a healthy fabric reaches (acceptance rule;
# configurable per run).
BOUND_FRACTION = 0.9
# Share of the best-shape achievable GEMM throughput (MAMF) a healthy GPU reaches.
GEMM_FRACTION = 0.9


@dataclass(frozen=True)
class Target:
    """A number to reach (``at_least``) or stay under, with its origin."""

    value: float
    unit: str
    source: str
    at_least: bool = True

    def met_by(self, measured: float) -> bool:
        return measured >= self.value if self.at_least else measured <= self.value


@dataclass(frozen=True)
class Targets:
    """Targets of one acceptance run; None where the design gives no figure."""

    gemm_tflops: Target | None
    memory_gbyte_per_s: Target | None
    allreduce_predicted: Target | None
    allreduce_bound: Target | None
    storage_p999_ms: Target
    storage_write_mbyte_per_s: Target | None
    inband_gbit_per_s: Target | None


def allreduce_bound_gbyte_per_s(node_gbyte_per_s: float, num_nodes: int, gpus: int) -> float:
    """Highest all-reduce bus bandwidth the nodes' NICs allow, GB/s.

    Every node must send and receive at least 2·S·(N−1)/N bytes of an S-byte all-reduce
    across N nodes (reduce-scatter then all-gather at node granularity; Patarasuk & Yuan
    2009), so algbw <= B_node / (2(N−1)/N); nccl-tests' busbw multiplies algbw by
    2(n−1)/n over n GPUs.
    """
    if num_nodes < 2:
        return float("inf")
    per_node_factor = bus_factor("all_reduce", num_nodes)
    return node_gbyte_per_s / per_node_factor * bus_factor("all_reduce", gpus)


def _predicted_allreduce(design: Design, num_nodes: int, size_bytes: float) -> float:
    from clusterforge.netsim import build_fabric_graph, design_job, groups_for, simulate_collective

    gpus = num_nodes * design.compute.gpus_per_node
    graph = build_fabric_graph(design)
    groups = groups_for(design, "all", layout=design_job(design, gpus, "all"))
    return float(simulate_collective(graph, "all_reduce", size_bytes, groups).busbw_gbyte_per_s)


def _gemm_target(design: Design) -> Target:
    from clusterforge.perf.roofline import gpu_perf

    gpu = design.compute.gpu
    mamf = gpu_perf(gpu, "bf16").matmul_tflops
    return Target(
        GEMM_FRACTION * mamf,
        "TFLOP/s",
        f"{GEMM_FRACTION:.0%} of the {gpu.id} best-shape bf16 GEMM throughput ({mamf:,.0f} "
        "TFLOP/s, the performance model's MAMF)",
    )


def design_targets(
    design: Design, *, num_nodes: int, size_bytes: float, storage_p999_ms: float = 1.0
) -> Targets:
    """Targets for an acceptance run over ``num_nodes`` nodes of ``design``."""
    fabric, compute, storage = design.fabric, design.compute, design.storage
    node_gbyte = fabric.nics_per_node * fabric.nic_gbit_per_s / 8.0
    gpus = num_nodes * compute.gpus_per_node
    bound = allreduce_bound_gbyte_per_s(node_gbyte, num_nodes, gpus)
    multi = num_nodes >= 2
    predicted = _predicted_allreduce(design, num_nodes, size_bytes) if multi else 0.0
    gpu = compute.gpu
    return Targets(
        gemm_tflops=_gemm_target(design),
        memory_gbyte_per_s=Target(
            0.8 * gpu.hbm_tbyte_per_s * 1000.0,
            "GB/s",
            f"80% of the {gpu.id} HBM datasheet bandwidth ({gpu.hbm_tbyte_per_s} TB/s)",
        ),
        allreduce_predicted=Target(
            predicted, "GB/s", f"simulated all_reduce busbw on this fabric, {num_nodes} nodes"
        )
        if multi
        else None,
        allreduce_bound=Target(
            BOUND_FRACTION * bound,
            "GB/s",
            f"{BOUND_FRACTION:.0%} of the NIC bound {bound:,.0f} GB/s "
            f"({fabric.nics_per_node} x {fabric.nic_gbit_per_s:g} Gb/s per node)",
        )
        if multi
        else None,
        storage_p999_ms=Target(
            storage_p999_ms, "ms", "random-read p99.9 latency rule of this run", at_least=False
        ),
        storage_write_mbyte_per_s=Target(
            storage.write_gbyte_per_s * 1000.0 / compute.num_nodes,
            "MB/s",
            f"per-node share of the designed write bandwidth ({storage.write_gbyte_per_s:,.0f}"
            f" GB/s over {compute.num_nodes} nodes: a checkpoint in "
            f"{storage.checkpoint_write_s:,.0f} s)",
        ),
        inband_gbit_per_s=None,
    )
