"""LLM Foundry MPT on H100 at 128-512 GPUs against the same models at 8-64 GPUs.

The large-scale table (``validation/pub_llm_foundry_h100_large.toml``) is predicted 3-10 %
too fast, the 8-64 GPU table (``validation/llm_foundry_h100.toml``) 1.5-6.7 %. For each
development row of either table, prints the model's step (compute, exposed data-parallel,
optimizer, other), the step the published throughput implies, the miss, and the unit
collectives back to back at NCCL's model (``raw``: every all-gather, backward re-gather and
reduce-scatter of one step, :func:`clusterforge.perf.sharded.unit_collectives`) with the
share of it the model exposes. Then two what-ifs, as per-class MAPE and median signed error
over every development row:

* ``no-overlap``: every FSDP/ZeRO-3 row pays its unit collectives back to back (a bound: no
  overlap at all, on every stack that shards unit by unit);
* ``pure-mp``: the large-scale rows reduce gradients in BF16, as the benchmark's
  ``sweep.py`` base arguments say (``--fsdp_config_mixed_precision PURE``) where the table's
  "MP Mode" column says DEFAULT (FP32 reduction, what the rows state).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/mpt_scale_twins.py

Development rows only (never held-out).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace

from benchmarks.fsdp_rank_scaling import fsdp_development_rows

from validation.runs import Outcome, Run, load_runs, predict_run

LARGE = "pub_llm_foundry_h100_large.toml"
SMALL = "llm_foundry_h100.toml"


def _development() -> list[Outcome]:
    return [predict_run(r) for r in load_runs() if r.subset == "development"]


def _print_rows() -> None:
    print(
        f"{'run':<38} {'gpus':>4} {'err':>6} {'step':>8} {'meas':>8} {'miss':>7} "
        f"{'compute':>8} {'dp':>6} {'opt':>5} {'other':>5} {'raw':>7} {'exp/raw':>7}"
    )
    for row in sorted(fsdp_development_rows(), key=lambda r: r.run.name):
        if row.run.file not in (LARGE, SMALL):
            continue
        pred = predict_run(row.run).prediction
        assert pred is not None
        b = pred.breakdown
        print(
            f"{row.run.name:<38} {row.run.base.layout.num_gpus:>4} {row.error * 100:+5.1f}% "
            f"{row.predicted_step_s * 1e3:8.0f} {row.measured_step_s * 1e3:8.0f} "
            f"{row.miss_s * 1e3:7.1f} {b.compute_s * 1e3:8.0f} {b.dp_comm_s * 1e3:6.1f} "
            f"{b.optimizer_s * 1e3:5.1f} {b.other_s * 1e3:5.1f} {row.raw_s * 1e3:7.1f} "
            f"{row.exposed_s / row.raw_s:7.2f}"
        )
    print("(ms per step; raw: unit collectives back to back; exp/raw: share the model exposes)")


def _classes(errors: dict[str, tuple[str, float]]) -> str:
    by_class: dict[str, list[float]] = {}
    for cls, err in errors.values():
        by_class.setdefault(cls, []).append(err)
    parts = [
        f"{c} {statistics.fmean(abs(e) for e in v) * 100:.1f} ({statistics.median(v) * 100:+.1f})"
        for c, v in sorted(by_class.items())
    ]
    every = [e for _, e in errors.values()]
    overall = f"all {statistics.fmean(abs(e) for e in every) * 100:.2f} "
    return overall + f"({statistics.median(every) * 100:+.1f}); " + "; ".join(parts)


def development_errors() -> dict[str, tuple[str, float]]:
    """Every development run that fits: its class and signed error, as predicted."""
    return {o.run.name: (o.run_class, o.error) for o in _development() if o.prediction}


def no_overlap(base: dict[str, tuple[str, float]]) -> dict[str, tuple[str, float]]:
    """``base`` with every unit-sharded development run's step lengthened by the part of its
    unit collectives the model hides (all of them back to back): a bound, not a model."""
    errors = dict(base)
    for row in fsdp_development_rows():
        if row.run.name not in base:  # timed without the memory check: no error to bound
            continue
        step = row.predicted_step_s + row.raw_s - row.exposed_s
        errors[row.run.name] = (base[row.run.name][0], row.measured_step_s / step - 1.0)
    return errors


Errors = dict[str, tuple[str, float]]  # run name -> (class, signed error)


def _restated(base: Errors, change: Callable[[Run], Run | None]) -> Errors:
    """``base`` with every development run that ``change`` restates predicted again."""
    errors = dict(base)
    for run in load_runs():
        changed = change(run) if run.subset == "development" else None
        if changed is None:
            continue
        outcome = predict_run(changed)
        errors[run.name] = (outcome.run_class, outcome.error)
    return errors


def _pure(run: Run) -> Run | None:
    """A large-scale LLM Foundry run with BF16 gradient reduction (FSDP ``PURE``)."""
    if run.file != LARGE:
        return None
    return replace(run, stack=replace(run.stack, grad_reduce_bytes=2))


def main() -> None:
    _print_rows()
    base = development_errors()
    print("\nper-class MAPE % (median signed %), development:")
    print(f"  as is       {_classes(base)}")
    print(f"  no-overlap  {_classes(no_overlap(base))}")
    print(f"  pure-mp     {_classes(_restated(base, _pure))}")


if __name__ == "__main__":
    main()
