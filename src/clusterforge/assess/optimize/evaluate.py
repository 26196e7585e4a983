"""One family evaluated: its variants planned under the rules ``plan`` applies, its best
parallel plan found (the performance model's plan search, once), each variant's written-out
plan predicted and its goodput (the expected-value model), each procurement priced.

A variant whose plan raises (a node over the rack cap, cooling the site lacks, a fabric
that does not reach the size) or carries an error finding is rejected with the reason; so is
a family no plan of which fits the GPU's memory. :func:`evaluate_family` is a pure function
of picklable inputs, so a process pool or a Dask worker runs it as well as this process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clusterforge.assess.optimize.space import (
    Family,
    Variant,
    cluster_spec,
    hardware_workload,
)
from clusterforge.catalog import load_catalog
from clusterforge.design import Design, plan
from clusterforge.design.rules import evaluate
from clusterforge.errors import ClusterforgeError
from clusterforge.goodput import expected_goodput, inputs_from_design
from clusterforge.job import JobLayout
from clusterforge.perf import (
    CommModel,
    Prediction,
    plan_from_workload,
    predict_workload,
    resolve_model,
    search,
    workload_stack,
)
from clusterforge.perf.predict import design_comm, design_host
from clusterforge.spec import ClusterSpec, WorkloadSpec, job_layout
from clusterforge.spec.optimize import OptimizeSpec, Procurement

__all__ = ["DAY_S", "DesignPoint", "FamilyResult", "evaluate_family", "job_usd_per_gpu_hour"]

DAY_S = 86400.0


@dataclass(frozen=True)
class DesignPoint:
    """One design, fully assessed: what it is, how fast, how reliable, what it costs."""

    family: Family
    variant: Variant
    procurement: Procurement
    spec: ClusterSpec
    gpu: str
    num_nodes: int
    plan: dict[str, int | str]
    mfu: float
    tokens_per_s: float
    step_time_s: float
    memory_per_gpu_gib: float
    hbm_gib: float
    largest_overhead: str
    failure_free_days: float
    days: float
    ettr: float
    usd_per_gpu_hour: float
    cost_usd: float
    commitment_usd: float
    facility_mw: float
    max_rack_kw: float
    floor_kn_per_m2: float
    cooling: tuple[str, ...]
    tokens: float

    @property
    def usd_per_mtoken(self) -> float:
        """Cost per million tokens trained, $."""
        return self.cost_usd / self.tokens * 1e6

    def spec_data(self) -> dict[str, Any]:
        """The written-out spec as plain data, only the fields the search set: a default
        written out would read as the user's choice (e.g. a storage block named is kept,
        not chosen)."""
        data: dict[str, Any] = self.spec.model_dump(mode="json", exclude_unset=True)
        return data

    def label(self) -> str:
        spares = (
            f" +{self.variant.spare_fraction:.0%} spares" if self.variant.spare_fraction else ""
        )
        cooling = f" {self.variant.cooling}" if self.variant.cooling else ""
        return f"{self.family.label()}{cooling}{spares} {self.procurement}"


@dataclass(frozen=True)
class FamilyResult:
    """A family's points, the reasons its variants were rejected, and the work done."""

    family: Family
    points: tuple[DesignPoint, ...]
    rejected: tuple[str, ...] = ()
    num_planned: int = 0
    num_predicted: int = 0


def job_usd_per_gpu_hour(design: Design, procurement: Procurement) -> float:
    """What one used GPU-hour of the design costs: build (the period's build total over its
    used GPU-hours), reserved (the contracts over the same hours) or on-demand (list)."""
    cost = design.cost
    match procurement:
        case "build":
            return cost.build_total_usd / cost.used_gpu_hours
        case "reserved":
            return cost.rent.reserved_total_usd / cost.used_gpu_hours
        case "on-demand":
            return cost.rent.on_demand_usd_per_gpu_hour


def _commitment_usd(
    design: Design, procurement: Procurement, job_cost: float, days: float
) -> float:
    """Money committed: the build's capex, whole reserved terms covering the job, or the
    on-demand bill itself."""
    cost, n = design.cost, design.compute.num_training_gpus
    match procurement:
        case "build":
            return cost.capex_usd
        case "reserved":
            term = cost.rent.reserved_term_years
            terms = math.ceil(days / 365.0 / term)
            return cost.rent.reserved_usd_per_gpu_hour * n * 8760.0 * term * terms
        case "on-demand":
            return job_cost


def written_workload(job: WorkloadSpec, best: Prediction) -> WorkloadSpec:
    """The job with the best plan's layout, micro-batch, ZeRO stage and recomputation: the
    workload section of the written-out spec (partial block recomputation is written as
    full, the spec's nearest setting)."""
    p = best.plan
    return job.with_layout(p.layout).model_copy(
        update={
            "micro_batch": p.micro_batch,
            "zero_stage": p.zero_stage,
            "recompute": p.recompute,
            "sequence_parallel": p.sequence_parallel,
            "pipeline_layers": None,
        }
    )


def with_workload(design: Design, written: ClusterSpec) -> Design:
    """``design`` as ``plan(written)`` makes it, where ``written`` differs from the design's
    spec only in the workload's layout and plan settings: those change no hardware (the
    storage is sized from the model and tokens), only the job layout and the rule findings
    that read it, which are derived again here."""
    moved = design.model_copy(update={"spec": written, "job": job_layout(written, design.catalog)})
    return moved.model_copy(update={"findings": evaluate(moved)})


