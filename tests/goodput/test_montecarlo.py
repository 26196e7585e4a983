"""The vectorized Monte Carlo against plain event-by-event simulations of the same process."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clusterforge.goodput import LifeParams, simulate_lives
from clusterforge.goodput.spare_waits import spare_waits

H = 3600.0


def _scalar_waits(
    times: list[float], events: list[int], spares: int, repair_s: float
) -> tuple[float, list[float]]:
    """One life's spare pool, one hardware failure at a time (the FIFO pool)."""
    clock_of: list[float] = []
    waited = 0.0
    k = 0
    while k < len(times):
        event, now = events[k], times[k] + waited
        ready = 0.0
        while k < len(times) and events[k] == event:
            clock_of.append(now)
            if spares == 0:
                ready = max(ready, now + repair_s)
            elif k >= spares:
                ready = max(ready, clock_of[k - spares] + repair_s)
            k += 1
        waited += max(0.0, ready - now)
    return waited, clock_of


def _random_failures(rng: np.random.Generator, lives: int) -> tuple[np.ndarray, np.ndarray]:
    """Padded [lives, k] base times and interruption ids; several nodes per interruption."""
    counts = rng.integers(0, 40, lives)
    width = int(counts.max())
    base = np.full((lives, width), np.inf)
    event = np.full((lives, width), -1)
    for life, n in enumerate(counts):
        nodes = rng.choice([1, 1, 1, 2, 3], size=n)
        ids = np.repeat(np.arange(n), nodes)[:n]
        gaps = rng.exponential(6 * H, n)
        base[life, :n] = np.cumsum(gaps)[ids]
        event[life, :n] = ids
    return base, event


@pytest.mark.parametrize("spares", [0, 1, 3, 7, 50])
def test_spare_waits_equal_a_failure_by_failure_pool(spares: int) -> None:
    rng = np.random.default_rng(spares)
    base, event = _random_failures(rng, 60)
    total, clock = spare_waits(base, event, num_spares=spares, repair_s=48 * H)
    for life in range(base.shape[0]):
        n = int(np.isfinite(base[life]).sum())
        want_total, want_clock = _scalar_waits(
            list(base[life, :n]), list(event[life, :n]), spares, 48 * H
        )
        assert total[life] == pytest.approx(want_total, abs=1e-6)
        np.testing.assert_allclose(clock[life, :n], want_clock, atol=1e-6)
        assert np.isinf(clock[life, n:]).all()


def _scalar_life(p: LifeParams, rng: np.random.Generator) -> tuple[float, int]:
    """One life, one failure-free interval at a time (no spares): wall seconds, failures."""
    clock, rem, failures = 0.0, p.work_s, 0
    while True:
        x = rng.exponential(p.mtbf_s)
        need = rem + p.delta_s * math.ceil(rem / p.tau_s)
        if x >= need:
            return clock + need, failures
        clock += x
        rem -= math.floor(x / (p.tau_s + p.delta_s)) * p.tau_s
        failures += 1
        while (y := rng.exponential(p.mtbf_s)) < p.restart_s:  # the restart fails
            clock += y
            failures += 1
        clock += p.restart_s


def test_vectorized_lives_match_a_life_by_life_simulation() -> None:
    p = LifeParams(
        work_s=5 * 24 * H,
        tau_s=1800.0,
        delta_s=120.0,
        restart_s=900.0,
        mtbf_s=3 * H,
        p_spare=0.0,
        num_spares=0,
        repair_s=0.0,
    )
    rng = np.random.default_rng(7)
    scalar = np.array([_scalar_life(p, rng) for _ in range(600)])
    lives = simulate_lives(p, runs=600, seed=8)
    stderr = math.hypot(scalar[:, 0].std(), lives.wall_s.std()) / math.sqrt(600)
    assert abs(lives.wall_s.mean() - scalar[:, 0].mean()) < 4 * stderr
    stderr_n = math.hypot(scalar[:, 1].std(), lives.failures.std()) / math.sqrt(600)
    assert abs(lives.failures.mean() - scalar[:, 1].mean()) < 4 * stderr_n


