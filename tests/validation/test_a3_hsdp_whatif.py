"""The A3 HSDP what-ifs (``benchmarks/a3_hsdp_whatif.py``): what each touches, and that it
only ever slows the runs it touches. Development rows only."""

from __future__ import annotations

import numpy as np
from benchmarks.a3_hsdp_whatif import (
    A3_FILE,
    SlowerAcrossVms,
    a3_allgather_ratio,
    development_runs,
    fp32_reduce,
    signed_error,
    tcpx_rate,
)


class _Flat:
    def collective_time_s(self, collective: str, size_bytes: float, groups: np.ndarray) -> float:
        return 1.0


def test_only_collectives_that_span_vms_are_slowed() -> None:
    slow = SlowerAcrossVms(_Flat(), 0.5)  # type: ignore[arg-type]
    inside = np.arange(8).reshape(1, 8)
    across = np.array([[0, 8], [1, 9]])
    assert slow.collective_time_s("all_gather", 1e6, inside) == 1.0
    assert slow.collective_time_s("all_reduce", 1e6, across) == 2.0


def test_the_model_is_above_the_published_a3_high_all_gather() -> None:
    ratio = a3_allgather_ratio(development_runs())
    assert 0.4 < ratio < 0.7


def test_each_what_if_touches_its_runs_only_and_slows_them() -> None:
    runs = development_runs()
    a3 = [r for r in runs if r.file.endswith(A3_FILE)]
    slow = tcpx_rate(0.5)
    assert all(slow(r) is None for r in runs if not r.file.endswith(A3_FILE))
    assert all(fp32_reduce(r) is None for r in runs if r.stack.name != "maxtext")
    for run in a3:
        base = signed_error(run)
        for change in (fp32_reduce(run), slow(run)):
            assert change is not None
            assert signed_error(*change) <= base + 1e-9
    assert all(r.subset == "development" for r in runs)
