"""Predictions on a designed cluster: the spec's workload, any plan, or a search, on the real fabric.

:func:`predict_workload` is what ``clusterforge plan`` prints (expected MFU, tokens/s, time to
train the requested tokens); :func:`run_predict` serves ``clusterforge predict``: the spec's
plan with a user's changes (:class:`PlanOverrides`), or a search over plans and, optionally,
cluster sizes. Communication is timed with the flow-level simulator on the design's fabric
(:class:`~clusterforge.perf.comm.NetsimComm`) unless a :class:`CommModel` is given. The
parallel degrees come from the design's :class:`~clusterforge.job.JobLayout` (``design.job``);
a changed degree makes a new layout with :meth:`JobLayout.for_gpus`, the one place DP is
derived.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from clusterforge.catalog import Catalog, Gpu, ModelArch
from clusterforge.errors import PlanError, SimulationError
from clusterforge.job import JobLayout
from clusterforge.perf.blockscale import check_block_scaled_stack
from clusterforge.perf.calibration import (
    CalibratedComm,
    Calibration,
    CalibrationChange,
    perf_changes,
)
from clusterforge.perf.comm import CommModel, NetsimComm, netsim_available
from clusterforge.perf.flops import Recompute
from clusterforge.perf.optimizer_offload import HostMemory, host_memory
from clusterforge.perf.parallel import ParallelPlan, Precision
from clusterforge.perf.power_limit import power_limited
from clusterforge.perf.roofline import check_precision, gpu_perf
from clusterforge.perf.search import search
from clusterforge.perf.stack import Stack, StackName, workload_stack
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.spec import WorkloadSpec

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "PlanOverrides",
    "PredictOutcome",
    "PredictRequest",
    "apply_overrides",
    "calibrated_comm",
    "design_comm",
    "design_gpu",
    "design_host",
    "plan_from_workload",
    "predict_plan",
    "predict_workload",
    "resolve_model",
    "run_predict",
]


def resolve_model(workload: WorkloadSpec, catalog: Catalog) -> ModelArch:
    """The workload's architecture: a preset of ``catalog`` or the explicit dimensions."""
    if isinstance(workload.model, ModelArch):
        return workload.model
    return catalog.models[workload.model]


def plan_from_workload(workload: WorkloadSpec, job: JobLayout, arch: ModelArch) -> ParallelPlan:
    """The plan the spec asks for, with the degrees of its job layout."""
    layers = tuple(workload.pipeline_layers) if workload.pipeline_layers else None
    return ParallelPlan(
        job,
        micro_batch=workload.micro_batch,
        global_batch=workload.global_batch,
        seq_length=workload.seq_length or arch.seq_length,
        sequence_parallel=workload.sequence_parallel and job.tp > 1,
        recompute=workload.recompute,
        zero_stage=workload.zero_stage,
        precision=workload.precision,
        pipeline_layers=layers,
        shard_size=workload.fsdp_shard_size,
        optimizer_offload=workload.optimizer_offload,
        optimizer_state=workload.optimizer_state,
    )


@dataclass(frozen=True)
class PlanOverrides:
    """Changes to the spec's plan (None = keep the spec's value). ``layout``: the changed
    degrees of the job layout by their :class:`~clusterforge.job.JobLayout` field name
    (``tp``, ``pp``, ``cp``, ``ep``, ``dp``, ``vpp``); the others are kept or, for DP,
    re-derived from the GPU count."""

    layout: Mapping[str, int] = field(default_factory=dict)
    micro_batch: int | None = None
    global_batch: int | None = None
    zero_stage: int | None = None
    recompute: Recompute | None = None
    precision: Precision | None = None
    optimizer_offload: bool | None = None


def apply_overrides(plan: ParallelPlan, changes: PlanOverrides, num_gpus: int) -> ParallelPlan:
    """``plan`` with ``changes`` on ``num_gpus`` GPUs; a new layout when a degree changes."""
    values = {k: v for k, v in vars(changes).items() if v is not None and k != "layout"}
    layout = dict(changes.layout)
    old = plan.layout
    degrees = {k: layout.pop(k, getattr(old, k)) for k in ("tp", "pp", "cp", "ep")}
    vpp = layout.pop("vpp", old.vpp)
    explicit_dp = layout.pop("dp", None)
    if layout:
        raise PlanError(f"not a job-layout degree: {', '.join(sorted(layout))}")
    keep_dp = (
        explicit_dp is None
        and num_gpus == old.num_gpus
        and degrees == {k: getattr(old, k) for k in degrees}
    )
    job = JobLayout.for_gpus(num_gpus, **degrees, vpp=vpp, dp=old.dp if keep_dp else explicit_dp)
    new = plan.with_(**values, layout=job)
    if job.tp == 1:
        new = new.with_(sequence_parallel=False)
    if new.pipeline_layers is not None and len(new.pipeline_layers) != job.pp:
        new = new.with_(pipeline_layers=None)  # the spec's split was for another PP
    return new


