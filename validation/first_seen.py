"""Each development run as the model first saw it: the replayed validation history.

A model's misses on the runs it was developed with shrink as mechanisms are added for them,
so a range built from them is too narrow for a run of a new source. The history of this
folder says how far off a run of a new source really is: ``benchmarks/first_seen.py``
replays every commit that added calibration or development runs since the folder became a
package and predicts the added runs with the code of that commit's parent, before any
mechanism was chosen with them in view (the prequential assessment of A. P. Dawid,
"Statistical theory: the prequential approach", J. R. Statist. Soc. A 147(2), 1984: a
forecaster judged by the forecasts it made before each outcome was known). It stores, per
commit, the added runs' *first-seen* excess ``published / predicted - 1`` and the in-sample
excess of the runs already there, in ``history/replay.json``.

Each first-seen score comes from a model fixed before its run was seen, which is what the
split-conformal guarantee asks of its scores (:mod:`validation.band`). The runs present when
the record starts (the *baseline*) were used to build the model and have no first-seen
score. :func:`replay_coverage` replays the range rules through the history: at each commit,
the range of a rule derived from what was known then, and the share of the added runs'
first-seen scores inside it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, assert_never

from validation.band import Residual, Rule, class_ranges, pooled_range

__all__ = [
    "REPLAY",
    "Basis",
    "Step",
    "check_names",
    "first_seen",
    "load_replay",
    "replay_coverage",
]

REPLAY = Path(__file__).parent / "history" / "replay.json"
# What a replayed range is derived from: the first-seen scores of the runs added before
# (the rule that ships) or the in-sample scores of every run present then (the rule used
# until Dec 2026).
Basis = Literal["first-seen", "in-sample"]
_REFRESH = "run `python benchmarks/first_seen.py --write` after adding or renaming runs"


@dataclass(frozen=True)
class Step:
    """One commit that added runs: their first-seen excess (None: predicted not to fit) and
    the in-sample excess, at that commit, of the runs already there."""

    commit: str
    code: str
    new: Mapping[str, float | None]
    in_sample: Mapping[str, float | None]


@cache
def load_replay(path: Path = REPLAY) -> tuple[Step, ...]:
    """The replayed history, oldest commit first; the first step is the baseline."""
    raw = json.loads(path.read_text())
    return tuple(
        Step(s["commit"], s["code"], dict(s["new"]), dict(s["in_sample"])) for s in raw["steps"]
    )


def first_seen(steps: tuple[Step, ...] | None = None) -> dict[str, float | None]:
    """Run name -> first-seen excess, for every run added after the baseline."""
    steps = load_replay() if steps is None else steps
    return {name: x for step in steps[1:] for name, x in step.new.items()}


def check_names(recorded: Mapping[str, object], scored: Mapping[str, str]) -> None:
    """Refuse a replay that names a run which is not a calibration or development run of
    today (held-out, renamed or removed): held-out runs never shape the range."""
    unknown = sorted(set(recorded) - set(scored))
    if unknown:
        raise ValueError(
            f"{REPLAY.name} names runs that are not calibration or development runs: "
            f"{unknown[:3]}; {_REFRESH}"
        )


def replay_coverage(
    classes: Mapping[str, str],
    files: Mapping[str, str],
    *,
    basis: Basis,
    rule: Rule = "centred",
    steps: tuple[Step, ...] | None = None,
    min_sources: int = 4,
) -> list[tuple[str, int, int]]:
    """Per commit that added runs: (commit, runs inside, runs added) for the range derived
    from what was known just before it. ``basis`` ``first-seen``: the first-seen scores of the
    runs added earlier (the rule that ships); ``in-sample``: the in-sample scores of every run
    present then (the rule used until Dec 2026). Runs are classed as today (``classes``) and
    grouped by their data file (``files``); steps with fewer than ``min_sources`` sources to
    derive from are skipped."""
    steps = load_replay() if steps is None else steps
    known: list[Residual] = []
    out = []
    for step in steps[1:]:
        added = [(n, x) for n, x in step.new.items() if x is not None]
        match basis:
            case "first-seen":
                pool = known
            case "in-sample":
                pool = [
                    Residual(files[n], classes[n], x)
                    for n, x in step.in_sample.items()
                    if x is not None
                ]
            case _:
                assert_never(basis)
        if added and len({r.source for r in pool}) >= min_sources:
            pooled, by_class = pooled_range(pool, rule), class_ranges(pool, rule)
            inside = 0
            for name, x in added:
                low, high = by_class.get(classes[name], pooled)
                inside += low <= x <= high
            out.append((step.commit, inside, len(added)))
        known += [Residual(files[n], classes[n], x) for n, x in added]
    return out
