"""What a rehearsal asks for and what it found: options, drill results, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clusterforge.rehearse.emulated import Ports

__all__ = [
    "DRILLS",
    "MONITORED",
    "DrillName",
    "DrillResult",
    "RehearseOptions",
    "RehearseReport",
    "Verdict",
]

DrillName = Literal[
    "bring-up", "accept", "lossy-link", "xid", "prometheus", "nic-flap", "slow-node"
]
DRILLS: tuple[DrillName, ...] = (
    "bring-up",
    "accept",
    "lossy-link",
    "xid",
    "prometheus",
    "nic-flap",
    "slow-node",
)
MONITORED: tuple[DrillName, ...] = ("prometheus", "nic-flap", "slow-node")  # need Prometheus
Verdict = Literal["pass", "fail", "skip"]

# Away from the other emulated clusters on a host (tests use 16817/17001 and 16917/17101).
REHEARSE_PORTS = Ports(ctld_port=18817, first_slurmd_port=18901, first_job_id=18817000)


@dataclass(frozen=True)
class RehearseOptions:
    spec: Path
    num_nodes: int = 4
    keep: bool = False  # leave the cluster running at the end
    work: Path | None = None  # None: a new temporary folder
    drills: tuple[DrillName, ...] = DRILLS
    burn_s: float = 2.0  # accept burn-in per node
    max_bytes: int = 4 << 20  # accept collective sweep ceiling
    cluster: str = "cfrehearse"
    ports: Ports = REHEARSE_PORTS
    slow_cpu_fraction: float = 0.2  # the slowed node gets this share of one core
    prometheus_port: int = 18990
    first_exporter_port: int = 18951  # node i's exporter listens on this + i
    first_clock_port: int = 18971  # node i's clock stand-in listens on this + i
    alert_for_s: int = 15  # the rules' longer 'for:' durations are shortened to this


@dataclass(frozen=True)
class DrillResult:
    """One drill: its verdict, what showed it, and how long it took.

    ``detect_s``: from the fault's injection to the first sign of it (the health check's
    verdict, an alert, a failed test); ``drain_s``: from injection to the node drained in
    Slurm; ``recover_s``: from healing to the node accepting jobs again.
    """

    name: DrillName
    verdict: Verdict
    evidence: tuple[str, ...] = ()
    duration_s: float = 0.0
    detect_s: float | None = None
    drain_s: float | None = None
    recover_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "drill": self.name,
            "verdict": self.verdict,
            "evidence": list(self.evidence),
            "duration_s": round(self.duration_s, 2),
            "detect_s": _rounded(self.detect_s),
            "drain_s": _rounded(self.drain_s),
            "recover_s": _rounded(self.recover_s),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


@dataclass(frozen=True)
class RehearseReport:
    cluster: str
    nodes: tuple[str, ...]
    drills: tuple[DrillResult, ...]
    work: Path
    kept: bool = False
    reach: dict[str, str] = field(default_factory=dict)  # with --keep: how to reach the cluster

    @property
    def exit_code(self) -> int:
        """0 when no drill failed (skipped drills are listed with their reason), else 1."""
        return 1 if any(d.verdict == "fail" for d in self.drills) else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "nodes": list(self.nodes),
            "drills": [d.as_dict() for d in self.drills],
            "work": str(self.work),
            "kept": self.kept,
            "reach": self.reach,
            "exit_code": self.exit_code,
        }
