"""Training performance model: FLOPs, memory, parallelism plans, step time, plan search.

Pipeline: :mod:`flops` (model vs hardware FLOPs, conventions declared) → :mod:`parallel`
(plan validation, layer split, communication groups) → :mod:`compute` (per-layer GEMM,
attention and memory-bound time on one GPU, capped by the measured matmul ceiling) and
:mod:`memory` (weights, gradients, optimizer, activations) → :mod:`exposure` (TP/PP/DP/CP/EP
communication through a :class:`~clusterforge.perf.comm.CommModel`, overlap stated) →
:mod:`step` (assembly with a breakdown) → :mod:`search` and :mod:`predict` (on a design).
"""

from clusterforge.perf.comm import CommModel, NetsimComm
from clusterforge.perf.parallel import ParallelPlan, split_layers, validate_plan
from clusterforge.perf.predict import (
    plan_from_workload,
    predict_plan,
    predict_workload,
    resolve_model,
)
from clusterforge.perf.search import search_plans
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import FLOP_CONVENTION, Breakdown, Prediction, predict_step

__all__ = [
    "FLOP_CONVENTION",
    "Breakdown",
    "CommModel",
    "NetsimComm",
    "ParallelPlan",
    "Prediction",
    "Stack",
    "plan_from_workload",
    "predict_plan",
    "predict_step",
    "predict_workload",
    "resolve_model",
    "search_plans",
    "split_layers",
    "validate_plan",
]
