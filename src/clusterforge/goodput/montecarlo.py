"""Monte Carlo of a training job's life, vectorized over lives and over failures (numpy).

The process is the one the expected-value model prices (:mod:`.model`): Poisson failures
of rate 1/M on the wall clock; work in segments of ``tau`` followed by a checkpoint of
``delta``; a failure loses the work since the last checkpoint; a restart of ``R`` seconds
(which a failure can interrupt).  On top of the expected model, each failure is a hardware
failure with probability ``p_spare``: the failed node leaves for repair and the job takes a
spare; when every spare is still in repair the job waits for the earliest to return.
Because failed nodes return in the order they failed, the pool is a FIFO: the k-th
hardware failure reuses the node of failure k - spares, ready at ``T[k-spares] + repair``.

Two observations make the whole life array arithmetic rather than a loop per failure:

1. Waiting for a spare shifts the clock but changes neither the work saved by an interval
   nor the draws that follow, so the sequence of intervals, restarts and hardware failures
   of a life is drawn first, in blocks of columns (:func:`_draw_events`), with the clock of
   each failure *as if no life ever waited* (its base time ``b``).
2. The waits then follow from a running maximum over the failures' base times, settled
   in blocks of ``s`` (spares) failures at once (:mod:`.spare_waits`), with one spare pool
   or (``num_spare_pools`` > 1, in-rack spares) one per NVLink domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from clusterforge.errors import PlanError
from clusterforge.goodput.model import expected_wall_s
from clusterforge.goodput.spare_waits import peak_in_repair, spare_waits

__all__ = [
    "MAX_INTERRUPTIONS",
    "MAX_INTERRUPTIONS_PER_LIFE",
    "LifeParams",
    "Lives",
    "expected_interruptions",
    "simulate_lives",
]

# Bounds on the work and memory of one call, checked before anything is allocated.  A block
# of lives x columns holds about ten float64 arrays: 2**22 cells is about 340 MB at its peak
# (the 1,000 default lives of 4,096 columns fit one block, as before the bound).
_CELLS_PER_BATCH = 1 << 22
# Interruptions drawn in all lives together: about 2 million a second on one loaded core
# (benchmarks/goodput_scale.py --days 3650), so under a minute.
MAX_INTERRUPTIONS = 100_000_000
MAX_INTERRUPTIONS_PER_LIFE = _CELLS_PER_BATCH  # one life's padded arrays stay under 100 MB


@dataclass(frozen=True)
class LifeParams:
    """Inputs of one job's life, in seconds (``mtbf_s`` may be inf: nothing fails)."""

    work_s: float
    tau_s: float
    delta_s: float
    restart_s: float
    mtbf_s: float
    p_spare: float
    num_spares: int  # in each pool
    repair_s: float
    num_spare_pools: int = 1


@dataclass(frozen=True)
class Lives:
    """Per-life outcomes, arrays of length ``runs``."""

    wall_s: np.ndarray
    failures: np.ndarray
    spare_wait_s: np.ndarray
    peak_in_repair: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class _Events:
    """A life's draws with no spare waits: its wall time, failure count and the hardware
    failures as (life, base time, count) rows in time order within each life."""

    base_wall_s: np.ndarray
    failures: np.ndarray
    hw_life: np.ndarray
    hw_time_s: np.ndarray
    hw_count: np.ndarray


def _restarts(shape: tuple[int, int], p: LifeParams, rng: np.random.Generator):
    """Seconds to complete each restart of an array of restarts, and the failures that
    interrupted each.

    A restart succeeds when no failure comes within R: the failed attempts before it are
    geometric with success probability e^(-R/M), and each lasts an exponential time
    truncated to [0, R) (sampled by inverting its CDF)."""
    if not np.isfinite(p.mtbf_s) or p.restart_s <= 0:
        return np.full(shape, p.restart_s), np.zeros(shape, dtype=np.int64)
    survive = np.exp(-p.restart_s / p.mtbf_s)
    if survive <= 0.0:
        raise ValueError("restart can never complete")  # guarded by expected_goodput
    # Failed attempts: a geometric count (from 0) by inversion, F(k) = 1 - (1-s)^(k+1).
    u = rng.random(shape)
    failed = np.floor(np.log1p(-u) * (1.0 / np.log1p(-survive))).astype(np.int64)
    total = int(failed.sum())
    attempt_s = -p.mtbf_s * np.log1p(-rng.random(total) * (1.0 - survive))
    # Each restart's attempts are consecutive in attempt_s: differences of a running sum.
    running = np.concatenate([[0.0], np.cumsum(attempt_s)])
    end = np.cumsum(failed.ravel())
    lost_s = (running[end] - running[end - failed.ravel()]).reshape(shape)
    return p.restart_s + lost_s, failed