def _best_plan(design: Design) -> tuple[Prediction, CommModel]:
    """The plan search's best plan on ``design``, and the fabric model it was timed on."""
    workload, job = design.require_workload("the plan search")
    arch = resolve_model(workload, design.catalog)
    start = plan_from_workload(workload, job, arch).with_(
        layout=JobLayout.for_gpus(job.num_gpus), pipeline_layers=None
    )
    comm = design_comm(design)
    found = search(
        arch,
        start,
        design.compute.gpu,
        comm,
        design.compute.job_nvlink_domain_gpus,
        top=1,
        stack=workload_stack(workload),
        host=design_host(design),
    )
    return found.predictions[0], comm


def _blocked(design: Design) -> str | None:
    errors = [f for f in design.findings if f.severity == "error"]
    return f"{errors[0].id}: {errors[0].message}" if errors else None


def _point(
    spec: OptimizeSpec,
    family: Family,
    variant: Variant,
    procurement: Procurement,
    design: Design,
    prediction: Prediction,
) -> DesignPoint:
    tokens = spec.job.tokens_b * 1e9
    work_days = prediction.time_to_train_s(tokens) / DAY_S
    expected = expected_goodput(
        inputs_from_design(design, days=work_days, step_s=prediction.step_time_s)
    )
    days = expected.wall_s / DAY_S
    price = job_usd_per_gpu_hour(design, procurement)
    job_cost = price * design.compute.num_training_gpus * days * 24.0
    p = prediction.plan
    return DesignPoint(
        family=family,
        variant=variant,
        procurement=procurement,
        spec=cluster_spec(spec, family, variant, design.spec.workload or spec.job, procurement),
        gpu=design.compute.gpu.id,
        num_nodes=design.compute.num_nodes,
        plan={
            **p.layout.degrees(),
            "vpp": p.layout.vpp,
            "micro_batch": p.micro_batch,
            "zero_stage": p.zero_stage,
            "recompute": p.recompute,
        },
        mfu=prediction.mfu,
        tokens_per_s=prediction.tokens_per_s,
        step_time_s=prediction.step_time_s,
        memory_per_gpu_gib=prediction.memory_per_gpu_gib,
        hbm_gib=design.compute.gpu.hbm_gib,
        largest_overhead=prediction.breakdown.largest_overhead(),
        failure_free_days=work_days,
        days=days,
        ettr=expected.ettr,
        usd_per_gpu_hour=price,
        cost_usd=job_cost,
        commitment_usd=_commitment_usd(design, procurement, job_cost, days),
        facility_mw=design.power.facility_kw / 1000.0,
        max_rack_kw=max((r.max_kw for r in design.racks), default=0.0),
        floor_kn_per_m2=max((r.floor.load_kn_per_m2 for r in design.racks), default=0.0),
        cooling=tuple(sorted({r.cooling.method for r in design.racks})),
        tokens=tokens,
    )


def _plan_variants(
    spec: OptimizeSpec, family: Family, variants: tuple[Variant, ...], start: WorkloadSpec
) -> tuple[list[tuple[Variant, Design]], list[str]]:
    """Each variant planned with the hardware workload, or the reason it cannot be built."""
    catalog = load_catalog()
    planned: list[tuple[Variant, Design]] = []
    rejected: list[str] = []
    for variant in variants:
        try:
            design = plan(cluster_spec(spec, family, variant, start), catalog)
        except ClusterforgeError as exc:
            rejected.append(f"{family.label()}: {exc}")
            continue
        if (blocker := _blocked(design)) is not None:
            rejected.append(f"{family.label()}: {blocker}")
            continue
        planned.append((variant, design))
    return planned, rejected


def evaluate_family(
    spec: OptimizeSpec,
    family: Family,
    variants: tuple[Variant, ...],
    procurements: tuple[Procurement, ...],
) -> FamilyResult:
    """Plan each variant, search the family's best plan once, assess every design."""
    catalog = load_catalog()
    try:
        start = hardware_workload(spec.job, family, catalog)
    except ClusterforgeError as exc:
        return FamilyResult(family, (), (str(exc),))
    planned, rejected = _plan_variants(spec, family, variants, start)
    if not planned:
        return FamilyResult(family, (), tuple(rejected), num_planned=len(variants))
    try:
        best, comm = _best_plan(planned[0][1])
    except ClusterforgeError as exc:
        rejected.append(f"{family.label()}: {exc}")
        return FamilyResult(family, (), tuple(rejected), len(variants), 1)
    workload = written_workload(spec.job, best)
    points: list[DesignPoint] = []
    for variant, design in planned:
        written = with_workload(design, cluster_spec(spec, family, variant, workload))
        if (blocker := _blocked(written)) is not None:
            rejected.append(f"{family.label()}: {blocker}")
            continue
        # Designs on the search's fabric share its simulated collectives (memoised).
        same = written.fabric == planned[0][1].fabric
        prediction = predict_workload(written, comm if same else None)
        if not prediction.fits:
            rejected.append(f"{family.label()}: the written plan does not fit the GPU's memory")
            continue
        points.extend(_point(spec, family, variant, p, written, prediction) for p in procurements)
    return FamilyResult(family, tuple(points), tuple(rejected), len(variants), 1)
