"""Training performance model: FLOPs, memory, parallelism plans, step time, plan search.

Pipeline: :mod:`flops` (model vs hardware FLOPs, conventions declared) → :mod:`parallel`
(plan validation, layer split, communication groups) → :mod:`compute` (per-layer GEMM,
attention and memory-bound time on one GPU, capped by the measured matmul ceiling; the
attention kernels in :mod:`attention`, the MoE expert layer in :mod:`moe`) and
:mod:`memory` (weights, gradients, optimizer, activations) → :mod:`exposure` (TP/PP/DP/CP/EP
communication through a :class:`~clusterforge.perf.comm.CommModel`, overlap stated) →
:mod:`step` (assembly with a breakdown) → :mod:`search` and :mod:`predict` (on a design).
The software stack's mechanisms are :mod:`stack`; FP8 costs :mod:`fp8`; ZeRO-3/FSDP
:mod:`sharded`; the error band of every prediction :mod:`uncertainty`.
"""

from clusterforge.perf.calibration import Calibration, CalibrationChange, calibration_from_dict
from clusterforge.perf.comm import CommModel, NetsimComm
from clusterforge.perf.parallel import ParallelPlan, validate_plan
from clusterforge.perf.predict import (
    PlanOverrides,
    PredictOutcome,
    PredictRequest,
    plan_from_workload,
    predict_plan,
    predict_workload,
    resolve_model,
    run_predict,
)
from clusterforge.perf.search import SearchResult, search
from clusterforge.perf.stack import STACK_NAMES, Stack, StackName, stack_named, workload_stack
from clusterforge.perf.step import FLOP_CONVENTION, Breakdown, Prediction, predict_step

__all__ = [
    "FLOP_CONVENTION",
    "STACK_NAMES",
    "Breakdown",
    "Calibration",
    "CalibrationChange",
    "CommModel",
    "NetsimComm",
    "ParallelPlan",
    "PlanOverrides",
    "PredictOutcome",
    "PredictRequest",
    "Prediction",
    "SearchResult",
    "Stack",
    "StackName",
    "calibration_from_dict",
    "plan_from_workload",
    "predict_plan",
    "predict_step",
    "predict_workload",
    "resolve_model",
    "run_predict",
    "search",
    "stack_named",
    "validate_plan",
    "workload_stack",
]