def _block_size(p: LifeParams, rem: np.ndarray, per_work_s: float) -> int:
    """Columns to draw next: the failures expected before ``rem`` is saved, plus margin."""
    expected = float(rem.mean()) * per_work_s
    return int(min(max(1.3 * expected + 8.0, 8.0), 4096.0))


@dataclass
class _Block:
    """One block of columns drawn for the lives still working."""

    finished: np.ndarray
    intervals: np.ndarray
    spent_s: np.ndarray
    failures: np.ndarray
    saved_s: np.ndarray
    hw: tuple[np.ndarray, np.ndarray, np.ndarray]


def _draw_block(p: LifeParams, rem: np.ndarray, clock: np.ndarray, cols: int, rng) -> _Block:
    """Draw ``cols`` intervals for each working life (work left ``rem``, clock ``clock``)
    and play them until the life finishes or the block ends."""
    shape = (rem.size, cols)
    x = rng.exponential(p.mtbf_s, shape)
    saved = np.floor(x * (1.0 / (p.tau_s + p.delta_s))) * p.tau_s
    left = rem[:, None] - np.cumsum(saved, axis=1)
    left += saved
    ends = x >= left + p.delta_s * np.ceil(left * (1.0 / p.tau_s))
    finished = ends.any(axis=1)
    stop = np.where(finished, ends.argmax(axis=1), cols)  # failed intervals per life
    width = int(stop.max())
    last = np.minimum(stop, cols - 1)[:, None]
    final = np.take_along_axis(left, last, axis=1)[:, 0]
    final_s = np.where(finished, final + p.delta_s * np.ceil(final / p.tau_s), 0.0)
    x, saved = x[:, :width], saved[:, :width]
    failed = np.arange(width)[None, :] < stop[:, None]
    restart_s, extra = _restarts((rem.size, width), p, rng)
    spent = np.where(failed, x + restart_s, 0.0)
    hw = _hardware_in_block(
        p, failed, extra, clock[:, None] + np.cumsum(spent, axis=1) - restart_s, rng
    )
    return _Block(
        finished=finished,
        intervals=stop,
        spent_s=spent.sum(axis=1) + final_s,
        failures=stop + (extra * failed).sum(axis=1),
        saved_s=(saved * failed).sum(axis=1),
        hw=hw,
    )


def _hardware_in_block(p: LifeParams, failed, extra, fail_at, rng):
    """The interruptions of a block that took nodes for repair: (row, time, nodes)."""
    if p.p_spare <= 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, np.zeros(0), empty
    nodes = (rng.random(failed.shape, dtype=np.float32) < p.p_spare).astype(np.int32)
    more = np.nonzero(extra)
    nodes[more] += rng.binomial(extra[more], p.p_spare).astype(np.int32)
    nodes *= failed
    rows, cols = np.nonzero(nodes)
    return rows, fail_at[rows, cols], nodes[rows, cols]


def _draw_events(p: LifeParams, runs: int, rng: np.random.Generator) -> _Events:
    """Draw every life's failure-free intervals in blocks of columns until each finishes.

    Interval j of a life saves ``floor(x_j / (tau + delta)) * tau`` of work whatever the
    work left (a failure never lands after the last checkpoint: it would have finished),
    so the work left before interval j is a cumulative sum, and the life ends at the first
    interval long enough for the rest of the work and its checkpoints."""
    failures = np.zeros(runs, dtype=np.int64)
    if not np.isfinite(p.mtbf_s):  # nothing fails: the work and its checkpoints
        wall_s = p.work_s + p.delta_s * math.ceil(p.work_s / p.tau_s)
        return _Events(np.full(runs, wall_s), failures, *_hardware_rows([]))
    rem = np.full(runs, float(p.work_s))
    clock = np.zeros(runs)
    live = np.arange(runs)
    hw_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    # Failures per second of work saved, first guessed with an ETTR of 1/2.
    per_work_s = 2.0 / p.mtbf_s
    while live.size:
        block = _draw_block(p, rem[live], clock[live], _block_size(p, rem[live], per_work_s), rng)
        rows, time_s, nodes = block.hw
        hw_rows.append((live[rows], time_s, nodes))
        failures[live] += block.failures
        clock[live] += block.spent_s
        saved = float(block.saved_s.sum())
        per_work_s = max(per_work_s, float(block.intervals.sum()) / max(saved, 1.0))
        rem[live] = np.where(block.finished, 0.0, rem[live] - block.saved_s)
        live = live[~block.finished]
    return _Events(clock, failures, *_hardware_rows(hw_rows))


