"""Predictions on a designed cluster: the spec's workload, or any plan, over the real fabric.

:func:`predict_workload` is what ``clusterforge plan`` prints (expected MFU, tokens/s, time to
train the requested tokens); :func:`predict_plan` serves ``clusterforge predict``. Both time
communication with the flow-level simulator on the design's fabric
(:class:`~clusterforge.perf.comm.NetsimComm`) unless a :class:`CommModel` is given.
"""

from __future__ import annotations

from typing import Any

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.errors import SimulationError
from clusterforge.perf.comm import CommModel, NetsimComm, netsim_available
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.spec import WorkloadSpec

__all__ = [
    "design_comm",
    "plan_from_workload",
    "predict_plan",
    "predict_workload",
    "resolve_model",
]


def resolve_model(workload: WorkloadSpec) -> ModelArch:
    """The workload's architecture: a catalog preset or the explicit dimensions."""
    if isinstance(workload.model, ModelArch):
        return workload.model
    return load_catalog().models[workload.model]


def plan_from_workload(workload: WorkloadSpec, num_gpus: int, arch: ModelArch) -> ParallelPlan:
    """The plan the spec asks for (DP = GPUs / (TP x PP x CP) when not given)."""
    model_parallel = workload.tensor_parallel * workload.pipeline_parallel
    model_parallel *= workload.context_parallel
    dp = workload.data_parallel or max(1, num_gpus // model_parallel)
    layers = tuple(workload.pipeline_layers) if workload.pipeline_layers else None
    return ParallelPlan(
        tp=workload.tensor_parallel,
        pp=workload.pipeline_parallel,
        dp=dp,
        cp=workload.context_parallel,
        ep=workload.expert_parallel,
        vpp=workload.virtual_pipeline_stages,
        micro_batch=workload.micro_batch,
        global_batch=workload.global_batch,
        seq_length=workload.seq_length or arch.seq_length,
        sequence_parallel=workload.sequence_parallel,
        recompute=workload.recompute,
        zero_stage=workload.zero_stage,
        precision=workload.precision,
        pipeline_layers=layers,
    )


def design_comm(design: Any) -> CommModel:
    """The netsim-backed communication model of a design (build once, reuse)."""
    if not netsim_available():
        raise SimulationError(
            "the network simulator (clusterforge.netsim) is not available in this install; "
            "predictions need it to time collectives on the designed fabric"
        )
    return NetsimComm(design)


def predict_plan(
    design: Any,
    plan: ParallelPlan,
    arch: ModelArch | None = None,
    comm: CommModel | None = None,
    stack: Stack | None = None,
) -> Prediction:
    """Predict ``plan`` on ``design`` (its GPU, NVLink domain and fabric)."""
    arch = arch or resolve_model(design.require_workload("a prediction")[0])
    return predict_step(
        arch,
        plan,
        design.compute.gpu,
        comm or design_comm(design),
        design.compute.nvlink_domain_gpus,
        stack,
    )


def predict_workload(design: Any, comm: CommModel | None = None) -> Prediction:
    """Predict the spec's own workload on the design (``clusterforge plan`` prints this)."""
    workload, _ = design.require_workload("a prediction")
    arch = resolve_model(workload)
    plan = plan_from_workload(workload, design.compute.num_training_gpus, arch)
    return predict_plan(design, plan, arch, comm)
