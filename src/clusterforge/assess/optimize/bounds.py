"""Cheap lower bounds on a family's time and cost, known before anything is planned.

Time: first the step's model FLOPs at the GPUs' peak (MFU 1, free to compute); then, for a
family about to be planned, the plan search's best step with communication free (:class:`FreeComm`: every
collective takes 0 s) is a lower bound on the step of every fabric at that GPU count, since
a real fabric only adds time; failures only add more. One such search per node model and
GPU count (~0.1 s, no design planned) bounds every fabric, NIC speed, topology, cooling and
spare variant of it, and says when no plan fits the GPU's memory at all.

Cost: the job's GPU-hours at that time times the cheapest price per used GPU-hour the
family can have: the rental prices, and for building a floor of the build total
(:mod:`clusterforge.design.cost.tco`: capex + years x opex − residual, where capex holds at
least the nodes, and opex at least the staff, the nodes' maintenance, colocation and energy)
spread over the ownership period's used GPU-hours; the fabric, storage, racks and
installation only add to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from clusterforge.catalog import Catalog, ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, resolve_model, search, workload_stack
from clusterforge.perf.flops import model_flops_per_step
from clusterforge.perf.optimizer_offload import host_memory
from clusterforge.perf.search import candidate_plans, overlap_refused
from clusterforge.perf.search_cache import FreeComm
from clusterforge.spec import WorkloadSpec
from clusterforge.spec.optimize import OptimizeSpec, Procurement

__all__ = [
    "HOURS_PER_YEAR",
    "Bound",
    "compute_bound_s",
    "overlap_refusals",
    "peak_bound_s",
    "price_floor_usd_per_gpu_hour",
]

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Bound:
    """Lower bounds of a family's failure-free days and its cheapest job cost."""

    days: float
    cost_usd: float


def peak_bound_s(job: WorkloadSpec, node_id: str, num_gpus: int, catalog: Catalog) -> float:
    """A step (s) no plan beats: the step's model FLOPs at every GPU's dense peak (MFU 1),
    the faster of its BF16 and FP8 peaks (and FP4 for an NVFP4 job). Free to compute: it
    orders the search."""
    arch = resolve_model(job, catalog)
    gpu = catalog.gpus[catalog.nodes[node_id].gpu]
    seq = job.seq_length or arch.seq_length
    flops = model_flops_per_step(arch, job.global_batch, seq)
    fp4 = gpu.fp4_dense_tflops if job.precision == "nvfp4" else 0.0
    peak = max(gpu.bf16_dense_tflops, gpu.fp8_dense_tflops, fp4) * 1e12
    return flops / (num_gpus * peak)


def _bound_base(job: WorkloadSpec, num_gpus: int, arch: ModelArch) -> ParallelPlan:
    """The plan a bound's search starts from: the job's batch, precision and optimizer."""
    return ParallelPlan(
        JobLayout.for_gpus(num_gpus),
        micro_batch=1,
        global_batch=job.global_batch,
        seq_length=job.seq_length or arch.seq_length,
        precision=job.precision,
        zero_stage=job.zero_stage,
        optimizer_offload=job.optimizer_offload,
        optimizer_state=job.optimizer_state,
    )


def compute_bound_s(
    job: WorkloadSpec, node_id: str, num_gpus: int, catalog: Catalog
) -> float | None:
    """The fastest step (s) of any plan on ``num_gpus`` GPUs of the node with free
    communication; None when no plan fits the GPU's memory or splits the batch."""
    node = catalog.nodes[node_id]
    arch = resolve_model(job, catalog)
    try:
        found = search(
            arch,
            _bound_base(job, num_gpus, arch),
            catalog.gpus[node.gpu],
            FreeComm(),
            node.nvlink_domain_gpus,
            top=1,
            stack=workload_stack(job),
            host=host_memory(catalog, node),
        )
    except PlanError:
        return None
    return found.predictions[0].step_time_s


def overlap_refusals(job: WorkloadSpec, sizes: Iterable[tuple[str, int]], catalog: Catalog) -> int:
    """Plans the searches at ``sizes`` (node id, GPUs) leave out because Megatron-Core
    refuses them under the job's EP overlap (:mod:`clusterforge.perf.ep_overlap_rules`);
    0 without the overlap. Counted without the memory model or a timing."""
    if not job.expert_parallel_overlap:
        return 0
    arch, stack = resolve_model(job, catalog), workload_stack(job)
    refused = 0
    for node_id, num_gpus in sizes:
        domain = catalog.nodes[node_id].nvlink_domain_gpus
        base = _bound_base(job, num_gpus, arch)
        plans = candidate_plans(arch, base, num_gpus, domain)
        refused += sum(overlap_refused(arch, plan, stack) for plan in plans)
    return refused


def price_floor_usd_per_gpu_hour(
    procurement: Procurement,
    node_id: str,
    num_gpus: int,
    catalog: Catalog,
    spec: OptimizeSpec,
) -> float:
    """The least a used GPU-hour of ``num_gpus`` GPUs of the node can cost (see module)."""
    node = catalog.nodes[node_id]
    gpu = catalog.gpus[node.gpu]
    e = spec.economics
    keep = 1.0 - e.rent_discount
    match procurement:
        case "on-demand":
            return (e.on_demand_usd_per_gpu_hour or gpu.rent_on_demand_usd_per_gpu_hour) * keep
        case "reserved":
            return (
                (e.cloud_usd_per_gpu_hour or gpu.rent_reserved_usd_per_gpu_hour)
                * keep
                / (e.utilization)
            )
        case "build":
            return _build_floor_usd(node_id, num_gpus, catalog, spec) / (
                num_gpus * HOURS_PER_YEAR * e.years * e.utilization
            )


def _build_floor_usd(node_id: str, num_gpus: int, catalog: Catalog, spec: OptimizeSpec) -> float:
    """A floor of the build total over the period: the nodes less their resale share, and
    each year the staff, the nodes' maintenance and, unless GPU power may be capped, their
    colocation rent (maximum kW) and energy (typical kW x PUE)."""
    node, e, f = catalog.nodes[node_id], spec.economics, spec.site()
    num_nodes = num_gpus / node.num_gpus
    hardware = node.price_usd * num_nodes
    per_year = e.num_staff * e.staff_usd_per_year + e.maintenance_fraction_per_year * hardware
    if not f.allow_power_capping:
        per_year += f.colo_usd_per_kw_month * 12 * node.max_kw * num_nodes
        per_year += node.typical_kw * num_nodes * f.pue * HOURS_PER_YEAR * f.usd_per_kwh
    return hardware * (1.0 - e.residual_fraction) + e.years * per_year
