"""Progressive filling against textbook max-min examples (Bertsekas & Gallager §6.5.2)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.netsim.incidence import Incidence
from clusterforge.netsim.maxmin import completion_time, max_min_rates


def _matrix(entries: list[tuple[int, int]], num_links: int, num_demands: int) -> Incidence:
    link, demand = np.array(entries).T
    return Incidence.from_triplets(
        link, demand, np.ones(len(entries)), num_links=num_links, num_demands=num_demands
    )


def test_classic_two_link_example():
    # link 0 (cap 1): demands 0, 1; link 1 (cap 2): demands 1, 2
    a = _matrix([(0, 0), (0, 1), (1, 1), (1, 2)], 2, 3)
    rate = max_min_rates(a, np.array([1.0, 2.0]), np.ones(3, bool))
    assert rate == pytest.approx([0.5, 0.5, 1.5])


def test_no_link_is_oversubscribed_and_every_demand_has_a_bottleneck():
    rng = np.random.default_rng(7)
    entries = {(int(rng.integers(20)), d) for d in range(200) for _ in range(3)}
    a = _matrix(sorted(entries), 20, 200)
    cap = rng.uniform(1, 10, 20)
    rate = max_min_rates(a, cap, np.ones(200, bool))
    load = a.matvec(rate)
    assert np.all(load <= cap * (1 + 1e-9))
    saturated = load >= cap * (1 - 0.05)  # batching freezes links within 5 % of the level
    assert np.all(a.rmatvec(saturated.astype(float)) > 0)


def test_inactive_demands_get_no_rate():
    a = _matrix([(0, 0), (0, 1)], 1, 2)
    rate = max_min_rates(a, np.array([4.0]), np.array([True, False]))
    assert rate == pytest.approx([4.0, 0.0])


def test_completion_reallocates_when_a_flow_finishes():
    # two flows on one link of 2 GB/s, 1 GB and 3 GB: 1 s at 1 GB/s each, then 1 s at 2 GB/s
    a = _matrix([(0, 0), (0, 1)], 1, 2)
    done = completion_time(a, np.array([2.0]), np.array([1.0, 3.0]))
    assert done.time_s == pytest.approx(2.0)
    assert done.steady_rate == pytest.approx([1.0, 1.0])


def test_completion_of_a_work_conserving_link_is_bytes_over_capacity():
    rng = np.random.default_rng(3)
    volume = rng.uniform(0.1, 5, 50)
    a = _matrix([(0, d) for d in range(50)], 1, 50)
    done = completion_time(a, np.array([10.0]), volume)
    assert done.time_s == pytest.approx(volume.sum() / 10, rel=0.06)
