"""Published peak memory per GPU of training runs, and the memory ``predict`` gives them.

A *memory* row (:func:`validation.sets.kind_of`: it names ``measured_memory_gib``) states the
peak memory one GPU of a published run showed, what the figure counts (``memory_kind``) and
the run it belongs to (``run``: the ``name`` of a training-run row of this folder, whose
model, cluster, stack and plan it shares). A row may narrow what the run leaves open with
``micro_batch`` and ``vpp`` (one value each) when its source states them.

The predicted figure is the memory of the plan ``predict`` chooses for the run
(:func:`validation.runs.predict_run`, the ``memory_gib`` that ``predict --json`` prints:
:class:`clusterforge.perf.memory.MemoryBreakdown`, tensors plus a fixed runtime reserve,
i.e. the memory the caching allocator holds, not only the live tensors); when no plan of
the run fits, the memory of its first candidate with the recomputation it states.

A memory row's set never exposes a held-out run: a calibration or development memory row
must name a calibration or development run.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal, get_args

from clusterforge.perf.memory import MemoryBreakdown, memory_per_gpu
from clusterforge.perf.parallel import validate_plan
from validation.runs import Run, candidates, load_runs, predict_run
from validation.sets import Subset, data_files, file_rows, kind_of

__all__ = [
    "MemoryKind",
    "MemoryOutcome",
    "MemoryRow",
    "load_memory_rows",
    "memory_rows_of",
    "predict_memory",
]

# What a published figure counts: torch.cuda.max_memory_reserved (the caching allocator's
# segments, what torchtitan's step log prints), torch.cuda.max_memory_allocated (live
# tensors only), or nvidia-smi's used memory (reserved + CUDA context + NCCL buffers).
MemoryKind = Literal["max_reserved", "max_allocated", "nvidia_smi"]


@dataclass(frozen=True)
class MemoryRow:
    """One published peak memory per GPU and the run it was measured on."""

    file: str
    id: str
    subset: Subset
    source: str
    run: Run
    measured_gib: float
    kind: MemoryKind

    @property
    def name(self) -> str:
        """The row's id (the name the test cases and listings use)."""
        return self.id


def _run_of(row: dict[str, Any], runs: dict[str, Run], where: str) -> Run:
    run = runs.get(row["run"])
    if run is None:
        raise ValueError(f"{where}: run {row['run']!r} is no training-run row of validation/")
    if row["set"] != "heldout" and run.subset == "heldout":
        raise ValueError(f"{where}: a {row['set']} row may not name the held-out run {run.name}")
    if "micro_batch" in row:
        run = replace(run, micro_batches=(int(row["micro_batch"]),))
    if "vpp" in row:
        run = replace(run, virtual_stages=(int(row["vpp"]),))
    return run


def memory_rows_of(file: str, raw: dict[str, Any], runs: dict[str, Run]) -> list[MemoryRow]:
    """The memory rows of one parsed data file (``[defaults]`` merged in)."""
    out = []
    for row in file_rows(raw):
        if kind_of(row) != "memory":
            continue
        where = f"validation/{file}, row {row.get('id', '?')}"
        if row.get("memory_kind") not in get_args(MemoryKind):
            raise ValueError(f"{where}: memory_kind is one of {list(get_args(MemoryKind))}")
        out.append(
            MemoryRow(
                file=file,
                id=row["id"],
                subset=row["set"],
                source=row["source"],
                run=_run_of(row, runs, where),
                measured_gib=float(row["measured_memory_gib"]),
                kind=row["memory_kind"],
            )
        )
    return out


@cache
def load_memory_rows() -> tuple[MemoryRow, ...]:
    """Every memory row of the data files of this folder (all three sets)."""
    runs = {run.name: run for run in load_runs()}
    rows: list[MemoryRow] = []
    for path in data_files():
        rows += memory_rows_of(path.name, tomllib.loads(path.read_text()), runs)
    return tuple(rows)


@dataclass(frozen=True)
class MemoryOutcome:
    """A memory row's prediction: the breakdown of the plan ``predict`` chose."""

    row: MemoryRow
    memory: MemoryBreakdown
    fits: bool  # whether predict found a plan of the run that fits

    @property
    def predicted_gib(self) -> float:
        return self.memory.total_gib

    @property
    def error(self) -> float:
        """Signed relative error, (predicted - measured) / measured."""
        return self.predicted_gib / self.row.measured_gib - 1.0


def predict_memory(row: MemoryRow) -> MemoryOutcome:
    """The predicted peak memory per GPU of the row's run."""
    outcome = predict_run(row.run)
    if outcome.prediction is not None:
        return MemoryOutcome(row, outcome.prediction.memory, fits=True)
    run = row.run
    plan = candidates(run)[0].with_(recompute=run.recompute[-1])
    stages = validate_plan(run.arch, plan, plan.layout.num_gpus)
    return MemoryOutcome(row, memory_per_gpu(run.arch, plan, stages, run.stack), fits=False)
