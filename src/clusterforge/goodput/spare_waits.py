"""Waiting for spares: when each hardware failure of a life finds a node, and how many
nodes are in repair at once.

A hardware failure takes a node away for ``repair_s``; the job takes a spare, and when every
spare is still in repair it waits for the earliest to return.  Failed nodes return in the
order they failed, so a pool of ``s`` spares is a FIFO: the k-th hardware failure reuses the
node of failure k - s, ready at ``T[k-s] + repair``.

Waiting shifts the clock but changes no draw, so the failures' times are first drawn as if
no life ever waited (their base times ``b``, :mod:`.montecarlo`).  With ``W`` the total wait
before a failure, failure k happens at ``b_k + W`` and the job resumes once the node of
failure k - s is back, so ``W`` after failure k is ``max(W, T[k-s] + repair - b_k)``: a
cumulative maximum.  It only needs times of failures at least ``s`` earlier, so blocks of
``s`` failures are settled at once (:func:`spare_waits`): tens of steps for a 100,000-GPU
job, not one per failure.

In-rack spares (one pool per NVLink domain) hand each hardware failure to a domain drawn
uniformly; failure k then reuses the node of the s-th failure before it *in its own pool*,
which lies at least s columns earlier, so the same blocks of s failures are settled at once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["peak_in_repair", "spare_waits"]


def spare_waits(
    base_s: np.ndarray,
    event: np.ndarray,
    *,
    num_spares: int,
    repair_s: float,
    pool: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Total wait for spares before each hardware failure, and the failures' clock times.

    ``base_s`` is a [lives, k] matrix of hardware failures' times with no waits (padded
    with inf), ``event`` the index of the interruption each belongs to (failures of one
    interruption share its time and its wait), ``pool`` the spare pool of each failure
    (None: one pool).  Returns (wait after the last failure per life, failure times with
    waits).  See the module docstring for the recursion."""
    lives, width = base_s.shape
    valid = np.isfinite(base_s)
    first = _first_of_event(event)
    if num_spares == 0:
        return _own_repair_waits(base_s, first, repair_s=repair_s)
    previous = _previous_in_pool(pool, valid, num_spares)
    running = np.zeros((lives, width))  # total wait after failure k (cumulative maximum)
    times = np.full((lives, width), np.inf)
    for start in range(0, width, num_spares):
        stop = min(start + num_spares, width)
        prior = running[:, start - 1] if start else np.zeros(lives)
        ready = _ready_at(times, start, stop, num_spares, repair_s, previous)
        with np.errstate(invalid="ignore"):  # inf - inf in the padding, masked out
            gap = np.where(valid[:, start:stop], ready - base_s[:, start:stop], -np.inf)
        block = np.maximum.accumulate(np.concatenate([prior[:, None], gap], axis=1), axis=1)
        running[:, start:stop] = block[:, 1:]
        # A failure happens after the waits of the interruptions before its own.
        before = first[:, start:stop] - 1
        wait_before = np.where(before >= 0, _take(running, before), 0.0)
        times[:, start:stop] = np.where(
            valid[:, start:stop], base_s[:, start:stop] + wait_before, np.inf
        )
    total = running[:, -1] if width else np.zeros(lives)
    return np.maximum(total, 0.0), times


def _own_repair_waits(
    base_s: np.ndarray, first: np.ndarray, *, repair_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """With no spares every interruption with a hardware failure waits for its own node's
    repair: the waits before a failure are ``repair`` times the interruptions before it."""
    valid = np.isfinite(base_s)
    starts = valid & (first == np.arange(base_s.shape[1])[None, :])
    before = np.cumsum(starts, axis=1) - 1  # interruptions before this one's
    times = np.where(valid, base_s + repair_s * before, np.inf)
    return repair_s * starts.sum(axis=1).astype(float), times


def _previous_in_pool(pool: np.ndarray | None, valid: np.ndarray, spares: int) -> np.ndarray | None:
    """Column of the failure ``spares`` before each one in its own pool (-1: none), or None
    for a single pool (then it is simply column k - spares)."""
    if pool is None:
        return None
    width = pool.shape[1]
    cols = np.broadcast_to(np.arange(width), pool.shape)
    keyed = np.where(valid, pool, np.iinfo(np.int64).max // (width + 1) - 1)
    order = np.argsort(keyed * (width + 1) + cols, axis=1, kind="stable")
    sorted_pool = np.take_along_axis(keyed, order, axis=1)
    back = np.full(pool.shape, -1, dtype=np.int64)
    if width > spares:
        same = sorted_pool[:, spares:] == sorted_pool[:, :-spares]
        back[:, spares:] = np.where(same, order[:, :-spares], -1)
    previous = np.empty_like(back)
    np.put_along_axis(previous, order, back, axis=1)
    return previous


def _ready_at(
    times: np.ndarray,
    start: int,
    stop: int,
    spares: int,
    repair_s: float,
    previous: np.ndarray | None = None,
) -> np.ndarray:
    """When the spare each failure in [start, stop) takes is back: the node of failure
    k - spares (of its own pool: ``previous``) returns ``repair_s`` after it failed (none
    needed before the first spares)."""
    if previous is not None:
        k = previous[:, start:stop]
        back = np.take_along_axis(times, np.maximum(k, 0), axis=1) + repair_s
        return np.where(k >= 0, back, 0.0)
    k = np.arange(start, stop) - spares
    ready = np.zeros((times.shape[0], stop - start))
    has = k >= 0
    ready[:, has] = times[:, k[has]] + repair_s
    return ready


def _first_of_event(event: np.ndarray) -> np.ndarray:
    """For each column, the column of the first failure of the same interruption."""
    width = event.shape[1]
    cols = np.broadcast_to(np.arange(width), event.shape)
    starts = np.ones(event.shape, dtype=bool)
    starts[:, 1:] = event[:, 1:] != event[:, :-1]
    first: np.ndarray = np.maximum.accumulate(np.where(starts, cols, 0), axis=1)
    return first


def _take(matrix: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``matrix[i, cols[i, j]]`` for every (i, j), with cols clipped at 0."""
    return np.take_along_axis(matrix, np.maximum(cols, 0), axis=1)


def peak_in_repair(hw_times: np.ndarray, repair_s: float, *, rows: int = 64) -> np.ndarray:
    """Most nodes in repair at once per life: at each hardware failure, the failures of the
    last ``repair`` seconds (rows are increasing, padded with inf).  One searchsorted per
    block of ``rows`` lives (small enough to stay in cache): row r is shifted by r x 2·span
    so that rows never interleave."""
    runs, cols = hw_times.shape
    finite = np.isfinite(hw_times)
    if cols == 0 or not finite.any():
        return np.zeros(runs, dtype=np.int64)
    span = float(hw_times[finite].max()) + repair_s + 1.0
    peak = np.zeros(runs, dtype=np.int64)
    for start in range(0, runs, rows):
        block = slice(start, min(start + rows, runs))
        offsets = (np.arange(block.stop - start) * 2.0 * span)[:, None]
        shifted = np.where(finite[block], hw_times[block], span) + offsets
        lower = np.searchsorted(shifted.ravel(), (shifted - repair_s).ravel(), side="right")
        count = (np.arange(shifted.size) + 1 - lower).reshape(shifted.shape)
        peak[block] = np.where(finite[block], count, 0).max(axis=1)
    return peak
