"""Validation rows as pytest cases: a row the model is known to miss is a strict xfail with
its cause (it fails the suite the day it passes, so the note is removed with the gap)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest


def gap_cases(rows: Iterable[Any], gaps: Mapping[str, str]) -> list[Any]:
    """One case per row (id: its ``name``), strict xfail where ``gaps`` names its cause."""
    return [
        pytest.param(
            r,
            id=r.name,
            marks=[pytest.mark.xfail(strict=True, reason=gaps[r.name])] if r.name in gaps else [],
        )
        for r in rows
    ]
