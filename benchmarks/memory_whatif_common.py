"""The harness the peak-memory what-ifs share: swap ``memory_per_gpu`` where the plan search
and the step prediction call it, and print the memory rows, the training runs whose plan or
fit changes and the MAPE per set and class, before against after.

Used by ``benchmarks/loss_parallel_memory_whatif.py`` and
``benchmarks/liger_flce_memory_whatif.py``.
"""

from __future__ import annotations

import importlib
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from clusterforge.perf.memory import MemoryBreakdown
from clusterforge.perf.uncertainty import run_class
from validation.memory_rows import load_memory_rows
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

MemoryFn = Callable[[Any, Any, Any, Any], MemoryBreakdown]

# The modules that call memory_per_gpu (the package re-exports functions of the same names).
PATCHED = ("clusterforge.perf.search", "clusterforge.perf.step")


@contextmanager
def patched_memory(memory: MemoryFn) -> Iterator[None]:
    """``memory`` in place of ``memory_per_gpu`` for the duration of the block."""
    modules: list[Any] = [importlib.import_module(name) for name in PATCHED]
    saved = [m.memory_per_gpu for m in modules]
    for module in modules:
        module.memory_per_gpu = memory
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.memory_per_gpu = original


def _row_gib(row: Any) -> float | None:
    pred = best_prediction(row.run, run_comm(run_design(row.run)))
    return pred.memory.total_gib if pred is not None else None


def variant_table(
    variants: tuple[str, ...], patched: Callable[[str], MemoryFn], residual_of: str | None = None
) -> tuple[list[Any], dict[str, list[float | None]]]:
    """Each development memory row's peak (GiB) under each variant, printed one row per line:
    published, each variant's GiB and error, and what ``residual_of`` leaves unpriced."""
    rows = [r for r in load_memory_rows() if r.subset == "development"]
    table: dict[str, list[float | None]] = {}
    for v in variants:
        with patched_memory(patched(v)):
            table[v] = [_row_gib(r) for r in rows]
    head = "".join(f"{k:>16}" for k in table)
    tail = "  residual GiB" if residual_of else ""
    print(f"  {'memory row (development)':<40} {'GiB':>6}{head}{tail}")
    for i, row in enumerate(rows):
        cells = ""
        for values in table.values():
            gib = values[i]
            err = f"{(gib / row.measured_gib - 1) * 100:+5.1f} %" if gib else "no fit"
            cells += f"{gib or 0.0:>7.1f} {err:>8}"
        if residual_of:
            cells += f"  {row.measured_gib - (table[residual_of][i] or 0.0):>6.1f}"
        print(f"  {row.id:<40} {row.measured_gib:>6.1f}{cells}")
    return rows, table


def _predict_all(runs: list[Run]) -> dict[str, Any]:
    return {r.name: best_prediction(r, run_comm(run_design(r))) for r in runs}


def _memory_rows() -> list[tuple[str, float, float | None, bool]]:
    out = []
    for row in load_memory_rows():
        if row.subset == "heldout":
            continue
        pred = best_prediction(row.run, run_comm(run_design(row.run)))
        gib = pred.memory.total_gib if pred is not None else None
        out.append((row.id, row.measured_gib, gib, pred is not None))
    return out


def _plan(pred: Any) -> str:
    if pred is None:
        return "no plan fits"
    p = pred.plan
    return f"mb {p.micro_batch} {p.recompute} ({p.recompute_layers} layers) {pred.memory.total_gib:.1f} GiB {pred.tokens_per_s_per_gpu:.1f} tok/s/GPU"


def _mape(runs: list[Run], preds: dict[str, Any]) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        pred = preds[run.name]
        if pred is None:
            continue
        err = abs(getattr(pred, run.metric) / run.published - 1.0)
        groups[run.subset].append(err)
        groups[f"{run.subset} {run_class(run.arch, pred.plan, run.stack)}"].append(err)
    return {k: statistics.fmean(v) for k, v in sorted(groups.items())}


def compare(before: AbstractContextManager[None], after: AbstractContextManager[None]) -> None:
    """Print the calibration and development memory rows and training runs under ``before``
    against ``after`` (held-out rows are neither predicted nor printed)."""
    runs = [r for r in load_runs() if r.subset != "heldout"]
    with before:
        before_rows, preds_before = _memory_rows(), _predict_all(runs)
    with after:
        after_rows, preds_after = _memory_rows(), _predict_all(runs)
    print(f"  {'memory row':<42} {'GiB':>6} {'before':>7} {'after':>7}")
    for (rid, measured, b, fit_b), (_, _, a, fit_a) in zip(before_rows, after_rows, strict=True):
        if b is None or a is None or abs(a - b) > 1e-9 or fit_a != fit_b:
            eb = f"{(b / measured - 1) * 100:+6.1f} %" if b else "no fit"
            ea = f"{(a / measured - 1) * 100:+6.1f} %" if a else "no fit"
            print(f"  {rid:<42} {measured:>6.1f} {eb:>8} {ea:>8}")
    print("training runs whose plan or fit changes:")
    for run in runs:
        b, a = preds_before[run.name], preds_after[run.name]
        if (b is None) != (a is None) or (b is not None and b.plan != a.plan):
            print(f"  {run.name}: {_plan(b)} -> {_plan(a)}")
    mb, ma = _mape(runs, preds_before), _mape(runs, preds_after)
    for key in mb:
        print(f"  {key:<36} MAPE {mb[key] * 100:5.2f} % -> {ma.get(key, 0.0) * 100:5.2f} %")
