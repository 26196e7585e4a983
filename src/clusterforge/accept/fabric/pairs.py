"""Who meets whom in the fabric rounds.

Every node's every rail is tested against the same rail of a partner node whose leaf is
another one, so the traffic crosses the spine layer (a pair under one leaf would only test
the leaf).  Nodes are grouped by the leaf their first rail plugs into (in a rail-optimized
fabric, the scalable unit: every rail of a node shares its group with the same nodes).

Small clusters (up to :data:`ALL_PAIRS_MAX_NODES`) run every pair whose nodes sit under
different leaves (every pair when there is one leaf), scheduled by the circle method of a
round-robin tournament (fix one node, rotate the others one step per round), so each round
keeps every node busy at most once.

Large clusters run :data:`BISECTION_ROUNDS` bisections: the nodes in group order are cut in
two halves, and round k pairs the i-th node of the first half with the (i+k)-th of the second,
so every round loads the spine layer with half the nodes' traffic and each node meets two
partners, which tells a bad port (slow or lossy with every partner) from a bad partner.  A
half boundary inside a group leaves a few pairs under one leaf; an odd node out gets rounds
of its own.
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
    if len(ordered) > max_all_pairs:
        return _bisections(ordered)
    crossing = len({group_of[n] for n in nodes}) > 1
    rounds = []
    for pairs in _circle(ordered):
        kept = tuple(Pair(a, b) for a, b in pairs if not crossing or group_of[a] != group_of[b])
        if kept:
            rounds.append(kept)
    return rounds


def _bisections(ordered: Sequence[str]) -> list[tuple[Pair, ...]]:
    half = len(ordered) // 2
    first, second, odd = ordered[:half], ordered[half : 2 * half], ordered[2 * half :]
    rounds = [
        tuple(Pair(first[i], second[(i + k) % half]) for i in range(half))
        for k in range(BISECTION_ROUNDS)
    ]
    rounds += [(Pair(first[k], node),) for node in odd for k in range(BISECTION_ROUNDS)]
    return rounds
