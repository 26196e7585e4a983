"""Acceptance and burn-in of a built cluster, against the design's own targets.

::

    from clusterforge.accept import AcceptOptions, SlurmLauncher, run_acceptance
    report = run_acceptance(design, AcceptOptions(), SlurmLauncher(Path("accept-out")))
    report.exit_code, report.failed_nodes, report.localization
"""

from clusterforge.accept.launch import Launcher, LocalLauncher, SlurmLauncher, Step, StepRun
from clusterforge.accept.localize import Localization, bisect_slowest
from clusterforge.accept.suite import TESTS, AcceptOptions, AcceptReport, run_acceptance
from clusterforge.accept.targets import Target, Targets, allreduce_bound_gbyte_per_s, design_targets
from clusterforge.accept.verdicts import TestResult

__all__ = [
    "TESTS",
    "AcceptOptions",
    "AcceptReport",
    "Launcher",
    "LocalLauncher",
    "Localization",
    "SlurmLauncher",
    "Step",
    "StepRun",
    "Target",
    "Targets",
    "TestResult",
    "allreduce_bound_gbyte_per_s",
    "bisect_slowest",
    "design_targets",
    "run_acceptance",
]
