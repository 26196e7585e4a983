"""What a node check and the exporter are asked to do: frozen values, parsed once.

The command line (or any other caller) fills these; :func:`clusterforge.ops.checker.build_checker`,
:func:`clusterforge.ops.oneshot.run_check` and :func:`clusterforge.ops.serve.start_exporter`
read them.  Nothing here touches the node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clusterforge.ops.expect import ExpectOverrides

__all__ = [
    "DEFAULT_BUDGET_S",
    "ActionKind",
    "CheckOptions",
    "ExporterOptions",
    "SourceOptions",
    "StateFile",
]

ActionKind = Literal["none", "slurm-drain", "k8s-taint"]
# Where a one-shot check keeps the previous run's counters: a path, "auto" (the default
# folder when writable, see clusterforge.ops.state) or None (no state: every run a baseline).
StateFile = Path | Literal["auto"] | None

# Slurm kills a HealthCheckProgram that runs longer than 60 s (slurm.conf(5),
# HealthCheckProgram); the readings get 45 s and a drain the rest.
DEFAULT_BUDGET_S = 45.0


@dataclass(frozen=True)
class SourceOptions:
    """What to read on the node and what to expect of it."""

    node: str | None = None  # the node's name in reports and actions; None: the short hostname
    spec_path: Path | None = None  # a cluster spec: the node must match its design
    nvml_fixture: Path | None = None  # replay recorded NVML readings instead of the GPUs
    sysfs_root: Path = Path("/")  # root of /sys and /proc (a fake tree in tests)
    budget_s: float = DEFAULT_BUDGET_S  # for all readings together
    xid_policy_path: Path | None = None  # a site's XID actions laid over the default policy
    overrides: ExpectOverrides = field(default_factory=ExpectOverrides)
    # programs (by file name) that may hold a GPU outside a job, besides the default list
    allowed_processes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckOptions:
    """A one-shot check: the source, the state file, and what to do about the verdict."""

    source: SourceOptions = field(default_factory=SourceOptions)
    state_file: StateFile = "auto"
    action: ActionKind = "none"
    max_drain_fraction: float = 0.1  # circuit breaker: the share of nodes we may drain


@dataclass(frozen=True)
class ExporterOptions:
    """The exporter: the source, where to listen, and how often the checks run."""

    source: SourceOptions = field(default_factory=SourceOptions)
    address: str = "0.0.0.0"
    port: int = 9410
    interval_s: float = 60.0  # between check runs; scrapes read the last result
