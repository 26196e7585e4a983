"""Why a part of an assessment could not be made (the rest of it still stands)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Unavailable"]


@dataclass(frozen=True)
class Unavailable:
    """A part that could not be computed, and the reason in words (e.g. the spec has no
    workload, or its plan does not fit the model)."""

    reason: str
