"""Published job-level reliability figures (``goodput_published.toml``) and their model.

Each row names a job (GPUs, nodes, NICs, days), what was measured and the figure, and is
modelled through the public functions of ``clusterforge.goodput``: ``job_rates`` for the
failure rates of the packaged classes (or the source's own fleet rate when the row states
one), ``expected_goodput`` (Daly's complete model) for the effective training time ratio.
A row the model cannot express says why (``why_not``) and is reported, never dropped.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, assert_never

from clusterforge.goodput import GoodputInputs, JobRates, expected_goodput, failure_classes
from clusterforge.goodput import job_rates as packaged_rates
from validation.sets import Subset, data_files, file_rows, kind_of

__all__ = ["ROWS", "Outcome", "Row", "check_row", "load_rows", "model_row"]

Metric = Literal["interruptions", "share", "mtbf_h", "ettr"]
Bound = Literal["equal", "at_least", "at_most"]
HOURS_PER_DAY = 24.0
DAY_S = 86400.0


@dataclass(frozen=True)
class Job:
    """The job a figure belongs to: its failure exposure and the span it was observed over."""

    num_gpus: int
    num_nodes: int
    num_nics: int
    days: float


@dataclass(frozen=True)
class Checkpointing:
    """ETTR inputs, seconds (interval None = Daly's optimum); work in days."""

    delta_s: float
    relaunch_s: float
    read_s: float
    interval_s: float | None
    work_days: float


@dataclass(frozen=True)
class Row:
    """One published figure with what the model needs to reproduce it."""

    id: str
    subset: Subset
    source: str
    measured: str
    metric: Metric
    published: float
    bound: Bound
    job: Job | None
    classes: tuple[str, ...] | None  # None = every class
    rate_per_node_day: float | None
    checkpointing: Checkpointing | None
    tolerance: float | None
    why_not: str | None
    note: str


@dataclass(frozen=True)
class Outcome:
    """A row and its modelled figure (None when the model cannot express the row)."""

    row: Row
    modelled: float | None

    @property
    def error(self) -> float | None:
        """Signed relative error, modelled / published - 1."""
        return None if self.modelled is None else self.modelled / self.row.published - 1.0

    @property
    def meets_bound(self) -> bool | None:
        """For a bound ("over 90 %"): does the model satisfy it? None for a plain value."""
        if self.modelled is None:
            return None
        match self.row.bound:
            case "equal":
                return None
            case "at_least":
                return self.modelled >= self.row.published
            case "at_most":
                return self.modelled <= self.row.published
            case _:
                assert_never(self.row.bound)

    @property
    def within_tolerance(self) -> bool | None:
        """The row's asserted check (None when the row has no tolerance)."""
        tol, err = self.row.tolerance, self.error
        if tol is None or err is None:
            return None
        match self.row.bound:
            case "equal":
                return abs(err) <= tol
            case "at_least":
                return err >= -tol
            case "at_most":
                return err <= tol
            case _:
                assert_never(self.row.bound)


def _job(raw: dict[str, Any]) -> Job | None:
    if "num_gpus" not in raw:
        return None
    return Job(
        num_gpus=int(raw["num_gpus"]),
        num_nodes=int(raw["num_nodes"]),
        num_nics=int(raw["num_nics"]),
        days=float(raw["days"]),
    )


def _checkpointing(raw: dict[str, Any]) -> Checkpointing | None:
    if raw["metric"] != "ettr" or "why_not" in raw:
        return None
    interval = raw.get("interval_s")
    return Checkpointing(
        delta_s=float(raw["delta_s"]),
        relaunch_s=float(raw["relaunch_s"]),
        read_s=float(raw["read_s"]),
        interval_s=None if interval is None else float(interval),
        work_days=float(raw["work_days"]),
    )


def _row(raw: dict[str, Any]) -> Row:
    classes = raw.get("classes")
    rate = raw.get("rate_per_node_day")
    tolerance = raw.get("tolerance")
    return Row(
        id=raw["id"],
        subset=raw["set"],
        source=raw["source"],
        measured=raw["measured"],
        metric=raw["metric"],
        published=float(raw["published"]),
        bound=raw["bound"],
        job=_job(raw),
        classes=None if classes is None else tuple(classes),
        rate_per_node_day=None if rate is None else float(rate),
        checkpointing=_checkpointing(raw),
        tolerance=None if tolerance is None else float(tolerance),
        why_not=raw.get("why_not"),
        note=raw.get("note", ""),
    )


def raw_rows() -> list[tuple[str, dict[str, Any]]]:
    """(file name, row) of every goodput row of the data files (any ``*.toml`` here whose
    rows name what was ``measured``), in file order."""
    return [
        (path.name, raw)
        for path in data_files()
        for raw in file_rows(tomllib.loads(path.read_text()))
        if kind_of(raw) == "goodput"
    ]


def load_rows(path: Path | None = None) -> list[Row]:
    """Every goodput row, in file order (of ``path`` alone when given)."""
    if path is not None:
        return [_row(raw) for raw in file_rows(tomllib.loads(path.read_text()))]
    return [_row(raw) for _, raw in raw_rows()]


def _all_rates(row: Row, job: Job) -> JobRates:
    """The job's interruptions per hour by class: the packaged classes, or one class at the
    source's own per-node rate when the row states it."""
    if row.rate_per_node_day is not None:
        per_hour = row.rate_per_node_day / HOURS_PER_DAY * job.num_nodes
        return JobRates(per_hour={"source": per_hour}, needs_spare={"source": True})
    return packaged_rates(num_gpus=job.num_gpus, num_nodes=job.num_nodes, num_nics=job.num_nics)


def _selected(rates: JobRates, classes: tuple[str, ...] | None) -> JobRates:
    """The rates of the counted classes only (all of them when ``classes`` is None)."""
    keep = rates.per_hour.keys() if classes is None else classes
    return JobRates(
        per_hour={c: rates.per_hour[c] for c in keep},
        needs_spare={c: rates.needs_spare[c] for c in keep},
    )


def _ettr(rates: JobRates, ckpt: Checkpointing) -> float:
    inputs = GoodputInputs(
        rates=rates,
        work_s=ckpt.work_days * DAY_S,
        delta_s=ckpt.delta_s,
        relaunch_s=ckpt.relaunch_s,
        read_s=ckpt.read_s,
        interval_s=ckpt.interval_s,
    )
    return expected_goodput(inputs).ettr


def model_row(row: Row) -> Outcome:
    """The model's figure for ``row`` (None, with the row's ``why_not``, if it has none)."""
    if row.why_not is not None or row.job is None:
        return Outcome(row, None)
    every = _all_rates(row, row.job)
    counted = _selected(every, row.classes)
    match row.metric:
        case "interruptions":
            value = counted.total_per_hour * HOURS_PER_DAY * row.job.days
        case "share":
            value = counted.total_per_hour / every.total_per_hour
        case "mtbf_h":
            value = counted.mtbf_h
        case "ettr":
            assert row.checkpointing is not None, row.id
            value = _ettr(counted, row.checkpointing)
        case _:
            assert_never(row.metric)
    return Outcome(row, value)


def check_row(row: Row) -> None:
    """Internal consistency of a data row: classes exist, every figure has its inputs."""
    known = {c.id for c in failure_classes()}
    assert row.classes is None or set(row.classes) <= known, (row.id, row.classes)
    assert row.why_not is not None or row.job is not None, row.id
    assert row.metric != "ettr" or row.why_not is not None or row.checkpointing, row.id
    assert math.isfinite(row.published) and row.published > 0, row.id


ROWS = load_rows()
