"""Who meets whom in the fabric rounds.

Every node's every rail is tested against the same rail of a partner node whose leaf is
another one, so the traffic crosses the spine layer (a pair under one leaf would only test
the leaf).  Nodes are grouped by the leaf their first rail plugs into (in a rail-optimized
fabric, the scalable unit: every rail of a node shares its group with the same nodes).

Rounds follow the circle method of a round-robin tournament (Kirkman's schedule, as in
any all-play-all: fix one node, rotate the rest one step per round), over the nodes ordered
by group, so the first round pairs the first half with the second half (a bisection) and
each later round shifts the halves by one.  Pairs inside one group are left out (unless
there is only one group, when they are all the fabric has).  Small clusters run every
round, so each node meets every node on another leaf; large ones run the first
:data:`BISECTION_ROUNDS` non-empty rounds, enough for each node to meet two partners, which
tells a bad port (slow with every partner) from a bad partner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["ALL_PAIRS_MAX_NODES", "BISECTION_ROUNDS", "Pair", "fabric_rounds"]

ALL_PAIRS_MAX_NODES = 16  # up to here every cross-leaf pair runs (N-1 rounds at most)
BISECTION_ROUNDS = 2


@dataclass(frozen=True)
class Pair:
    """Two nodes that test each other; ``a`` starts its servers first."""

    a: str
    b: str

    def partner(self, node: str) -> str:
        return self.b if node == self.a else self.a


def _circle(nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Round-robin rounds: each node in at most one pair per round."""
    order: list[str | None] = list(nodes)
    if len(order) % 2:
        order.append(None)  # a bye
    n = len(order)
    rounds = []
    for _ in range(n - 1):
        pairs = [(order[i], order[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        order = [order[0], order[-1], *order[1:-1]]
    return rounds


def fabric_rounds(
    nodes: Sequence[str], group_of: Mapping[str, int], *, max_all_pairs: int = ALL_PAIRS_MAX_NODES
) -> list[tuple[Pair, ...]]:
    """The rounds of pairs for ``nodes`` (``group_of``: each node's leaf group)."""
    ordered = sorted(nodes, key=lambda n: (group_of[n], list(nodes).index(n)))
    crossing = len({group_of[n] for n in nodes}) > 1
    rounds = []
    for pairs in _circle(ordered):
        kept = tuple(Pair(a, b) for a, b in pairs if not crossing or group_of[a] != group_of[b])
        if kept:
            rounds.append(kept)
    return rounds if len(nodes) <= max_all_pairs else rounds[:BISECTION_ROUNDS]
