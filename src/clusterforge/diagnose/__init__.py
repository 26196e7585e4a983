"""Why is my job slow: verdicts from the metrics the generated monitoring collects.

:func:`run_diagnose` (:mod:`~clusterforge.diagnose.run`) reads a job's GPUs and hosts from
Prometheus (:mod:`~clusterforge.diagnose.collect`), judges them with pure rules
(:mod:`~clusterforge.diagnose.rules`, :mod:`~clusterforge.diagnose.judge`) and, given a
prediction, says how far the job runs from it (:mod:`~clusterforge.diagnose.expected`).
"""

from __future__ import annotations

from clusterforge.diagnose.collect import JobSelector, NoSeriesError
from clusterforge.diagnose.expected import Comparison
from clusterforge.diagnose.hostlist import expand_hostlist
from clusterforge.diagnose.judge import diagnose_readings
from clusterforge.diagnose.prometheus import (
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
from clusterforge.diagnose.run import (
    DiagnoseRequest,
    DiagnoseResult,
    expected_prediction,
    run_diagnose,
)

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
