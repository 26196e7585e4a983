"""Communication models for the plan search's bounds: free, recorded, and what is known so far.

The search ranks plans by branch and bound. A plan's step time with communication that
costs nothing is a lower bound on its real step time, because the step model never lets
communication make a step shorter (exposed communication is ``max(0, comm - hidden)``).
The same holds for any communication model that answers *no more* than the real one, so
the bound can be tightened for free with what the search has already simulated:
:class:`RecordingComm` keeps every answer of the real model, and its
:attr:`~RecordingComm.known` view answers those exactly and everything else with zero.
A plan whose already-known communication alone makes it slower than the current best
plans is then dropped without simulating anything new for it.
"""

from __future__ import annotations

import numpy as np

from clusterforge.perf.comm import Collective, CommModel

__all__ = ["FreeComm", "KnownComm", "RecordingComm"]

_Key = tuple[str, float, tuple[int, ...], bytes]


def _key(collective: Collective, size_bytes: float, groups: np.ndarray) -> _Key:
    return (collective, float(size_bytes), groups.shape, np.ascontiguousarray(groups).tobytes())


class FreeComm:
    """A fabric on which communication costs nothing: a lower bound on any plan's time."""

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        return 0.0


class RecordingComm:
    """``comm`` with every answer kept (same collective, size and groups: same answer)."""

    def __init__(self, comm: CommModel) -> None:
        self._comm = comm
        self._times: dict[_Key, float] = {}

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        key = _key(collective, size_bytes, groups)
        if key not in self._times:
            self._times[key] = self._comm.collective_time_s(collective, size_bytes, groups)
        return self._times[key]

    def __len__(self) -> int:
        """Distinct questions answered so far."""
        return len(self._times)

    @property
    def known(self) -> KnownComm:
        """A view that answers what was asked before and zero otherwise (a lower bound)."""
        return KnownComm(self._times)


class KnownComm:
    """Times answered before, zero for the rest: a step time computed with it is a lower
    bound, exact when :attr:`unanswered` (the questions it could not answer) is empty."""

    def __init__(self, times: dict[_Key, float]) -> None:
        self._times = times
        self.unanswered: list[tuple[Collective, float, np.ndarray]] = []

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        time_s = self._times.get(_key(collective, size_bytes, groups))
        if time_s is None:
            self.unanswered.append((collective, size_bytes, groups))
            return 0.0
        return time_s
