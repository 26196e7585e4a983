"""Communication times for the performance model: a small interface and its netsim backend.

The step model asks one question: how long does collective X of S bytes take when these
groups of GPUs run it at the same time? :class:`CommModel` is that question.
:class:`NetsimComm` answers it with the flow-level simulator on the designed fabric
(``clusterforge.netsim``: routing, link contention, NCCL-like algorithms), so a worse fabric
gives longer collectives and a lower MFU.

Sizes follow the nccl-tests convention (``NVIDIA/nccl-tests:doc/PERFORMANCE.md``): the
total buffer (all-reduce in/out, all-gather output, reduce-scatter input, all-to-all send
buffer per rank; sendrecv message).

To keep ``--search`` fast, times are simulated on a geometric grid of sizes (ratio sqrt(2))
and interpolated linearly between the two bracketing points, which is exact for the
``alpha + S / beta`` shape of a collective's time; results are memoised per
(collective, grid size, group layout).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable

    from clusterforge.design import Design
    from clusterforge.netsim.vocab import Routing

__all__ = [
    "Collective",
    "CommModel",
    "InterpolatingComm",
    "NetsimComm",
    "netsim_available",
]

Collective = Literal[
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce", "sendrecv"
]


class CommModel(Protocol):
    """Anything that can time a set of concurrent collectives."""

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        """Seconds until all ``groups`` (shape ``(num_groups, group_size)``) finish."""
        ...


GRID_RATIO = math.sqrt(2.0)
MIN_GRID_BYTES = 1024.0


def _grid_points(size_bytes: float) -> tuple[float, float]:
    """The two grid sizes bracketing ``size_bytes`` (geometric grid, ratio sqrt 2)."""
    size = max(size_bytes, MIN_GRID_BYTES)
    index = math.floor(math.log(size / MIN_GRID_BYTES, GRID_RATIO))
    low = MIN_GRID_BYTES * GRID_RATIO**index
    return low, low * GRID_RATIO


class InterpolatingComm:
    """Memoise a ``time_s(collective, size, groups)`` function on a size grid.

    Times below the grid's first point are scaled from it (latency-dominated anyway).
    """

    def __init__(self, time_s: Callable[[Collective, float, np.ndarray], float]) -> None:
        self._time_s = time_s
        self._memo: dict[tuple[str, int, tuple[int, ...], bytes], float] = {}

    def _at(self, collective: Collective, size: float, groups: np.ndarray) -> float:
        key = (collective, round(size), groups.shape, groups.tobytes())
        if key not in self._memo:
            self._memo[key] = float(self._time_s(collective, size, groups))
        return self._memo[key]

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        if size_bytes <= 0 or groups.size == 0 or groups.shape[-1] < 2:
            return 0.0
        groups = np.ascontiguousarray(groups, dtype=np.int64)
        low, high = _grid_points(size_bytes)
        t_low = self._at(collective, low, groups)
        t_high = self._at(collective, high, groups)
        weight = (size_bytes - low) / (high - low)
        return t_low + weight * (t_high - t_low)

    @property
    def num_simulations(self) -> int:
        return len(self._memo)


def netsim_available() -> bool:
    """True when ``clusterforge.netsim`` exposes the simulator API."""
    try:
        from clusterforge.netsim import build_fabric_graph, simulate_collective  # noqa: F401
    except ImportError:
        return False
    return True


class NetsimComm(InterpolatingComm):
    """Collective times from ``clusterforge.netsim`` on a design's fabric (built once).

    Uses the simulator's time-only path (``netsim.simulate.collective_time_s``, which skips
    the per-link report of ``simulate_collective``).
    """

    def __init__(self, design: Design, routing: Routing = "adaptive", num_qps: int = 1) -> None:
        from clusterforge.netsim import build_fabric_graph
        from clusterforge.netsim.simulate import collective_time_s

        graph = build_fabric_graph(design)

        def time_s(collective: Collective, size: float, groups: np.ndarray) -> float:
            return collective_time_s(graph, collective, int(size), groups, routing, num_qps)

        super().__init__(time_s)