def test_nothing_fails_without_a_failure_rate() -> None:
    p = LifeParams(
        work_s=1000.0,
        tau_s=100.0,
        delta_s=5.0,
        restart_s=60.0,
        mtbf_s=math.inf,
        p_spare=0.5,
        num_spares=0,
        repair_s=10.0,
    )
    lives = simulate_lives(p, runs=5)
    assert (lives.wall_s == 1050.0).all()
    assert (lives.failures == 0).all() and (lives.spare_wait_s == 0).all()


def test_what_ifs_move_the_way_physics_says() -> None:
    from clusterforge.goodput import GoodputInputs, job_rates, what_ifs
    from clusterforge.goodput.whatif import WhatIfFacts, arrhenius_factor

    rates = job_rates(num_gpus=16384, num_nodes=2048, num_nics=16384)
    inputs = GoodputInputs(
        work_s=30 * 24 * H,
        delta_s=120.0,
        relaunch_s=900.0,
        read_s=300.0,
        rates=rates,
        num_spares=100,
        repair_s=5 * 24 * H,
        swap_s=600.0,
    )
    out = what_ifs(inputs, WhatIfFacts(async_delta_s=5.0, in_memory_read_s=20.0))
    base = out["as designed"]
    for label in (
        "storage 2x faster",
        "relaunch in half the time",
        "hot spares in the job's leaf",
        "liquid cooling (GPU 15 K cooler, Arrhenius)",
        "async checkpoints",
        "in-memory checkpoints (read back from peers)",
    ):
        assert out[label].ettr > base.ettr, label
        assert out[label].wall_s < base.wall_s, label
    smaller = out["half the job (half the GPUs, twice the time)"]
    assert smaller.ettr > base.ettr and smaller.wall_s > base.wall_s
    assert smaller.interruptions_per_day == pytest.approx(base.interruptions_per_day / 2)
    # Cooler dies fail less: only GPU and HBM rates change, by the Arrhenius factor.
    assert arrhenius_factor(hot_k=348.15, cool_k=333.15) == pytest.approx(2.12, rel=0.01)
    assert arrhenius_factor(hot_k=348.15, cool_k=348.15) == 1.0


@pytest.mark.parametrize("mean", [0.0, 0.3, 5.0, 120.0, 2500.0])
@pytest.mark.parametrize("spares", [0, 1, 4, 30, 2600])
def test_spare_pool_poisson_terms_match_scipy(mean: float, spares: int) -> None:
    from scipy import stats

    from clusterforge.goodput import spare_pool

    pool = spare_pool(num_spares=spares, spare_failures_per_h=mean, repair_h=1.0)
    want = stats.poisson(mean).sf(spares - 1) if spares > 0 else 1.0
    assert pool.p_no_spare == pytest.approx(want, rel=1e-9, abs=1e-300)
    want_q = int(stats.poisson(mean).ppf(0.99)) if mean > 0 else 0
    assert pool.spares_for_99 == want_q


@pytest.mark.parametrize(
    ("mtbf_h", "repair_days", "spares"),
    [(24, 5, 0), (24, 5, 1), (24, 5, 5), (6, 5, 2), (6, 5, 10), (48, 2, 1), (48, 2, 30)],
)
def test_expected_spare_waits_agree_with_the_monte_carlo(
    mtbf_h: float, repair_days: float, spares: int
) -> None:
    # Scarce spares stretch the job: the expected model must see it as the lives do (within
    # 8 %: the fixed point treats consecutive waits as independent; the worst case is the
    # transition between no contention and a pool that is always empty).
    from clusterforge.goodput import GoodputInputs, expected_goodput, life_params
    from clusterforge.goodput.rates import JobRates

    rates = JobRates(
        {"gpu": 0.7 / mtbf_h, "software": 0.3 / mtbf_h}, {"gpu": True, "software": False}
    )
    inputs = GoodputInputs(
        rates=rates,
        work_s=30 * 24 * H,
        delta_s=60.0,
        relaunch_s=600.0,
        num_spares=spares,
        repair_s=repair_days * 24 * H,
    )
    expected = expected_goodput(inputs)
    lives = simulate_lives(life_params(inputs, expected), runs=300, seed=4)
    assert expected.wall_s == pytest.approx(lives.wall_s.mean(), rel=0.08)
    assert expected.spare_wait_s == pytest.approx(
        lives.spare_wait_s.mean(), rel=0.25, abs=0.04 * expected.wall_s
    )
