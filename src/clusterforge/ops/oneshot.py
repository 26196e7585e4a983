"""A one-shot node check: read, judge against the previous run's counters, act, all in budget.

This is what Slurm's HealthCheckProgram (or a Kubernetes DaemonSet loop) runs.  Slurm kills
the program after 60 s (slurm.conf(5), HealthCheckProgram), so the readings get
``source.budget_s`` (45 s by default) and the scheduler calls that drain or resume the node
share what is left of a further :data:`ACTION_MARGIN_S`.

Counters are judged by their increase since the previous run, kept in a state file
(:mod:`clusterforge.ops.state`); the first run, or a run without a state file, is a baseline.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from clusterforge.errors import AdapterError
from clusterforge.ops.actions import (
    Decision,
    KubernetesBackend,
    SchedulerBackend,
    SlurmBackend,
    apply_action,
)
from clusterforge.ops.checker import build_checker
from clusterforge.ops.options import ActionKind, CheckOptions, StateFile
from clusterforge.ops.runner import NodeChecker, Report
from clusterforge.ops.state import default_state_path, load_state, save_state

__all__ = ["ACTION_MARGIN_S", "CheckOutcome", "run_check", "state_path"]

# Seconds past the readings' budget for the drain/resume calls: 45 s + 13 s stays under
# Slurm's 60 s kill with 2 s to exit.  One scheduler call never gets more than 15 s.
ACTION_MARGIN_S = 13.0
_MAX_ACTION_CALL_S = 15.0
_MIN_ACTION_CALL_S = 2.0


@dataclass(frozen=True)
class CheckOutcome:
    """The verdict on the node and what was done about it (None: no action asked for)."""

    report: Report
    decision: Decision | None

    @property
    def alert(self) -> bool:
        """The operator must look: the breaker held a drain back, or the scheduler failed."""
        return self.decision is not None and self.decision.kind in ("breaker", "error")


def state_path(state_file: StateFile, node: str) -> tuple[Path | None, str | None]:
    """The state file to use and, when there is none for "auto", why."""
    if state_file is None:
        return None, None
    if state_file != "auto":
        return state_file, None
    path = default_state_path(node)
    if path is None:
        return None, (
            "no writable /var/lib/clusterforge: counters are judged by their totals; give a "
            "state file path to judge their increase between runs"
        )
    return path, None


def _with_notes(report: Report, notes: list[str]) -> Report:
    return dataclasses.replace(report, notes=(*report.notes, *notes))


def _run_with_state(checker: NodeChecker, state_file: StateFile) -> Report:
    """Run the checks against the previous run's counters, then store this run's."""
    path, why = state_path(state_file, checker.node)
    if path is None:
        return _with_notes(checker.run(None), [why] if why else [])
    loaded = load_state(path, checker.node, time.time())
    report = checker.run(loaded.previous)
    notes = list(loaded.notes)
    if report.errors:
        notes.append(f"state file {path} not updated: some readings failed")
    elif failed := save_state(path, report.reading):
        notes.append(failed)
    return _with_notes(report, notes)


def _backend(action: ActionKind, call_timeout_s: float) -> SchedulerBackend | None:
    match action:
        case "none":
            return None
        case "slurm-drain":
            return SlurmBackend(timeout_s=call_timeout_s)
        case "k8s-taint":
            return KubernetesBackend(timeout_s=call_timeout_s)
        case _:
            assert_never(action)


def _act(report: Report, options: CheckOptions, left_s: float) -> Decision | None:
    """Drain/resume; a scheduler that cannot be reached is reported, not a crash."""
    # Two scheduler round trips (state, then drain/resume) share what is left.
    call_timeout_s = min(_MAX_ACTION_CALL_S, max(_MIN_ACTION_CALL_S, left_s / 2))
    backend = _backend(options.action, call_timeout_s)
    if backend is None:
        return None
    try:
        return apply_action(report, backend, options.max_drain_fraction)
    except AdapterError as exc:
        return Decision("error", f"could not {options.action}: {exc}")


def run_check(options: CheckOptions) -> CheckOutcome:
    """Check this node once, keep its counters, and drain/resume it as ``options`` say.

    Raises :class:`~clusterforge.ops.expect.UnknownNodeError` when a spec is given and the
    node is not in its design, and other :class:`~clusterforge.errors.ClusterforgeError`
    for unusable inputs (spec, XID policy, NVML fixture).
    """
    start_s = time.monotonic()
    checker = build_checker(options.source)
    report = _run_with_state(checker, options.state_file)
    left_s = options.source.budget_s + ACTION_MARGIN_S - (time.monotonic() - start_s)
    return CheckOutcome(report=report, decision=_act(report, options, left_s))
