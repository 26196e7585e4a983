"""The link×demand incidence matrix ``A`` of a phase, as sorted coordinate triplets in numpy.

``A[l, d]`` is how many bytes cross link ``l`` per byte/s of demand ``d``.  The max-min
solver needs only a handful of operations on it (``A @ x``, ``Aᵀ @ y``, row sums, "which
demands cross a marked link"), each one ``np.bincount`` or a boolean gather over the nonzeros,
so numpy alone does the job and the simulator's import stays free of a sparse-matrix library.

The triplets are kept sorted by (link, demand) with duplicates summed, the canonical CSR
order: ``bincount`` then adds each link's (or demand's) terms in the same order as a CSR
product of ``A`` (or of its transpose), so results agree with a CSR implementation bit for bit,
up to the order in which repeated (link, demand) pairs are summed.

Path middles that many demands share (dragonfly Valiant routing: every flow between two groups
loads the same global and intermediate-group links) are kept factored, ``A = A_own + P @ V``:
``P`` (link × pattern) holds each shared pattern's links once and ``V`` (pattern × demand)
says how much of each demand's rate goes through each pattern.  Every operation below is two
sparse products instead of one, and memory grows with the flows plus the patterns, not with
flows × patterns' length.  Sums then run in another order than one CSR product: results agree
with the expanded matrix to floating-point rounding (relative 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Incidence", "SharedPaths"]


@dataclass(frozen=True, eq=False)
class SharedPaths:
    """The factored part ``P @ V`` of an incidence matrix: ``paths`` is ``P`` (link ×
    pattern: the share of a pattern's rate that crosses each link) and ``via`` is ``V``
    (pattern × demand: the rate of each demand, per byte/s, that runs through each pattern)."""

    paths: Incidence
    via: Incidence


@dataclass(frozen=True, eq=False)
class Incidence:
    """Sparse ``num_links × num_demands`` matrix as (link, demand, coef) triplets, sorted by
    (link, demand), one entry per pair (an entry may hold 0: the demand still crosses it).
    Build it with :meth:`from_triplets`, which establishes that order."""

    link: np.ndarray  # int64 row index of each nonzero
    demand: np.ndarray  # int64 column index of each nonzero
    coef: np.ndarray  # float64 value of each nonzero
    shape: tuple[int, int]  # (num_links, num_demands)
    shared: SharedPaths | None = None  # path middles shared by many demands (module docstring)

    @classmethod
    def from_triplets(
        cls,
        link: np.ndarray,
        demand: np.ndarray,
        coef: np.ndarray,
        *,
        num_links: int,
        num_demands: int,
        shared: SharedPaths | None = None,
    ) -> Incidence:
        """Incidence from unsorted triplets; duplicate (link, demand) entries are summed.
        ``shared`` adds a factored part ``P @ V`` whose shapes must match."""
        link = np.asarray(link, dtype=np.int64)
        demand = np.asarray(demand, dtype=np.int64)
        coef = np.asarray(coef, dtype=np.float64)
        key = link * num_demands + demand  # row-major position: by link, then demand
        order = np.argsort(key, kind="stable")  # stable: duplicates add up in input order
        sorted_key = key[order]
        starts = _run_starts(sorted_key)
        summed = np.add.reduceat(coef[order], starts) if starts.size else coef[:0]
        unique_key = sorted_key[starts]
        link = unique_key // max(num_demands, 1)
        if shared is not None:
            assert shared.paths.shape[0] == num_links and shared.via.shape[1] == num_demands
            assert shared.paths.shape[1] == shared.via.shape[0]
        demand = unique_key - link * num_demands
        return cls(link, demand, summed, shape=(num_links, num_demands), shared=shared)

    @property
    def num_links(self) -> int:
        return self.shape[0]

    @property
    def num_demands(self) -> int:
        return self.shape[1]

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A @ x``: per-link load (one value per link) of per-demand rates ``x``."""
        own = np.bincount(self.link, weights=self.coef * x[self.demand], minlength=self.shape[0])
        if self.shared is None:
            return own
        return np.asarray(own + self.shared.paths.matvec(self.shared.via.matvec(x)))

    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """``Aᵀ @ y``: per-demand sum of per-link values ``y``."""
        own = np.bincount(self.demand, weights=self.coef * y[self.link], minlength=self.shape[1])
        if self.shared is None:
            return own
        return np.asarray(own + self.shared.via.rmatvec(self.shared.paths.rmatvec(y)))

    def row_sums(self) -> np.ndarray:
        """``A @ 1``: what each link carries when every demand runs at 1."""
        own = np.bincount(self.link, weights=self.coef, minlength=self.shape[0])
        if self.shared is None:
            return own
        return np.asarray(own + self.shared.paths.matvec(self.shared.via.row_sums()))

    def crosses(self) -> np.ndarray:
        """Per demand: whether it has an entry on any link (stored zeros count)."""
        own = np.bincount(self.demand, minlength=self.shape[1]) > 0
        if self.shared is None:
            return own
        via = self.shared.via
        through = np.zeros(self.shape[1], dtype=bool)
        through[via.demand[self.shared.paths.crosses()[via.link]]] = True
        return own | through

    def on_touched_links(self) -> tuple[Incidence, np.ndarray]:
        """The rows that hold an entry, renumbered 0..k-1, and their link ids (k,): the same
        products on far fewer links when a phase touches a small part of the fabric."""
        if self.shared is None:
            starts = _run_starts(self.link)
            rows = self.link[starts]
            row = np.repeat(np.arange(rows.size), np.diff(np.append(starts, self.link.size)))
            return Incidence(row, self.demand, self.coef, shape=(rows.size, self.shape[1])), rows
        paths = self.shared.paths
        rows = np.union1d(self.link, paths.link)
        new_row = np.full(self.shape[0], -1, dtype=np.int64)
        new_row[rows] = np.arange(rows.size)
        paths = Incidence(
            new_row[paths.link], paths.demand, paths.coef, shape=(rows.size, paths.shape[1])
        )
        shared = SharedPaths(paths, self.shared.via)
        own = (new_row[self.link], self.demand, self.coef)
        return Incidence(*own, shape=(rows.size, self.shape[1]), shared=shared), rows

    def crossing(self, marked: np.ndarray) -> np.ndarray:
        """Per demand: whether it puts load (a positive entry) on a link where the boolean
        ``marked`` is set; ``Aᵀ @ marked > 0`` for a nonnegative ``A`` (through a shared
        pattern: a positive share of the demand on a pattern with a positive share on a
        marked link)."""
        hit = np.zeros(self.shape[1], dtype=bool)
        hit[self.demand[marked[self.link] & (self.coef > 0)]] = True
        if self.shared is not None:
            hit |= self.shared.via.crossing(self.shared.paths.crossing(marked))
        return hit


def _run_starts(sorted_values: np.ndarray) -> np.ndarray:
    """Index of the first element of each run of equal values in a sorted array."""
    if not sorted_values.size:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(sorted_values[1:] != sorted_values[:-1]) + 1
    return np.concatenate([[0], change])
