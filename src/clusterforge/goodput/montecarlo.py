"""Monte Carlo of a training job's life, vectorized over lives (numpy, no per-life loop).

The process is the one the expected-value model prices (:mod:`.model`): Poisson failures
of rate 1/M on the wall clock; work in segments of ``tau`` followed by a checkpoint of
``delta``; a failure loses the work since the last checkpoint; a restart of ``R`` seconds
(which a failure can interrupt).  On top of the expected model, each failure is a hardware
failure with probability ``p_spare``: the failed node leaves for repair and the job takes a
spare; when every spare is still in repair the job waits for the earliest to return.
Because failed nodes return in the order they failed, the pool is a FIFO: the k-th
hardware failure reuses the node of failure k - spares, ready at ``T[k-spares] + repair``.

Each loop iteration advances every unfinished life by one failure-free interval, so the
loop runs about as many times as a life has failures (thousands for 100,000 GPUs over
90 days), each step a handful of array operations over the lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["LifeParams", "Lives", "simulate_lives"]


@dataclass(frozen=True)
class LifeParams:
    """Inputs of one job's life, in seconds (``mtbf_s`` may be inf: nothing fails)."""

    work_s: float
    tau_s: float
    delta_s: float
    restart_s: float
    mtbf_s: float
    p_spare: float
    num_spares: int
    repair_s: float


@dataclass(frozen=True)
class Lives:
    """Per-life outcomes, arrays of length ``runs``."""

    wall_s: np.ndarray
    failures: np.ndarray
    spare_wait_s: np.ndarray
    peak_in_repair: np.ndarray = field(repr=False)


@dataclass
class _State:
    t: np.ndarray
    rem: np.ndarray
    failures: np.ndarray
    wait: np.ndarray
    hw_count: np.ndarray
    hw_times: np.ndarray


def _record_hardware(state: _State, idx: np.ndarray, count: np.ndarray, p: LifeParams) -> None:
    """Lives ``idx`` each lose ``count`` nodes to hardware failures now: each takes a spare,
    and the life waits until the last spare it needs is back from repair."""
    keep = count > 0
    idx, count = idx[keep], count[keep]
    if idx.size == 0:
        return
    t_fail = state.t[idx]
    k0 = state.hw_count[idx]
    width = int(count.max())
    cols = state.hw_times.shape[1]
    while int((k0 + count).max()) > cols:
        grow = np.full((state.hw_times.shape[0], 2 * cols), np.inf)
        grow[:, :cols] = state.hw_times
        state.hw_times, cols = grow, 2 * cols
    flat = state.hw_times.reshape(-1)  # a view: rows are contiguous
    k = k0[:, None] + np.arange(width)[None, :]  # [lives, width] failure ordinals
    used = np.arange(width)[None, :] < count[:, None]
    row = (idx * cols)[:, None]
    # Written first: a failure may need the node that failed earlier in the same batch.
    flat[(row + k)[used]] = np.broadcast_to(t_fail[:, None], k.shape)[used]
    if p.num_spares == 0:
        wait = np.full(idx.size, p.repair_s)
    else:
        prev = k - p.num_spares
        ready = np.where(prev >= 0, flat[row + np.maximum(prev, 0)] + p.repair_s, 0.0)
        wait = np.maximum(0.0, np.where(used, ready, 0.0) - t_fail[:, None]).max(axis=1)
    state.wait[idx] += wait
    state.t[idx] += wait
    state.hw_count[idx] += count


def _restart_time(n: int, p: LifeParams, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Seconds to complete ``n`` restarts, and the failures that interrupted each.

    A restart succeeds when no failure comes within R: the failed attempts before it are
    geometric with success probability e^(-R/M), and each lasts an exponential time
    truncated to [0, R) (sampled by inverting its CDF)."""
    if not np.isfinite(p.mtbf_s) or p.restart_s <= 0:
        return np.full(n, p.restart_s), np.zeros(n, dtype=np.int64)
    survive = np.exp(-p.restart_s / p.mtbf_s)
    if survive <= 0.0:
        raise ValueError("restart can never complete")  # guarded by expected_goodput
    failed = rng.geometric(survive, n) - 1
    width = int(failed.max()) if n else 0
    u = rng.random((n, width))
    attempts = -p.mtbf_s * np.log1p(-u * (1.0 - survive))
    attempts *= np.arange(width)[None, :] < failed[:, None]
    return p.restart_s + attempts.sum(axis=1), failed


def _step(state: _State, p: LifeParams, rng: np.random.Generator) -> None:
    """Advance every unfinished life to its next failure and through the restart after it.

    Working lives finish, or fail and lose the work since their last checkpoint; a failed
    life then restarts (failures during the restart are counted and may need spares: they
    are placed at the start of the restart, minutes off against repairs of days)."""
    live = np.flatnonzero(state.rem > 0)
    x = (
        rng.exponential(p.mtbf_s, live.size)
        if np.isfinite(p.mtbf_s)
        else np.full(live.size, np.inf)
    )
    rem = state.rem[live]
    need = rem + p.delta_s * np.ceil(rem / p.tau_s)
    done = x >= need
    state.t[live] += np.where(done, need, x)
    saved = np.floor(np.where(done, 0.0, x) / (p.tau_s + p.delta_s)) * p.tau_s
    state.rem[live] = np.where(done, 0.0, np.maximum(0.0, rem - saved))
    lost = live[~done]
    restart_s, extra = _restart_time(lost.size, p, rng)
    failures = 1 + extra
    state.failures[lost] += failures
    hardware = rng.binomial(failures, p.p_spare) if p.p_spare > 0 else np.zeros_like(failures)
    _record_hardware(state, lost, hardware, p)
    state.t[lost] += restart_s


def _peak_in_repair(hw_times: np.ndarray, repair_s: float) -> np.ndarray:
    """Most nodes in repair at once per life: at each hardware failure, the failures of the
    last ``repair`` seconds (rows are increasing, padded with inf).  One searchsorted over
    all lives at once: row r is shifted by r x 2·span so that rows never interleave."""
    runs, cols = hw_times.shape
    finite = np.isfinite(hw_times)
    if cols == 0 or not finite.any():
        return np.zeros(runs, dtype=np.int64)
    span = float(hw_times[finite].max()) + repair_s + 1.0
    offsets = (np.arange(runs) * 2.0 * span)[:, None]
    shifted = np.where(finite, hw_times, span) + offsets
    lower = np.searchsorted(shifted.ravel(), (shifted - repair_s).ravel(), side="right")
    count = (np.arange(shifted.size) + 1 - lower).reshape(runs, cols)
    peak: np.ndarray = np.where(finite, count, 0).max(axis=1)
    return peak


def simulate_lives(p: LifeParams, *, runs: int, seed: int = 0) -> Lives:
    """Simulate ``runs`` independent lives of the job; see the module docstring."""
    rng = np.random.default_rng(seed)
    state = _State(
        t=np.zeros(runs),
        rem=np.full(runs, float(p.work_s)),
        failures=np.zeros(runs, dtype=np.int64),
        wait=np.zeros(runs),
        hw_count=np.zeros(runs, dtype=np.int64),
        hw_times=np.full((runs, 256), np.inf),
    )
    while (state.rem > 0).any():
        _step(state, p, rng)
    used = int(state.hw_count.max()) if runs else 0
    peak = _peak_in_repair(state.hw_times[:, :used], p.repair_s)
    return Lives(state.t, state.failures, state.wait, peak)
