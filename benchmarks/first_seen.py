"""Replay the validation history: each development run scored by the model as it stood when
the run was first added, before any mechanism was chosen with it in view.

For every calibration and development run of today's ``validation/`` this walks the commits
that changed the run files since one loader first read them (``4cecee2``: the files then lived
in ``tests/validation/``; ``validation/`` became a package at ``538d91f``), finds the first
commit ``C`` whose files hold the run, and predicts the runs new in ``C`` with the code of
``C``'s first parent and the data files of ``C``. Where that code cannot load those files or
cannot price a run's precision (rows transcribed on a branch while the model learned their
precision on another), the code of main just before ``C`` was merged into it (the first
parent of the first first-parent commit of HEAD that contains ``C``), then the code of ``C``
itself. At each such commit it also scores every calibration and
development run that existed then, with the same code: the in-sample errors the range would
have been derived from at that moment. Held-out runs are never predicted (names that are
held-out today are skipped at every commit).

Writes ``validation/history/replay.json`` (``--write``); ``validation.first_seen`` reads it
(the printed range and the replayed coverage check). Needs git and a checkout with history;
takes a few minutes (one worktree per commit). Run by hand:

    python benchmarks/first_seen.py [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from rich.progress import track

from validation.runs import load_runs, run_rows
from validation.sets import LOCK

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "validation" / "history" / "replay.json"
SINCE = "4cecee2"  # the first commit whose one loader read every training-run file
# Where the run files and their loader live: tests/validation until 538d91f, then validation.
FOLDERS = ("validation", "tests/validation")

# Run inside a worktree: print {name: excess} for the requested names (a run that fits no
# plan prints None). Uses only what every commit since SINCE has: load_runs, predict_run, in
# the folder named by the second argument.
_SCORE = """
import json, sys
if sys.argv[2] == "validation":
    from validation.runs import load_runs, predict_run
else:
    sys.path.insert(0, sys.argv[2])
    from runs import load_runs, predict_run
wanted = set(json.loads(sys.argv[1]))
try:
    from typing import get_args
    from clusterforge.perf.parallel import Precision
    known = set(get_args(Precision))
except ImportError:
    known = None
out = {}
for run in load_runs():
    if run.name in wanted:
        if known is not None and run.base.precision not in known:
            sys.exit(f"this code cannot price precision {run.base.precision!r} ({run.name})")
        o = predict_run(run)
        out[run.name] = None if o.prediction is None else run.published / o.predicted - 1.0
print(json.dumps(out))
"""


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout


def _folder(commit: str) -> str:
    """The folder holding the run files and their loader at ``commit``."""
    for folder in FOLDERS:
        if _git("ls-tree", "--name-only", commit, f"{folder}/runs.py").strip():
            return folder
    raise RuntimeError(f"{commit[:12]} has no run loader in {FOLDERS}")


def _names_at(commit: str) -> set[str]:
    """The training-run names in the run files at ``commit``."""
    names: set[str] = set()
    folder = _folder(commit)
    listing = _git("ls-tree", "--name-only", f"{commit}:{folder}").split()
    for path in listing:
        if not path.endswith(".toml") or path == LOCK.name:
            continue
        raw = tomllib.loads(_git("show", f"{commit}:{folder}/{path}"))
        names |= {str(row["name"]) for row in run_rows(raw) if "name" in row}
    return names


def _commits() -> list[str]:
    out = _git("log", "--reverse", "--topo-order", "--format=%H", f"{SINCE}^..HEAD", "--", *FOLDERS)
    return out.split()


def _score(commit: str, code: str, names: set[str]) -> dict[str, float | None]:
    """Excess of ``names`` predicted with the package code of ``code`` and the run files of
    ``commit``."""
    folder = _folder(commit)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        _git("worktree", "add", "--detach", "-q", str(tree), code)
        try:
            if code != commit:
                subprocess.run(
                    ["git", "-C", str(tree), "checkout", "-q", commit, "--", folder],
                    check=True,
                )
            env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}:{tree}"}
            done = subprocess.run(
                [sys.executable, "-c", _SCORE, json.dumps(sorted(names)), folder],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip().splitlines()[-1])
            return dict(json.loads(done.stdout.strip().splitlines()[-1]))
        finally:
            _git("worktree", "remove", "--force", str(tree))


def _main_before_merge(commit: str) -> str | None:
    """First parent of the first commit on HEAD's first-parent line that contains ``commit``
    (None when ``commit`` is itself on that line)."""
    line = _git("rev-list", "--first-parent", "HEAD").split()
    if commit in line:
        return None
    holders = set(_git("rev-list", "--ancestry-path", f"{commit}..HEAD").split())
    merge = next(c for c in reversed(line) if c in holders)
    return _git("rev-parse", f"{merge}^1").strip()


def _first_code_that_scores(commit: str, present: set[str]) -> tuple[dict[str, float | None], str]:
    """Scores of ``present`` and the code that made them: the parent's, else main's before the
    merge, else ``commit``'s own."""
    parent = _git("rev-parse", f"{commit}^").strip()
    before_merge = _main_before_merge(commit)
    candidates = [parent] + ([before_merge] if before_merge else []) + [commit]
    for code in candidates[:-1]:
        try:
            return _score(commit, code, present), code
        except RuntimeError:
            continue
    return _score(commit, commit, present), commit


def replay() -> list[dict[str, Any]]:
    """One entry per commit that added calibration or development runs of today."""
    scored = {r.name for r in load_runs() if r.subset in ("calibration", "development")}
    seen: set[str] = set()
    steps = []
    for commit in track(_commits(), description="replaying validation history"):
        present = _names_at(commit) & scored
        new = present - seen
        if not new:
            continue
        excess, code = _first_code_that_scores(commit, present)
        steps.append(
            {
                "commit": commit[:12],
                "code": code[:12],
                "date": _git("show", "-s", "--format=%cI", commit).strip(),
                "new": {n: excess.get(n) for n in sorted(new)},
                "in_sample": {n: excess.get(n) for n in sorted(present - new)},
            }
        )
        seen |= present
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = parser.parse_args()
    steps = replay()
    for step in steps:
        new = [abs(x) for x in step["new"].values() if x is not None]
        mean = sum(new) / len(new) if new else float("nan")
        print(
            f"{step['commit']} code {step['code']}  new {len(step['new'])}  "
            f"in-sample {len(step['in_sample'])}  new mean |excess| {mean:.1%}"
        )
    if args.write:
        OUT.parent.mkdir(exist_ok=True)
        OUT.write_text(json.dumps({"since": SINCE, "steps": steps}, indent=1) + "\n")
        print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
