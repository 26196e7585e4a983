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

Identical patterns are asked once: concurrent groups that each stay inside one scale-up
(NVLink) domain, with the same layout in every domain that holds any, share no link
across domains, so they take as long as one domain's groups (:func:`one_domain`); the
tensor-parallel groups of every plan with the same TP degree are then one question.
"""

from __future__ import annotations

import numpy as np

from clusterforge.perf.comm import Collective, CommModel

__all__ = ["FreeComm", "KnownComm", "RecordingComm", "one_domain"]

_Key = tuple[str, float, tuple[int, ...], bytes]


def one_domain(groups: np.ndarray, domain_gpus: int) -> np.ndarray:
    """The groups of the first domain when every group lies inside one scale-up domain of
    ``domain_gpus`` GPUs and every domain holding groups holds the same number, laid out the
    same way (same ranks within the domain); else ``groups`` unchanged. Such domains run
    side by side on links of their own, so the first one's time is the time of all."""
    if domain_gpus < 2 or groups.ndim != 2 or groups.shape[0] < 2:
        return groups
    domains = groups // domain_gpus
    if not np.array_equal(domains.min(axis=1), domains.max(axis=1)):
        return groups  # a group spans domains: its traffic meets others' in the fabric
    ordered = groups[np.lexsort((groups[:, 0], domains[:, 0]))]
    first = ordered[:, 0] // domain_gpus
    per_domain = int(np.count_nonzero(first == first[0]))
    if ordered.shape[0] % per_domain:
        return groups
    blocks = first.reshape(-1, per_domain)
    local = (ordered % domain_gpus).reshape(-1, per_domain, groups.shape[1])
    same_split = np.array_equal(blocks.min(axis=1), blocks.max(axis=1))
    distinct = np.unique(blocks[:, 0]).size == blocks.shape[0]
    if not (same_split and distinct and bool((local == local[0]).all())):
        return groups
    return ordered[:per_domain]


class FreeComm:
    """A fabric on which communication costs nothing: a lower bound on any plan's time."""

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        return 0.0


class RecordingComm:
    """``comm`` with every answer kept (same collective, size and groups: same answer);
    groups inside scale-up domains of ``domain_gpus`` GPUs are asked as :func:`one_domain`."""

    def __init__(self, comm: CommModel, *, domain_gpus: int = 1) -> None:
        self._comm = comm
        self._domain_gpus = domain_gpus
        self._times: dict[_Key, float] = {}
        self._asked_as: dict[tuple[tuple[int, ...], bytes], tuple[np.ndarray, bytes]] = {}

    def question(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> tuple[_Key, np.ndarray]:
        """The key an answer is kept under, and the groups the real model is asked about."""
        raw = np.ascontiguousarray(groups)
        seen = (raw.shape, raw.tobytes())
        if seen not in self._asked_as:
            asked = one_domain(raw, self._domain_gpus)
            self._asked_as[seen] = (asked, asked.tobytes())
        asked, asked_bytes = self._asked_as[seen]
        return (collective, float(size_bytes), asked.shape, asked_bytes), asked

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        key, asked = self.question(collective, size_bytes, groups)
        if key not in self._times:
            self._times[key] = self._comm.collective_time_s(collective, size_bytes, asked)
        return self._times[key]

    def answered(self, key: _Key) -> float | None:
        """The time kept under ``key``, or None."""
        return self._times.get(key)

    def __len__(self) -> int:
        """Distinct questions answered so far."""
        return len(self._times)

    @property
    def known(self) -> KnownComm:
        """A view that answers what was asked before and zero otherwise (a lower bound)."""
        return KnownComm(self)


class KnownComm:
    """Times answered before, zero for the rest: a step time computed with it is a lower
    bound, exact when :attr:`unanswered` (the questions it could not answer) is empty."""

    def __init__(self, recording: RecordingComm) -> None:
        self._recording = recording
        self.unanswered: list[tuple[Collective, float, np.ndarray]] = []

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        key, _ = self._recording.question(collective, size_bytes, groups)
        time_s = self._recording.answered(key)
        if time_s is None:
            self.unanswered.append((collective, size_bytes, groups))
            return 0.0
        return time_s
