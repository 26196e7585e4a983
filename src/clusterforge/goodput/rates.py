"""Failure rates per component class, and what they add up to for one job.

The classes and their rates are package data (``data/failure_rates.toml``, each with its
source). A job is interrupted when any of its GPUs, NICs or hosts fails: in synchronous
data-parallel training one lost rank stops every rank, so the job's failure rate is the sum
of its components' rates (a series system).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Literal, assert_never

from clusterforge.errors import CatalogError

__all__ = ["FailureClass", "JobRates", "failure_classes", "job_rates"]

Unit = Literal["gpu", "node", "nic"]


@dataclass(frozen=True)
class FailureClass:
    """One class of job-interrupting failure and its rate per unit-hour."""

    id: str
    name: str
    per: Unit
    per_unit_hour: float
    needs_spare: bool
    source: str


@dataclass(frozen=True)
class JobRates:
    """Failures per hour of one job, by class (already scaled)."""

    per_hour: dict[str, float]
    needs_spare: dict[str, bool]

    @property
    def total_per_hour(self) -> float:
        return sum(self.per_hour.values())

    @property
    def spare_per_hour(self) -> float:
        """Failures per hour that take a node out of the job until it is repaired."""
        return sum(r for c, r in self.per_hour.items() if self.needs_spare[c])

    @property
    def mtbf_h(self) -> float:
        """Mean time between job interruptions, hours (inf when nothing can fail)."""
        total = self.total_per_hour
        return float("inf") if total <= 0 else 1.0 / total


def failure_classes() -> tuple[FailureClass, ...]:
    """The packaged failure classes (see the data file for the derivation of each rate)."""
    text = resources.files("clusterforge.goodput").joinpath("data/failure_rates.toml").read_text()
    try:
        rows = tomllib.loads(text)["class"]
        return tuple(
            FailureClass(
                id=r["id"],
                name=r["name"],
                per=r["per"],
                per_unit_hour=float(r["per_unit_hour"]),
                needs_spare=bool(r["needs_spare"]),
                source=r["source"],
            )
            for r in rows
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"goodput failure_rates.toml is malformed: {exc}") from None


def _units(per: Unit, *, num_gpus: int, num_nodes: int, num_nics: int) -> int:
    match per:
        case "gpu":
            return num_gpus
        case "node":
            return num_nodes
        case "nic":
            return num_nics
        case _:
            assert_never(per)


def job_rates(*, num_gpus: int, num_nodes: int, num_nics: int, scale: float = 1.0) -> JobRates:
    """Interruptions per hour for a job on ``num_gpus`` GPUs in ``num_nodes`` nodes."""
    classes = failure_classes()
    per_hour = {
        c.id: scale
        * c.per_unit_hour
        * _units(c.per, num_gpus=num_gpus, num_nodes=num_nodes, num_nics=num_nics)
        for c in classes
    }
    return JobRates(per_hour=per_hour, needs_spare={c.id: c.needs_spare for c in classes})