def _hardware_rows(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """Concatenate the blocks' hardware failures, grouped by life in time order."""
    if not rows:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty.astype(np.int64)
    life = np.concatenate([r[0] for r in rows])
    order = np.argsort(life, kind="stable")  # blocks come in time order
    return (
        life[order],
        np.concatenate([r[1] for r in rows])[order],
        np.concatenate([r[2] for r in rows])[order].astype(np.int64),
    )


def _padded(events: _Events, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """The hardware failures as [lives, most failures] matrices: base times (inf padding)
    and the interruption each belongs to (failures of one interruption are adjacent)."""
    life = np.repeat(events.hw_life, events.hw_count)
    row = np.repeat(np.arange(events.hw_count.size), events.hw_count)
    per_life = np.bincount(life, minlength=runs)
    width = int(per_life.max()) if runs else 0
    col = np.arange(life.size) - np.repeat(np.cumsum(per_life) - per_life, per_life)
    base_s = np.full((runs, width), np.inf)
    event = np.full((runs, width), -1, dtype=np.int64)
    base_s[life, col] = np.repeat(events.hw_time_s, events.hw_count)
    event[life, col] = row
    return base_s, event


def expected_interruptions(p: LifeParams) -> float:
    """Interruptions one life expects: its expected wall time (:mod:`.model`) over the MTBF."""
    if not math.isfinite(p.mtbf_s):
        return 0.0
    wall_s = expected_wall_s(
        p.work_s, tau_s=p.tau_s, delta_s=p.delta_s, restart_s=p.restart_s, mtbf_s=p.mtbf_s
    )
    return wall_s / p.mtbf_s


def _check_bounds(p: LifeParams, runs: int) -> float:
    """The interruptions per life; a :class:`PlanError`, before anything is allocated, when
    one life has more than :data:`MAX_INTERRUPTIONS_PER_LIFE` or all ``runs`` lives together
    more than :data:`MAX_INTERRUPTIONS`."""
    per_life = expected_interruptions(p)
    total = per_life * runs
    if per_life <= MAX_INTERRUPTIONS_PER_LIFE and total <= MAX_INTERRUPTIONS:
        return per_life  # (a NaN count fails both tests and is refused below)
    years = per_life * p.mtbf_s / (365.0 * 86400.0)
    facts = (
        f"{per_life:.3g} interruptions in one life, an expected time to train of {years:.3g} "
        f"years (checkpoint every {p.tau_s:.3g} s costing {p.delta_s:.3g} s, MTBF "
        f"{p.mtbf_s / 3600:.3g} h)"
    )
    if not per_life <= MAX_INTERRUPTIONS_PER_LIFE:
        fix = (
            "lengthen reliability.checkpoint_interval_s (or leave it unset for the Young/Daly "
            "optimum): the checkpoints cost more than the work between them"
            if p.delta_s >= p.tau_s
            else "shorten the training or make the job fail less often"
        )
        raise PlanError(
            f"{facts}; the Monte Carlo simulates at most {MAX_INTERRUPTIONS_PER_LIFE:,} per "
            f"life: {fix}"
        )
    fewest = int(MAX_INTERRUPTIONS // max(per_life, 1.0))
    raise PlanError(
        f"{runs:,} simulated lives of {facts} are {total:.3g} interruptions; the Monte Carlo "
        f"draws at most {MAX_INTERRUPTIONS:,}: lower the runs to {fewest:,} or shorten the "
        "training"
    )


def simulate_lives(p: LifeParams, *, runs: int, seed: int = 0) -> Lives:
    """Simulate ``runs`` independent lives of the job; see the module docstring.

    Lives are simulated in batches whose lives x columns stay under a fixed number of cells,
    so memory does not grow with ``runs``; the batches share one random stream, so a call
    that fits one batch draws exactly what it always did."""
    per_life = _check_bounds(p, runs)
    batch = max(1, _CELLS_PER_BATCH // max(4096, int(1.5 * per_life) + 64))
    rng = np.random.default_rng(seed)
    parts = [_simulate_batch(p, min(batch, runs - start), rng) for start in range(0, runs, batch)]
    if len(parts) == 1:
        return parts[0]
    return Lives(*(np.concatenate([getattr(part, f) for part in parts]) for f in _LIVES_FIELDS))


_LIVES_FIELDS = ("wall_s", "failures", "spare_wait_s", "peak_in_repair")


def _simulate_batch(p: LifeParams, runs: int, rng: np.random.Generator) -> Lives:
    events = _draw_events(p, runs, rng)
    base_s, event = _padded(events, runs)
    pool = rng.integers(p.num_spare_pools, size=base_s.shape) if p.num_spare_pools > 1 else None
    wait_s, times = spare_waits(
        base_s, event, num_spares=p.num_spares, repair_s=p.repair_s, pool=pool
    )
    peak = peak_in_repair(times, p.repair_s)
    return Lives(events.base_wall_s + wait_s, events.failures, wait_s, peak)
