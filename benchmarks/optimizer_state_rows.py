"""The rows that state an ``optimizer_state``: their predictions with it and at ``"fp32"``.

``optimizer_state`` (:mod:`clusterforge.perf.optimizer_state`) is how the run's optimizer
stores Adam's state: ``"fp32"`` (the stack's layout), ``"fp32-remainders"`` (the low 16 bits
of each FP32 master, 10 B/param) or ``"bf16"`` (Apex's BF16 moments without masters,
4 B/param; 6 with NeMo's FP8 parameters). This predicts every calibration and development
row as stated ("after") and, for the rows that state something other than ``"fp32"``, again
at ``"fp32"`` ("before"), then prints each row whose figure moves and both sets' summaries
(MAPE, median signed error, per-class MAPE, rows predicted not to fit). ``--what-if NAME``
prints, for the named development rows, the prediction at ``"fp32"`` and at
``--what-if-state`` without changing any file. Held-out rows are never loaded.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/optimizer_state_rows.py \
        [--what-if pub-dgxc2411-h100-nemotron4-340b-fp8-128gpu --what-if-state bf16]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from benchmarks.validate_predict import per_class_mape

from validation.runs import Outcome, Run, load_runs, predict_run

__all__ = ["main"]


def _at(run: Run, state: str) -> Run:
    return replace(run, base=run.base.with_(optimizer_state=state))


def _figure(outcome: Outcome) -> str:
    if outcome.prediction is None:
        return "does not fit".rjust(17)
    memory = outcome.prediction.memory
    return f"{outcome.predicted:8.1f} {outcome.error * 100:+6.1f} % {memory.total_gib:5.1f} GiB"


def _summary(label: str, outcomes: list[Outcome]) -> None:
    errors = [o.error for o in outcomes if o.prediction is not None]
    classes = "; ".join(
        f"{name} {count} runs {mape * 100:.2f} %"
        for name, (count, mape) in per_class_mape(outcomes).items()
    )
    print(
        f"{label}: {len(outcomes)} runs, {len(outcomes) - len(errors)} not fitting, MAPE "
        f"{statistics.fmean(abs(e) for e in errors) * 100:.2f} %, median signed "
        f"{statistics.median(errors) * 100:+.2f} %\n  per class: {classes}"
    )


def _what_if(runs: list[Run], names: list[str], state: str) -> None:
    for run in (r for r in runs if r.name in names and r.subset == "development"):
        old, new = predict_run(_at(run, "fp32")), predict_run(_at(run, state))
        print(f"what-if {run.name:46} fp32 {_figure(old)}  {state} {_figure(new)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what-if", action="append", default=[], metavar="NAME")
    parser.add_argument("--what-if-state", default="bf16")
    args = parser.parse_args()
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    after = {r.name: predict_run(r) for r in runs}
    before = dict(after)
    for run in runs:
        if run.base.optimizer_state != "fp32":
            before[run.name] = predict_run(_at(run, "fp32"))
            old, new = before[run.name], after[run.name]
            moved = (old.prediction is None) != (new.prediction is None) or (
                new.prediction is not None and old.predicted != new.predicted
            )
            mark = "  throughput moves" if moved else ""
            state = run.base.optimizer_state
            print(f"{run.name:46} fp32 {_figure(old)}  {state} {_figure(new)}{mark}")
    for subset in ("calibration", "development"):
        names = [r.name for r in runs if r.subset == subset]
        _summary(f"{subset} before", [before[n] for n in names])
        _summary(f"{subset} after ", [after[n] for n in names])
    _what_if(runs, args.what_if, args.what_if_state)


if __name__ == "__main__":
    main()
