"""The goodput model against published job-level reliability figures (the ``validation`` package).

Prints, per row of ``validation/goodput_published.toml``: the published figure, the
modelled one, the signed error (modelled / published - 1) and the set; then a summary per
set: rows modelled, rows the model cannot express, the median absolute error and the
geometric-mean ratio modelled / published of the value rows, and the bounds met. Development
rows (called held-out until Dec 2026) are split into those that carry the packaged (Llama 3,
H100) rates to another fleet and those that check Daly's model with the source's own fleet
rate. Held-out rows are listed with the commit that froze them and, with ``--heldout`` only,
scored as a whole (one summary line, never per row).

For a bound the model misses because of a restart time the source does not publish, it also
prints the relaunch time (detection + requeue + initialisation) that would meet the bound.

    python benchmarks/validate_goodput.py [--heldout]
"""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import replace

from validation.goodput_rows import ROWS, Outcome, Row, model_row
from validation.sets import read_lock

UNITS = {"interruptions": "", "share": "", "mtbf_h": " h", "ettr": ""}
BOUND_SIGN = {"equal": "", "at_least": ">=", "at_most": "<="}


def _figure(row: Row, value: float) -> str:
    if row.metric in ("share", "ettr"):
        return f"{value:.1%}"
    number = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
    return number + UNITS[row.metric]


def _rate_ratio(outcome: Outcome) -> float | None:
    """Modelled failure rate over the published one (MTTF rows inverted); None for ratios
    such as shares and ETTR."""
    if outcome.modelled is None:
        return None
    ratio = outcome.modelled / outcome.row.published
    match outcome.row.metric:
        case "interruptions":
            return ratio
        case "mtbf_h":
            return 1.0 / ratio
        case _:
            return None


def _line(outcome: Outcome) -> str:
    row = outcome.row
    published = f"{BOUND_SIGN[row.bound]}{_figure(row, row.published)}"
    if outcome.modelled is None:
        return f"  {row.id:34} {row.subset:11} {published:>10} {'n/a':>10} {'':>8}  not expressible"
    verdict = {True: "bound met", False: "bound MISSED", None: ""}[outcome.meets_bound]
    if outcome.within_tolerance is not None:
        verdict += (
            f" (asserted +-{row.tolerance:.0%}: {'ok' if outcome.within_tolerance else 'FAIL'})"
        )
    error = outcome.error or 0.0
    return (
        f"  {row.id:34} {row.subset:11} {published:>10} {_figure(row, outcome.modelled):>10} "
        f"{error:+8.1%}  {verdict.strip()}"
    )


def _group(outcome: Outcome) -> str:
    row = outcome.row
    if row.subset == "calibration":
        return "calibration (Llama 3 Table 5, the rates' source)"
    if row.why_not is not None:
        return "development, not expressible"
    if row.rate_per_node_day is not None:
        return "development, Daly's model with the source's own fleet rate"
    return "development, packaged H100 rates carried to another fleet"


def _summary(name: str, outcomes: list[Outcome]) -> str:
    values = [o for o in outcomes if o.modelled is not None and o.row.bound == "equal"]
    bounds = [o for o in outcomes if o.meets_bound is not None]
    parts = [f"{len(outcomes)} rows"]
    if values:
        errors = [abs(o.error or 0.0) for o in values]
        parts.append(f"median |error| of the values {statistics.median(errors):.1%}")
    rates = [r for r in map(_rate_ratio, outcomes) if r is not None]
    if rates:
        geo = math.exp(statistics.fmean(math.log(r) for r in rates))
        parts.append(
            f"failure rate modelled/published {geo:.2f}x (geometric mean of "
            f"{len(rates)}, bounds included)"
        )
    if bounds:
        parts.append(f"bounds met {sum(bool(o.meets_bound) for o in bounds)}/{len(bounds)}")
    return f"  {name}: " + "; ".join(parts)


def relaunch_to_meet(row: Row, target: float) -> float | None:
    """Relaunch seconds at which the modelled ETTR reaches ``target`` (bisection; ETTR falls
    as the relaunch grows). None when even an instant relaunch falls short."""
    assert row.checkpointing is not None

    def ettr(relaunch_s: float) -> float:
        ckpt = replace(row.checkpointing, relaunch_s=relaunch_s)
        return model_row(replace(row, checkpointing=ckpt)).modelled or 0.0

    low, high = 0.0, row.checkpointing.relaunch_s
    if ettr(low) < target:
        return None
    for _ in range(60):
        mid = (low + high) / 2.0
        low, high = (mid, high) if ettr(mid) >= target else (low, mid)
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", action="store_true", help="score held-out rows as a whole")
    args = parser.parse_args()
    outcomes = [model_row(r) for r in ROWS if r.subset != "heldout"]
    held = [r for r in ROWS if r.subset == "heldout"]
    print(f"  {'row':34} {'set':11} {'published':>10} {'modelled':>10} {'error':>8}  check")
    for outcome in outcomes:
        print(_line(outcome))
    print("\nsummary per set")
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(_group(outcome), []).append(outcome)
    for name, members in groups.items():
        print(_summary(name, members))
    for outcome in outcomes:
        row = outcome.row
        if row.metric == "ettr" and outcome.meets_bound is False and row.checkpointing:
            need = relaunch_to_meet(row, row.published)
            said = "none suffices" if need is None else f"{need:.0f} s"
            print(
                f"\n  {row.id}: modelled with relaunch {row.checkpointing.relaunch_s:.0f} s; "
                f"relaunch that meets {row.published:.0%}: {said}"
            )
    frozen = {e.id: e.commit for e in read_lock() if e.kind == "goodput"}
    print(f"\nheldout: {len(held)} rows, frozen (scored only with --heldout, as a whole)")
    for row in held:
        print(f"  {row.id:34} frozen at {frozen.get(row.id, 'NOT LOCKED')[:12]}")
    if args.heldout and held:
        print(_summary("heldout", [model_row(r) for r in held]))


if __name__ == "__main__":
    main()
