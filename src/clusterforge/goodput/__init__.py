"""Goodput: failures, checkpoints, restarts and spares, and the real time to train.

::

    from clusterforge.goodput import goodput_report
    report = goodput_report(design, runs=1000)
    report.expected.ettr, report.percentile_days(90)
"""

from clusterforge.goodput.analysis import (
    GoodputReport,
    goodput_report,
    inputs_from_design,
    life_params,
)
from clusterforge.goodput.checkpoint import CheckpointCost, checkpoint_cost, checkpoint_floor_s
from clusterforge.goodput.expected import Expected, GoodputInputs, LostTime, expected_goodput
from clusterforge.goodput.model import daly_interval_s, expected_wall_s, spare_pool
from clusterforge.goodput.montecarlo import LifeParams, Lives, simulate_lives
from clusterforge.goodput.rates import FailureClass, JobRates, failure_classes, job_rates
from clusterforge.goodput.whatif import what_ifs

__all__ = [
    "CheckpointCost",
    "Expected",
    "FailureClass",
    "GoodputInputs",
    "GoodputReport",
    "JobRates",
    "LifeParams",
    "Lives",
    "LostTime",
    "checkpoint_cost",
    "checkpoint_floor_s",
    "daly_interval_s",
    "expected_goodput",
    "expected_wall_s",
    "failure_classes",
    "goodput_report",
    "inputs_from_design",
    "job_rates",
    "life_params",
    "simulate_lives",
    "spare_pool",
    "what_ifs",
]
