"""Why is my job slow: verdicts from the metrics the generated monitoring collects.

:func:`run_diagnose` reads a job's GPUs and hosts from Prometheus
(:mod:`~clusterforge.diagnose.collect`), judges them with pure rules
(:mod:`~clusterforge.diagnose.rules`, :mod:`~clusterforge.diagnose.judge`) and, given a
prediction, says how far the job runs from it (:mod:`~clusterforge.diagnose.expected`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clusterforge.diagnose.collect import JobSelector, NoSeriesError, read_job
from clusterforge.diagnose.expected import Comparison, compare
from clusterforge.diagnose.hostlist import expand_hostlist
from clusterforge.diagnose.judge import diagnose_readings
from clusterforge.diagnose.prometheus import (
    PrometheusClient,
    PrometheusError,
    PrometheusUnreachableError,
)
from clusterforge.diagnose.readings import (
    GpuReading,
    JobReadings,
    NodeReading,
    Thresholds,
    thresholds_from,
)
from clusterforge.diagnose.rules import Diagnosis, Finding, NodeVerdict, Verdict

if TYPE_CHECKING:
    from clusterforge.perf import Prediction

__all__ = [
    "Comparison",
    "DiagnoseRequest",
    "DiagnoseResult",
    "Diagnosis",
    "Finding",
    "GpuReading",
    "JobReadings",
    "JobSelector",
    "NoSeriesError",
    "NodeReading",
    "NodeVerdict",
    "PrometheusError",
    "PrometheusUnreachableError",
    "Thresholds",
    "Verdict",
    "diagnose_readings",
    "expand_hostlist",
    "expected_prediction",
    "run_diagnose",
    "thresholds_from",
]


@dataclass(frozen=True, kw_only=True)
class DiagnoseRequest:
    """Where to look, which GPUs, over which window, and what to compare with."""

    prometheus_url: str
    selector: JobSelector
    window: str = "30m"
    at_s: float | None = None  # evaluation time; None = now
    tokens_query: str | None = None  # PromQL giving the job's tokens/s, when it exports one
    thresholds: Thresholds = field(default_factory=Thresholds)
    expect_spec: Path | None = None  # compare with what `predict` expects of this spec


def expected_prediction(spec_path: Path) -> Prediction:
    """What ``predict`` expects of the spec's workload on the spec's design."""
    from clusterforge.design import plan
    from clusterforge.perf import predict_workload
    from clusterforge.spec import load_spec

    return predict_workload(plan(load_spec(spec_path)))


@dataclass(frozen=True)
class DiagnoseResult:
    diagnosis: Diagnosis
    readings: JobReadings
    comparison: Comparison | None


def run_diagnose(request: DiagnoseRequest) -> DiagnoseResult:
    """Read, judge and compare (with ``request.expect_spec``); raises :class:`PrometheusUnreachableError` when nothing
    answers and :class:`NoSeriesError` when the job has no GPU series."""
    at_s = time.time() if request.at_s is None else request.at_s
    client = PrometheusClient(request.prometheus_url, at_s)
    readings = read_job(
        client, request.selector, window=request.window, tokens_query=request.tokens_query
    )
    diagnosis = diagnose_readings(readings, request.thresholds)
    comparison = None
    if request.expect_spec is not None:
        comparison = compare(readings, expected_prediction(request.expect_spec))
    return DiagnoseResult(diagnosis, readings, comparison)
