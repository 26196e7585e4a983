"""The replayed validation history the printed range is derived from (validation.first_seen).

The replay is written by ``benchmarks/first_seen.py`` (git worktrees of past commits); these
tests check that it names only today's calibration and development runs, that it is up to
date with the data files, that the replay rule's arithmetic is right on a history whose answer
is known by hand, and, where git history is at hand, that one recorded score is what the
recorded code predicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validation.first_seen import (
    REPLAY,
    Step,
    check_names,
    first_seen,
    load_replay,
    replay_coverage,
)
from validation.runs import load_runs

ROOT = Path(__file__).resolve().parents[2]
SCORED = {r.name: r for r in load_runs() if r.subset in ("calibration", "development")}
HELD = {r.name for r in load_runs() if r.subset == "heldout"}


def test_the_replay_names_only_calibration_and_development_runs() -> None:
    steps = load_replay()
    for step in steps:
        check_names(step.new, {n: r.subset for n, r in SCORED.items()})
        check_names(step.in_sample, {n: r.subset for n, r in SCORED.items()})
        assert not (set(step.new) | set(step.in_sample)) & HELD
    with pytest.raises(ValueError, match="not calibration or development"):
        check_names({next(iter(HELD)): 0.1}, {n: r.subset for n, r in SCORED.items()})


def test_every_run_is_in_the_replay_once() -> None:
    """Each calibration or development run appears as new in exactly one step (the baseline
    or the commit that added it): a run added to validation/ without refreshing the replay
    (``python benchmarks/first_seen.py --write``) fails here."""
    added = [name for step in load_replay() for name in step.new]
    assert len(added) == len(set(added))
    assert set(added) == set(SCORED)


def test_a_step_is_scored_with_the_code_from_before_it_or_its_own() -> None:
    steps = load_replay()
    assert len(steps) >= 10
    baseline = steps[0]
    assert not baseline.in_sample and set(first_seen()).isdisjoint(baseline.new)
    for step in steps[1:]:
        assert step.new and len(step.commit) == len(step.code) == 12
        assert all(x is None or -1.0 < x < 10.0 for x in step.new.values())


def _history() -> tuple[Step, ...]:
    """Four sources of one run each, then a fifth whose two runs land at +5 % and +50 %."""
    firsts = [Step(f"c{i}", "p", {f"r{i}": (i - 2) / 10}, {}) for i in range(4)]
    return (
        Step("base", "p", {"b": 0.0}, {}),
        *firsts,
        Step("c4", "p", {"r4a": 0.05, "r4b": 0.5}, {"b": 0.0, "r0": 0.0, "r1": 0.0, "r2": 0.0}),
    )


def test_the_replay_rule_counts_added_runs_inside_the_range_known_before() -> None:
    """First-seen: four earlier sources at -20, -10, 0, +10 % (too few for a tail: the span)
    hold +5 % and not +50 %; in-sample: the runs present at c4, all at 0 % over 4 sources,
    hold neither."""
    steps = _history()
    names = {n for s in steps for n in (*s.new, *s.in_sample)}
    classes = {n: "megatron-3d" for n in names}
    files = {n: n[:2] for n in names}
    files["b"] = "b"
    assert replay_coverage(classes, files, basis="first-seen", steps=steps) == [("c4", 1, 2)]
    assert replay_coverage(classes, files, basis="in-sample", steps=steps) == [("c4", 0, 2)]
    assert replay_coverage(classes, files, basis="first-seen", steps=steps, min_sources=5) == []


def _has_history(commit: str) -> bool:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    return done.returncode == 0


@pytest.mark.parametrize(
    ("index", "folder"), [(-1, "validation"), (1, "tests/validation")], ids=["latest", "oldest"]
)
def test_a_recorded_first_seen_score_is_what_its_code_predicts(
    tmp_path: Path, index: int, folder: str
) -> None:
    """A step replayed: its recorded code, the run files of its commit; the latest step and the
    oldest after the baseline (from before ``validation/`` became a package, when the files
    and their loader lived in ``tests/validation/``)."""
    step = load_replay()[index]
    if not (_has_history(step.code) and _has_history(step.commit)):
        pytest.skip("this checkout has no history of the replayed commits")
    tree = tmp_path / "tree"
    git = ["git", "-C", str(ROOT)]
    subprocess.run([*git, "worktree", "add", "--detach", "-q", str(tree), step.code], check=True)
    try:
        subprocess.run(
            ["git", "-C", str(tree), "checkout", "-q", step.commit, "--", folder], check=True
        )
        name, recorded = next((n, x) for n, x in step.new.items() if x is not None)
        loader = (
            "from validation.runs import load_runs, predict_run\n"
            if folder == "validation"
            else f"sys.path.insert(0, {folder!r})\nfrom runs import load_runs, predict_run\n"
        )
        script = (
            "import json, sys\n"
            + loader
            + "run = next(r for r in load_runs() if r.name == sys.argv[1])\n"
            "print(json.dumps(run.published / predict_run(run).predicted - 1.0))\n"
        )
        env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}:{tree}"}
        out = subprocess.run(
            [sys.executable, "-c", script, name],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(out.stdout.strip().splitlines()[-1]) == pytest.approx(recorded)
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(tree)], check=True)


def test_the_replay_file_says_where_it_starts() -> None:
    raw = json.loads(REPLAY.read_text())
    assert raw["since"] and raw["steps"][0]["new"]