def design_comm(design: Design) -> CommModel:
    """The netsim-backed communication model of a design (build once, reuse)."""
    if not netsim_available():
        raise SimulationError(
            "the network simulator (clusterforge.netsim) is not available in this install; "
            "predictions need it to time collectives on the designed fabric"
        )
    return NetsimComm(design)


def calibrated_comm(design: Design, calibration: Calibration | None) -> CommModel:
    """The design's communication model, with its measured collectives when calibrated."""
    comm = design_comm(design)
    if calibration is None or not calibration.collectives:
        return comm
    compute = design.compute
    return CalibratedComm(comm, calibration, compute.gpus_per_node, compute.num_training_gpus)


def _workload(design: Design) -> tuple[WorkloadSpec, JobLayout, ModelArch]:
    workload, job = design.require_workload("a prediction")
    return workload, job, resolve_model(workload, design.catalog)


def design_gpu(design: Design) -> Gpu:
    """The design's GPU at its power limit (the spec's ``gpu_power_limit_w`` or the planner's
    rack-power cap, :attr:`Design.gpu_power_limit_w`; the catalog part at TDP when neither)."""
    return power_limited(design.compute.gpu, design.gpu_power_limit_w)


def design_host(design: Design) -> HostMemory:
    """The host memory of the design's nodes (the optimizer offload's DRAM bandwidth)."""
    return host_memory(design.catalog, design.compute.node)


def predict_plan(
    design: Design,
    plan: ParallelPlan,
    *,
    arch: ModelArch | None = None,
    comm: CommModel | None = None,
    stack: Stack | None = None,
    calibration: Calibration | None = None,
) -> Prediction:
    """Predict ``plan`` on ``design`` (its GPU, NVLink domain and fabric) for ``arch``
    (default: the spec's model) with ``stack`` (default: the spec's); ``calibration``: the
    cluster's measured GEMM and HBM rates (``comm`` carries its measured collectives)."""
    workload, _, spec_arch = _workload(design)
    return predict_step(
        arch or spec_arch,
        plan,
        design_gpu(design),
        comm or design_comm(design),
        design.compute.job_nvlink_domain_gpus,
        stack or workload_stack(workload),
        calibration=calibration,
        host=design_host(design),
    )


def predict_workload(design: Design, comm: CommModel | None = None) -> Prediction:
    """Predict the spec's own workload on the design (``clusterforge plan`` prints this)."""
    workload, job, arch = _workload(design)
    return predict_plan(design, plan_from_workload(workload, job, arch), arch=arch, comm=comm)


@dataclass(frozen=True)
class PredictRequest:
    """What ``clusterforge predict`` asks: changes, stack, and whether to search."""

    overrides: PlanOverrides = field(default_factory=PlanOverrides)
    stack: StackName | None = None
    search: bool = False
    top: int = 10
    gpu_counts: tuple[int, ...] = ()
    calibration: Calibration | None = None


@dataclass(frozen=True)
class PredictOutcome:
    """Predictions (best first when searched) and the work it took."""

    predictions: list[Prediction]
    model_id: str
    gpu_id: str
    tokens: float
    searched: bool
    num_candidates: int = 1
    num_fitting: int = 1
    num_timed: int = 1
    num_refused: int = 0  # plans searched out: Megatron-Core refuses them under the EP overlap
    calibration_changes: tuple[CalibrationChange, ...] = ()
    gpu_power_limit_w: float | None = None  # board power limit of every GPU (None = TDP)
    # aws-ofi-nccl's network latency on the spec's EC2 instance (network.efa_instance), which
    # the simulated collectives pay per network step (clusterforge.netsim.ofi_tuner)
    efa_instance: str | None = None
    efa_net_latency_us: float | None = None


def _searched(
    design: Design,
    arch: ModelArch,
    start: ParallelPlan,
    request: PredictRequest,
    stack: Stack,
    comm: CommModel,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[Prediction], tuple[int, int, int, int]]:
    result = search(
        arch,
        start,
        design_gpu(design),
        comm,
        design.compute.job_nvlink_domain_gpus,
        top=request.top,
        stack=stack,
        progress=progress,
        calibration=request.calibration,
        host=design_host(design),
    )
    counts = (result.num_candidates, result.num_fitting, result.num_timed, result.num_refused)
    return result.predictions, counts


def _grown(design: Design, num_gpus: int, *, keep_workload: bool) -> Design:
    """The same spec designed for ``num_gpus`` training GPUs (its layout's DP re-derived),
    or only its cluster (a search chooses its own layout, which need not fit the spec's)."""
    from clusterforge.design import plan

    spec = design.spec
    workload = spec.workload.model_copy(update={"data_parallel": None}) if spec.workload else None
    workload = workload if keep_workload else None
    grown = spec.model_copy(update={"num_gpus": num_gpus, "workload": workload})
    return plan(grown, design.catalog)


