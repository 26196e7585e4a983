"""Find the node at fault when a cross-node test misses: ring bisection over halves.

The nodes are split into two halves in their design order (consecutive nodes share a leaf,
so a half is a set of leaves); each half runs the same collective; the slower half is split
again, with a node of the faster half as a known-good partner once a half is too small to
run alone.  A half is 'slower' only when it reaches less than ``fraction`` of the other:
equal halves mean the fault (if any) is not in one node.  Every measurement is kept as
evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Localization", "bisect_slowest"]

Measure = Callable[[Sequence[str]], float]


@dataclass(frozen=True)
class Localization:
    """The culprit (None when no half stood out) and the measurements that found it."""

    culprit: str | None
    evidence: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "culprit": self.culprit,
            "evidence": [{"nodes": list(g), "busbw_gbyte_per_s": v} for g, v in self.evidence],
        }


def _with_partner(group: Sequence[str], partner: str | None) -> tuple[str, ...]:
    return tuple(group) if len(group) >= 2 or partner is None else (*group, partner)


def bisect_slowest(nodes: Sequence[str], measure: Measure, fraction: float = 0.9) -> Localization:
    """Bisect ``nodes`` (at least 2) with ``measure(group) -> busbw`` down to one node."""
    evidence: list[tuple[tuple[str, ...], float]] = []
    current, partner = list(nodes), None

    def run(group: tuple[str, ...]) -> float:
        value = measure(group)
        evidence.append((group, value))
        return value

    while len(current) >= 2:
        mid = len(current) // 2
        left, right = current[:mid], current[mid:]
        good_left = partner or right[0]
        good_right = partner or left[0]
        a = run(_with_partner(left, good_left if len(left) < 2 else None))
        b = run(_with_partner(right, good_right if len(right) < 2 else None))
        if min(a, b) >= fraction * max(a, b):
            return Localization(None, evidence)
        slow, fast = (left, right) if a < b else (right, left)
        partner = fast[0]
        current = slow
    return Localization(current[0] if current else None, evidence)
