"""One diagnosis of a running job: read its series from Prometheus, judge them, and compare
the job with what ``predict`` expects of its spec."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clusterforge.diagnose.collect import JobSelector, read_job
from clusterforge.diagnose.expected import Comparison, compare
from clusterforge.diagnose.judge import diagnose_readings
from clusterforge.diagnose.prometheus import PrometheusClient
from clusterforge.diagnose.readings import JobReadings, Thresholds
from clusterforge.diagnose.rules import Diagnosis

if TYPE_CHECKING:
    from clusterforge.perf import Prediction

__all__ = ["DiagnoseRequest", "DiagnoseResult", "expected_prediction", "run_diagnose"]


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
