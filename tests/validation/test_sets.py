"""The three sets and the held-out lock (``validation/sets.py``, ``validation/heldout.py``).

Held-out rows are frozen: a test fails when one changes, is added without a lock entry, or a
lock entry has no row; and a lock entry must name the commit that holds the row as it is.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import get_args

import pytest

import validation.sets as sets
from validation import goodput_rows, nccl_rows
from validation.heldout import HeldRow, heldout_rows, lock_problems, rows_at
from validation.runs import Metric, run_rows
from validation.sets import SETS, LockEntry, data_files, file_rows, kind_of, read_lock, row_hash

REPO = Path(__file__).resolve().parents[2]


def test_every_row_of_every_data_file_is_read_and_in_one_of_three_sets() -> None:
    assert get_args(Metric) == sets.RUN_METRICS
    for path in data_files():
        raw = tomllib.loads(path.read_text())
        rows = run_rows(raw) if "table" in raw else file_rows(raw)
        assert rows, path.name
        for row in rows:
            assert kind_of(row) is not None, (path.name, row)
            assert row.get("set") in SETS, (path.name, row)


def test_held_out_rows_match_the_lock() -> None:
    assert lock_problems(heldout_rows(), read_lock()) == []


def _entry(row: HeldRow, **changes: str) -> LockEntry:
    values = {"kind": row.kind, "id": row.id, "file": row.file, "sha256": row.sha256}
    return LockEntry(**{**values, "commit": "a" * 40, **changes})  # type: ignore[arg-type]


def test_the_lock_check_catches_a_changed_an_unlocked_and_an_orphan_row() -> None:
    row = HeldRow("run", "pub-x", "pub_x.toml", row_hash({"name": "pub-x", "published": 1.0}))
    assert lock_problems([row], [_entry(row)]) == []
    changed = HeldRow(row.kind, row.id, row.file, row_hash({"name": "pub-x", "published": 2}))
    assert "changed since it was frozen" in lock_problems([changed], [_entry(row)])[0]
    assert "has no lock entry" in lock_problems([row], [])[0]
    assert "has no held-out row" in lock_problems([], [_entry(row)])[0]
    assert "not a full hash" in lock_problems([row], [_entry(row, commit="HEAD")])[0]


def test_a_row_hash_sees_any_edit_and_ignores_key_order() -> None:
    row = {"name": "a", "published": 1.0, "network": {"fabric": "infiniband"}}
    assert row_hash(row) == row_hash(dict(reversed(list(row.items()))))
    assert row_hash(row) != row_hash({**row, "published": 1.01})
    assert row_hash(row) != row_hash({**row, "network": {"fabric": "ethernet"}})


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO, check=False)


def test_each_lock_entry_names_the_commit_that_holds_its_row_as_it_is() -> None:
    entries = read_lock()
    if not entries:
        pytest.skip("no held-out row is locked yet")
    if _git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git checkout: the frozen commits cannot be read")
    for entry in entries:
        if _git("cat-file", "-e", f"{entry.commit}^{{commit}}").returncode != 0:
            pytest.skip(f"commit {entry.commit[:12]} is not in this clone (shallow?)")
        assert rows_at(entry.commit, entry.file)[(entry.kind, entry.id)] == entry.sha256, entry.id


def test_the_loaders_pick_up_any_data_file_of_the_documented_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pub_example.toml").write_text(
        '[defaults]\nset = "development"\nsource = "example"\n\n'
        '[[row]]\nid = "x-2node"\nnode = "dgx-h100"\nnum_nodes = 2\n'
        'collective = "all_reduce"\nsize_bytes = 1073741824\nalgorithm = "auto"\nbusbw = 100.0\n\n'
        '[[row]]\nid = "g-1"\nmeasured = "interruptions"\nmetric = "interruptions"\n'
    )
    monkeypatch.setattr(sets, "HERE", tmp_path)
    assert [row["id"] for _, row in nccl_rows.raw_rows()] == ["x-2node"]
    assert [row["id"] for _, row in goodput_rows.raw_rows()] == ["g-1"]
    assert all(file == "pub_example.toml" for file, _ in nccl_rows.raw_rows())
