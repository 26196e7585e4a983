"""Peak memory per GPU: ``predict``'s memory against published peaks (``validation/*mem*``).

Prints each calibration and development memory row (published GiB, what it counts,
predicted GiB, signed error, the prediction's parts: weights, gradients, optimizer states,
activations, runtime reserve), then per set and per source the MAPE and median signed error,
and the rows whose run ``predict`` finds no fitting plan for. Held-out rows are listed with
the commit that froze them and no figure; ``--heldout`` scores them as a whole only (count,
MAPE, median signed error, runs predicted not to fit), never per row, as
``benchmarks/validate_predict.py`` does for runs.

    PYTHONPATH=src:. python benchmarks/validate_memory.py [--heldout]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from validation.memory_rows import MemoryOutcome, load_memory_rows, predict_memory
from validation.sets import read_lock


def _row(outcome: MemoryOutcome) -> str:
    row, mem = outcome.row, outcome.memory
    parts = (
        f"w {mem.weights_gib:5.1f} g {mem.gradients_gib:5.1f} o {mem.optimizer_gib:5.1f} "
        f"a {mem.activations_gib:5.1f} r {mem.reserve_gib:3.1f}"
    )
    fit = "" if outcome.fits else "  NO PLAN FITS"
    return (
        f"  {row.id:<42} {row.subset:<11} {row.measured_gib:>6.1f} {row.kind:<12} "
        f"{outcome.predicted_gib:>6.1f} {outcome.error * 100:+6.1f} %  {parts}{fit}"
    )


def summary(outcomes: list[MemoryOutcome]) -> dict[str, float]:
    """Rows, MAPE, median signed error and the rows whose run is predicted not to fit."""
    errors = [o.error for o in outcomes]
    return {
        "rows": len(outcomes),
        "mape": statistics.fmean(abs(e) for e in errors),
        "median_signed": statistics.median(errors),
        "no_fit": sum(not o.fits for o in outcomes),
    }


def _print_summary(name: str, stats: dict[str, float]) -> None:
    print(
        f"{name:<34} rows {stats['rows']:>3.0f}  MAPE {stats['mape'] * 100:5.1f} %  "
        f"median signed {stats['median_signed'] * 100:+5.1f} %  "
        f"predicted not to fit {stats['no_fit']:.0f}"
    )


def _print_heldout_listing() -> None:
    rows = [r for r in load_memory_rows() if r.subset == "heldout"]
    frozen = {e.id: e.commit for e in read_lock() if e.kind == "memory"}
    print(f"heldout: {len(rows)} memory rows, frozen (scored only with --heldout, as a whole)")
    for row in rows:
        print(f"  {row.id:<44} frozen at {frozen.get(row.id, 'NOT LOCKED')[:12]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--heldout", action="store_true", help="also score the held-out set, as a whole only"
    )
    args = parser.parse_args()
    print(
        f"  {'memory row':<42} {'set':<11} {'GiB':>6} {'counts':<12} {'pred.':>6}  error"
        "   predicted parts (GiB)"
    )
    by_set: dict[str, list[MemoryOutcome]] = defaultdict(list)
    by_file: dict[str, list[MemoryOutcome]] = defaultdict(list)
    for row in load_memory_rows():
        if row.subset == "heldout":
            continue
        outcome = predict_memory(row)
        print(_row(outcome), flush=True)
        by_set[row.subset].append(outcome)
        by_file[row.file].append(outcome)
    print()
    for name, outcomes in sorted(by_set.items()):
        _print_summary(name, summary(outcomes))
    for name, outcomes in sorted(by_file.items()):
        _print_summary(f"  {name}", summary(outcomes))
    print()
    _print_heldout_listing()
    if args.heldout:
        held = [predict_memory(r) for r in load_memory_rows() if r.subset == "heldout"]
        _print_summary("heldout", summary(held))


if __name__ == "__main__":
    main()
