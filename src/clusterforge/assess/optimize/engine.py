"""Where the evaluations run: this process, a local process pool (concurrent.futures), or a
Dask cluster (dask.distributed, imported only when a scheduler address is given).

Each engine maps a picklable function over picklable arguments and returns the answers in
the order asked, so a search gives the same result on any of them.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Protocol

from clusterforge.errors import AdapterError

__all__ = ["DaskEngine", "Engine", "PoolEngine", "SerialEngine", "default_engine"]


class Engine(Protocol):
    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """``[fn(*args) for args in calls]``, in order."""
        ...


class SerialEngine:
    """Everything in this process."""

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [fn(*args) for args in calls]


class PoolEngine:
    """A pool of local worker processes, started on first use and kept for the search."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        if len(calls) <= 1:
            return [fn(*args) for args in calls]
        if self._pool is None:
            # forkserver: workers start from a clean process, never a fork of a threaded one
            # (Python 3.12 warns on that; 3.14 makes forkserver the default on Linux).
            context = multiprocessing.get_context("forkserver")
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context)
        return list(self._pool.map(fn, *zip(*calls, strict=True)))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class DaskEngine:
    """The workers of a running Dask scheduler (``tcp://host:8786``) or a given client."""

    def __init__(self, address: str | None = None, client: Any = None) -> None:
        self._owned = client is None
        if client is None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise AdapterError(
                    "a Dask scheduler needs dask.distributed: pip install 'dask[distributed]'"
                ) from None
            try:
                client = Client(address, timeout=10)
            except OSError as exc:
                raise AdapterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.client = client

    def map(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        futures = [self.client.submit(fn, *args, pure=False) for args in calls]
        return list(self.client.gather(futures))

    def close(self) -> None:
        """Close the client this engine opened (a given client stays the caller's)."""
        if self._owned:
            self.client.close()


def default_engine(workers: int | None = None) -> SerialEngine | PoolEngine:
    """A process pool of ``workers`` (None: the machine's CPUs); one worker: this process."""
    count = workers or os.cpu_count() or 1
    return SerialEngine() if count <= 1 else PoolEngine(count)
