"""The two Paxml costs the development Paxml rows state, each priced off and on.

The development rows of ``validation/pub_paxml_fsdp_h100.toml`` and
``validation/pub_jaxtoolbox_pax_fsdp.toml`` state, beyond the ``maxtext`` stack:

- ``scan_carry_copies`` (dgxc-benchmarking Paxml rows only): the recipe pipelines the
  layer loop's all-gathers and turns XLA's while-loop double buffering off
  (``paxml/configure.sh`` at 35a9aec and 143b90d), so every iteration copies the carried
  gathered weights (:func:`clusterforge.perf.sharded.zero3_copy_out_s`). The JAX-Toolbox
  rows' scripts set neither flag (XLA's defaults of the time: no pipelined all-gather, so
  nothing carried), and do not state it.
- ``layer_input_dropout`` (every 5B row): ``GPT5BBase.input_dropout_prob = 0.1`` on the
  repeated one-layer block (:mod:`clusterforge.perf.input_dropout`); the 175B has none.

For every Paxml development row, prints the signed error with neither cost, with each alone
and with what the row states (the model's prediction), and the ms each adds per step, and,
as a bound on what the FSDP collectives could still explain, the signed error were every
unit gathered on demand (``fsdp_prefetch = 0``: no gather hidden; not a mechanism read for
these runs); then the per-class MAPE of development and calibration without and with the
two costs (every other row unchanged).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/paxml_recipe_costs.py

Development and calibration rows only (never held-out).
"""

from __future__ import annotations

from dataclasses import replace

from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run

__all__ = [
    "COSTS",
    "PAXML_FILES",
    "added_ms",
    "main",
    "on_demand_error",
    "signed_error",
    "with_costs",
]

PAXML_FILES = ("pub_paxml_fsdp_h100.toml", "pub_jaxtoolbox_pax_fsdp.toml")
COSTS = ("scan_carry_copies", "layer_input_dropout")


def with_costs(run: Run, costs: tuple[str, ...]) -> Run:
    """The run with only those of the two costs in ``costs`` that it states."""
    kept = {cost: getattr(run.stack, cost) and cost in costs for cost in COSTS}
    return replace(run, stack=replace(run.stack, **kept))


def _step_s(run: Run) -> float:
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    return pred.step_time_s


def signed_error(run: Run, costs: tuple[str, ...] = COSTS) -> float:
    """The run's signed error (positive = optimistic) with ``costs`` priced where stated."""
    pred = predict_run(with_costs(run, costs)).prediction
    assert pred is not None, run.name
    return float(getattr(pred, run.metric)) / run.published - 1.0


def on_demand_error(run: Run) -> float:
    """The run's signed error as stated, with every FSDP unit gathered on demand."""
    pred = predict_run(replace(run, stack=replace(run.stack, fsdp_prefetch=0))).prediction
    assert pred is not None, run.name
    return float(getattr(pred, run.metric)) / run.published - 1.0


def added_ms(run: Run, costs: tuple[str, ...]) -> float:
    """Milliseconds ``costs`` add to the run's predicted step."""
    return (_step_s(with_costs(run, costs)) - _step_s(with_costs(run, ()))) * 1e3


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    paxml = sorted((r for r in runs if r.file in PAXML_FILES), key=lambda r: (r.file, r.name))
    assert all(r.subset == "development" for r in paxml)
    header = "".join(f"{c:>25}" for c in COSTS)
    print(
        f"{'run':<40} {'without':>8}{header} {'as stated':>16} {'on demand':>10}"
        "   (error, ms per step)"
    )
    for run in paxml:
        cells = "".join(
            f"{100 * signed_error(run, (c,)):+17.1f}% {added_ms(run, (c,)):6.1f}" for c in COSTS
        )
        print(
            f"{run.name:<40} {100 * signed_error(run, ()):+7.1f}%{cells}"
            f" {100 * signed_error(run):+8.1f}% {added_ms(run, COSTS):6.1f}"
            f" {100 * on_demand_error(run):+9.1f}%"
        )
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        print(f"{subset} without:   {class_summary(chosen, lambda r: signed_error(r, ()))}")
        print(f"{subset} as stated: {class_summary(chosen, signed_error)}")


if __name__ == "__main__":
    main()
