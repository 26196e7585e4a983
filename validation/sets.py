"""The three sets of published rows, the files that hold them, and the held-out lock.

Every row of every ``*.toml`` file in this folder says which set it belongs to (``set``):

* ``calibration``: constants of the model may be fitted on these rows (and name them in
  ``fitted_on``);
* ``development``: errors may be looked at and may guide which mechanism to model; no
  constant is fitted on them;
* ``heldout``: frozen when added. The rows of a new source are split between development and
  held-out by a fixed rule written in the file before any prediction is run on them; the
  held-out rows are committed in one commit, and ``heldout.lock.toml`` then records each row's
  id, a hash of its content and that commit. They are scored only as a whole
  (``benchmarks/validate_*.py --heldout``) and never used to choose a mechanism or a constant.
  Rows studied before that rule existed were moved to development.

One folder, five kinds of rows, told apart by their fields (``[defaults]`` merged into each
``[[row]]``): a *run* names a training ``metric`` of :data:`validation.runs.Metric` (or sits
in a ``[table]`` file), an *nccl* row names a ``collective`` and its ``busbw``, a *goodput*
row names what was ``measured``, a *gemm* row (one GPU's GEMM microbenchmark,
:mod:`validation.gemm_rows`) its ``gemm_tflops``, a *memory* row (a run's published peak
memory per GPU, :mod:`validation.memory_rows`) its ``measured_memory_gib``. Other files with that layout are picked up as they are added.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LOCK",
    "SETS",
    "Kind",
    "LockEntry",
    "Subset",
    "data_files",
    "file_rows",
    "kind_of",
    "read_lock",
    "row_hash",
]

HERE = Path(__file__).parent
LOCK = HERE / "heldout.lock.toml"
SETS = ("calibration", "development", "heldout")
Subset = Literal["calibration", "development", "heldout"]
Kind = Literal["run", "nccl", "goodput", "gemm", "memory"]
RUN_METRICS = ("tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu")


def data_files() -> list[Path]:
    """Every data file of this folder (the lock is not data)."""
    return [p for p in sorted(HERE.glob("*.toml")) if p != LOCK]


def file_rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one parsed file, each with the file's ``[defaults]`` merged in."""
    defaults = raw.get("defaults", {})
    return [{**defaults, **row} for row in raw.get("row", [])]


def kind_of(row: dict[str, Any]) -> Kind | None:
    """Which loader reads ``row`` (None: a row of none of the five layouts)."""
    if "collective" in row and "busbw" in row:
        return "nccl"
    if row.get("metric") in RUN_METRICS:
        return "run"
    if "measured" in row:
        return "goodput"
    if "gemm_tflops" in row:
        return "gemm"
    if "measured_memory_gib" in row:
        return "memory"
    return None


def row_hash(row: dict[str, Any]) -> str:
    """SHA-256 of a row's content (defaults merged in, keys sorted): any edit changes it."""
    text = json.dumps(row, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class LockEntry:
    """One frozen held-out row: where it is, its content hash and the commit that froze it."""

    kind: Kind
    id: str
    file: str
    sha256: str
    commit: str


def read_lock(path: Path = LOCK) -> list[LockEntry]:
    """The entries of ``heldout.lock.toml`` (none when the file does not exist yet)."""
    if not path.exists():
        return []
    raw = tomllib.loads(path.read_text())
    return [LockEntry(**entry) for entry in raw.get("row", [])]
