"""The held-out rows of every kind, and their lock (``heldout.lock.toml``).

Freezing a new source (the rule :mod:`validation.sets` states):

1. write its rows with the split rule in the file's header, before any prediction;
2. commit the held-out rows (one commit, with their source);
3. ``python -m validation.heldout --freeze <that commit>`` writes the lock entries of the rows
   that are not locked yet; commit the lock.

``tests/validation/test_sets.py`` fails when a held-out row changes, is added without a lock
entry, or a lock entry has no row (:func:`lock_problems`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tomllib
from dataclasses import dataclass
from typing import Any

from validation.runs import run_rows
from validation.sets import (
    LOCK,
    Kind,
    LockEntry,
    data_files,
    file_rows,
    kind_of,
    read_lock,
    row_hash,
)

__all__ = ["HeldRow", "heldout_rows", "lock_problems", "main"]

ID_FIELD: dict[Kind, str] = {
    "run": "name",
    "nccl": "id",
    "goodput": "id",
    "gemm": "id",
    "memory": "id",
}


@dataclass(frozen=True)
class HeldRow:
    """One held-out row as it stands in the working tree."""

    kind: Kind
    id: str
    file: str
    sha256: str


def _rows_of(text: str) -> list[tuple[Kind, dict[str, Any]]]:
    """(kind, row) of one data file's text, rows as their loaders read them."""
    raw = tomllib.loads(text)
    out: list[tuple[Kind, dict[str, Any]]] = [("run", r) for r in run_rows(raw)]
    if "table" not in raw:
        for row in file_rows(raw):
            kind = kind_of(row)
            if kind in ("nccl", "goodput", "gemm", "memory"):
                out.append((kind, row))
    return out


def heldout_rows() -> list[HeldRow]:
    """Every held-out row of every data file."""
    held = []
    for path in data_files():
        for kind, row in _rows_of(path.read_text()):
            if row.get("set") == "heldout":
                held.append(HeldRow(kind, str(row[ID_FIELD[kind]]), path.name, row_hash(row)))
    return held


def lock_problems(rows: list[HeldRow], lock: list[LockEntry]) -> list[str]:
    """What is wrong between the held-out rows and the lock (empty when they agree)."""
    problems = []
    have = {(r.kind, r.id): r for r in rows}
    locked = {(e.kind, e.id): e for e in lock}
    if len(locked) < len(lock):
        problems.append("the lock lists a row twice")
    for key, row in have.items():
        entry = locked.get(key)
        if entry is None:
            problems.append(f"held-out {key[0]} row {key[1]} ({row.file}) has no lock entry")
        elif entry.sha256 != row.sha256 or entry.file != row.file:
            problems.append(
                f"held-out {key[0]} row {key[1]} changed since it was frozen at "
                f"{entry.commit[:12]} (held-out rows are frozen: add a new row instead)"
            )
    for key, entry in locked.items():
        if key not in have:
            problems.append(f"lock entry {key[0]} {key[1]} ({entry.file}) has no held-out row")
        if not re.fullmatch(r"[0-9a-f]{40}", entry.commit):
            problems.append(f"lock entry {key[1]}: commit {entry.commit!r} is not a full hash")
    if len(have) < len(rows):
        problems.append("two held-out rows of one kind share an id")
    return problems


def rows_at(commit: str, file: str) -> dict[tuple[str, str], str]:
    """(kind, id) -> content hash of the held-out rows of ``file`` at ``commit`` (git)."""
    text = subprocess.run(
        ["git", "show", f"{commit}:validation/{file}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=LOCK.parent,
    ).stdout
    return {
        (kind, str(row[ID_FIELD[kind]])): row_hash(row)
        for kind, row in _rows_of(text)
        if row.get("set") == "heldout"
    }


def freeze(commit: str) -> list[LockEntry]:
    """The lock with an entry added for every held-out row not yet locked, frozen at
    ``commit`` (which must hold each such row exactly as it is now)."""
    lock = read_lock()
    locked = {(e.kind, e.id) for e in lock}
    added = []
    for row in heldout_rows():
        if (row.kind, row.id) in locked:
            continue
        if rows_at(commit, row.file).get((row.kind, row.id)) != row.sha256:
            raise SystemExit(f"{row.id}: not in {commit[:12]} as it is now; commit it first")
        added.append(LockEntry(row.kind, row.id, row.file, row.sha256, commit))
    return lock + added


HEADER = """\
# Held-out rows, frozen: one entry per row with set = "heldout" in validation/*.toml.
# kind (run | nccl | goodput), id, file, sha256 (validation.sets.row_hash of the row with its
# file's defaults merged in), commit (the commit that added the row, as it is now).
# Written by `python -m validation.heldout --freeze <commit>`; tests/validation/test_sets.py
# fails if a held-out row changes, is added without an entry, or an entry has no row.
"""


def write_lock(entries: list[LockEntry]) -> None:
    blocks = [
        f'[[row]]\nkind = "{e.kind}"\nid = "{e.id}"\nfile = "{e.file}"\n'
        f'sha256 = "{e.sha256}"\ncommit = "{e.commit}"\n'
        for e in entries
    ]
    LOCK.write_text(HEADER + "\n" + "\n".join(blocks))


def main() -> None:
    parser = argparse.ArgumentParser(description="Check or extend the held-out lock.")
    parser.add_argument("--freeze", metavar="COMMIT", help="lock unlocked held-out rows")
    args = parser.parse_args()
    if args.freeze:
        commit = subprocess.run(
            ["git", "rev-parse", args.freeze], capture_output=True, text=True, check=True
        ).stdout.strip()
        entries = freeze(commit)
        write_lock(entries)
        print(f"{LOCK.name}: {len(entries)} entries")
    problems = lock_problems(heldout_rows(), read_lock())
    print("\n".join(problems) or "held-out rows match the lock")


if __name__ == "__main__":
    main()