def _search_start(
    base: ParallelPlan, request: PredictRequest, num_gpus: int, *, sweep: bool
) -> tuple[ParallelPlan, PredictRequest]:
    """The plan a search at ``num_gpus`` starts from (the request's changes but its degrees)
    and the request it answers: a size sweep keeps each size's best plan only, so branch
    and bound times fewer plans."""
    kept = replace(request.overrides, layout={})
    # the spec's own degrees divide its own GPU count, not necessarily this size's
    start = apply_overrides(base, kept, base.layout.num_gpus).with_(
        layout=JobLayout.for_gpus(num_gpus), pipeline_layers=None
    )
    return start, replace(request, top=1) if sweep else request


def _searched_sizes(
    design: Design,
    arch: ModelArch,
    base: ParallelPlan,
    request: PredictRequest,
    counts: tuple[int, ...],
    stack: Stack,
    comm: CommModel,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[Prediction], tuple[int, int, int, int]]:
    """Every plan found for a single GPU count, else the best plan of each count, and the
    plans generated, fitting, timed and refused over all counts; a count where nothing fits is
    skipped when other counts answer."""
    found: list[Prediction] = []
    tally = (0, 0, 0, 0)
    for n in counts:
        start, asked = _search_start(base, request, n, sweep=len(counts) > 1)
        try:
            best, counted = _searched(design, arch, start, asked, stack, comm, progress)
        except PlanError:
            if len(counts) == 1:
                raise
            continue  # nothing fits at this size: the other sizes still answer
        found += best[:1] if len(counts) > 1 else best
        tally = (
            tally[0] + counted[0],
            tally[1] + counted[1],
            tally[2] + counted[2],
            tally[3] + counted[3],
        )
    return found, tally


def _check_precision(design: Design, stack_name: str, precision: Precision) -> None:
    """Refuse a precision the GPU or the stack cannot run, before any search (a refused
    precision would otherwise read as "no plan fits")."""
    check_precision(design.compute.gpu, precision)
    check_block_scaled_stack(stack_name, precision)


def run_predict(
    design: Design,
    request: PredictRequest,
    progress: Callable[[int, int], None] | None = None,
) -> PredictOutcome:
    """Predict the spec's plan with the request's changes, or search plans.

    With several GPU counts each count is predicted (or searched: its best plan) on the
    first GPUs of the designed fabric; a count above the design's GPUs designs the spec
    again at that size first.
    """
    counts = request.gpu_counts or (design.compute.num_training_gpus,)
    if min(counts) < 1:
        raise PlanError(f"GPU counts {list(counts)}: use counts of at least 1")
    workload, job, arch = _workload(design)
    if max(counts) > design.compute.num_training_gpus:
        design = _grown(design, max(counts), keep_workload=not request.search)
        if not request.search:
            workload, job, arch = _workload(design)
    stack = workload_stack(workload, request.stack)
    comm = calibrated_comm(design, request.calibration)
    base = plan_from_workload(workload, job, arch)
    _check_precision(design, stack.name, request.overrides.precision or base.precision)
    if request.search:
        found, tally = _searched_sizes(design, arch, base, request, counts, stack, comm, progress)
    else:
        found = [
            predict_plan(
                design,
                apply_overrides(base, request.overrides, n),
                arch=arch,
                comm=comm,
                stack=stack,
                calibration=request.calibration,
            )
            for n in counts
        ]
        tally = (len(found), len(found), len(found), 0)
    if not found:
        raise PlanError(
            f"no plan of {arch.id} fits on any of {list(counts)} x {design.compute.gpu.id} "
            f"with global batch {base.global_batch}; change the batch, the sizes or the GPU"
        )
    return PredictOutcome(
        predictions=found,
        model_id=arch.id,
        gpu_id=design.compute.gpu.id,
        tokens=workload.tokens_b * 1e9,
        searched=request.search,
        num_candidates=tally[0],
        num_fitting=tally[1],
        num_timed=tally[2],
        num_refused=tally[3],
        calibration_changes=_calibration_changes(design, request.calibration, comm),
        gpu_power_limit_w=design.gpu_power_limit_w,
        efa_instance=design.spec.network.efa_instance,
        efa_net_latency_us=_efa_net_latency_us(design.spec.network.efa_instance),
    )


def _efa_net_latency_us(instance: str | None) -> float | None:
    """aws-ofi-nccl's reported network latency on EC2 ``instance`` (us), None without one."""
    if instance is None:
        return None
    from clusterforge.netsim.ofi_tuner import net_latency_s

    return net_latency_s(instance) * 1e6


def _calibration_changes(
    design: Design, calibration: Calibration | None, comm: CommModel
) -> tuple[CalibrationChange, ...]:
    """The figures the calibration replaced: the GPU's, then each measured collective's."""
    if calibration is None:
        return ()
    changes = perf_changes(gpu_perf(design_gpu(design), "bf16"), calibration)
    if isinstance(comm, CalibratedComm):
        changes += comm.changes
    return tuple(changes)
