"""The numpy incidence matrix against a dense reference, and the CLI's import path kept light."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from clusterforge.netsim.incidence import Incidence, SharedPaths

NUM_LINKS, NUM_DEMANDS = 30, 50


def _random_triplets(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    size = 400  # 400 draws over 1,500 cells: many (link, demand) pairs repeat
    link = rng.integers(0, NUM_LINKS, size)
    demand = rng.integers(0, NUM_DEMANDS - 5, size)  # the last 5 demands cross nothing
    return link, demand, rng.uniform(0.1, 2.0, size)


def _dense(link: np.ndarray, demand: np.ndarray, coef: np.ndarray) -> np.ndarray:
    a = np.zeros((NUM_LINKS, NUM_DEMANDS))
    np.add.at(a, (link, demand), coef)
    return a


NUM_PATTERNS = 6


def _shared(seed: int) -> tuple[SharedPaths, np.ndarray]:
    """A factored part ``P @ V``: 6 patterns on links 12-29 (some links only patterns reach),
    each used by a few demands, one pattern by none; and its dense product."""
    rng = np.random.default_rng(100 + seed)
    p_link, p_id = rng.integers(12, NUM_LINKS, 40), rng.integers(0, NUM_PATTERNS, 40)
    p_frac = rng.uniform(0.05, 1.0, 40)
    v_id, v_demand = rng.integers(0, NUM_PATTERNS - 1, 25), rng.integers(0, NUM_DEMANDS - 5, 25)
    v_weight = rng.uniform(0.5, 3.0, 25)
    paths = Incidence.from_triplets(
        p_link, p_id, p_frac, num_links=NUM_LINKS, num_demands=NUM_PATTERNS
    )
    via = Incidence.from_triplets(
        v_id, v_demand, v_weight, num_links=NUM_PATTERNS, num_demands=NUM_DEMANDS
    )
    p_dense = np.zeros((NUM_LINKS, NUM_PATTERNS))
    np.add.at(p_dense, (p_link, p_id), p_frac)
    v_dense = np.zeros((NUM_PATTERNS, NUM_DEMANDS))
    np.add.at(v_dense, (v_id, v_demand), v_weight)
    return SharedPaths(paths, via), p_dense @ v_dense


# seeds 0-2: plain triplets; 3-5: triplets on links 0-19 plus a shared part P @ V
@pytest.fixture(params=[0, 1, 2, 3, 4, 5])
def pair(request: pytest.FixtureRequest) -> tuple[Incidence, np.ndarray]:
    link, demand, coef = _random_triplets(request.param)
    if request.param < 3:
        inc = Incidence.from_triplets(
            link, demand, coef, num_links=NUM_LINKS, num_demands=NUM_DEMANDS
        )
        return inc, _dense(link, demand, coef)
    link = link % 20
    shared, product = _shared(request.param)
    inc = Incidence.from_triplets(
        link, demand, coef, num_links=NUM_LINKS, num_demands=NUM_DEMANDS, shared=shared
    )
    return inc, _dense(link, demand, coef) + product


def test_duplicates_are_summed_into_sorted_unique_entries(pair):
    inc, dense = pair
    key = inc.link * NUM_DEMANDS + inc.demand
    assert np.all(np.diff(key) > 0)  # sorted by (link, demand), no pair twice
    if inc.shared is None:
        assert inc.coef == pytest.approx(dense[inc.link, inc.demand])
        assert inc.link.size == np.count_nonzero(dense)


def test_products_match_the_dense_matrix(pair):
    inc, dense = pair
    rng = np.random.default_rng(11)
    x, y = rng.uniform(0, 3, NUM_DEMANDS), rng.uniform(0, 3, NUM_LINKS)
    assert inc.shape == dense.shape
    assert inc.matvec(x) == pytest.approx(dense @ x, rel=1e-12)
    assert inc.rmatvec(y) == pytest.approx(dense.T @ y, rel=1e-12)
    assert inc.row_sums() == pytest.approx(dense.sum(axis=1), rel=1e-12)


def test_crossing_marks_exactly_the_demands_on_marked_links(pair):
    inc, dense = pair
    marked = np.zeros(NUM_LINKS, dtype=bool)
    marked[[2, 7, 19]] = True
    assert np.array_equal(inc.crossing(marked), (dense[marked] > 0).any(axis=0))
    assert np.array_equal(inc.crosses(), (dense > 0).any(axis=0))
    assert not inc.crosses()[-5:].any()


def test_a_zero_entry_still_crosses_but_puts_no_load():
    inc = Incidence.from_triplets(
        np.array([0, 1]), np.array([0, 0]), np.array([0.0, 1.0]), num_links=2, num_demands=2
    )
    assert inc.crosses().tolist() == [True, False]
    assert inc.crossing(np.array([True, False])).tolist() == [False, False]
    assert inc.crossing(np.array([False, True])).tolist() == [True, False]


def test_no_triplets_gives_zero_products():
    empty = np.array([], dtype=np.int64)
    inc = Incidence.from_triplets(empty, empty, np.array([]), num_links=3, num_demands=2)
    assert inc.matvec(np.ones(2)).tolist() == [0.0, 0.0, 0.0]
    assert inc.rmatvec(np.ones(3)).tolist() == [0.0, 0.0]
    assert not inc.crosses().any()


# scipy costs about a third of a second of import on every CLI call; the simulator, the
# performance model, planning and goodput run on numpy alone.
@pytest.mark.parametrize(
    "module",
    [
        "clusterforge.netsim",
        "clusterforge.perf",
        "clusterforge.design",
        "clusterforge.goodput",
        "clusterforge.cli.main",
    ],
)
def test_import_does_not_pull_in_scipy(module: str) -> None:
    probe = (
        f"import sys, {module}; "
        "loaded = sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')); "
        "print(loaded[:5])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]", f"importing {module} loads {out.stdout.strip()}"


def test_touched_links_keep_every_product(pair):
    inc, dense = pair
    sub, rows = inc.on_touched_links()
    touched = np.flatnonzero((dense != 0).any(axis=1))
    assert np.array_equal(rows, touched)
    x = np.random.default_rng(5).uniform(0, 3, NUM_DEMANDS)
    assert sub.matvec(x) == pytest.approx((dense @ x)[touched], rel=1e-12)
    y = np.zeros(NUM_LINKS)
    y[touched] = np.arange(touched.size) + 1.0
    assert sub.rmatvec(y[touched]) == pytest.approx(dense.T @ y, rel=1e-12)
