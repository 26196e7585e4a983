"""The A3 HSDP benchmark (``benchmarks/a3_hsdp_whatif.py``): the GPUDirect-TCPX share is the
published A3 High all-gather over the model's RDMA figure, and the FP32 what-if touches the
``maxtext`` runs only and only ever slows them. Development rows only."""

from __future__ import annotations

import pytest
from benchmarks.a3_hsdp_whatif import (
    A3_FILE,
    a3_allgather_busbw,
    development_runs,
    fp32_reduce,
    signed_error,
)

from clusterforge.constants import read_constants


def test_the_tcpx_share_is_the_published_all_gather_over_the_rdma_model() -> None:
    """``transport_payload_share.gpudirect-tcpx`` = 50.17 / the model's RDMA busbw for the
    same all-gather (its ratio's two terms), and the row then scores about 0 % (its pipeline
    ramp, a smaller share of a slower call, leaves +0.2 %)."""
    published, rdma, tcpx = a3_allgather_busbw()
    constant = read_constants("clusterforge.netsim", "efficiency.toml")
    share = constant["transport_payload_share.gpudirect-tcpx"].value
    assert share == pytest.approx(published / rdma, rel=1e-3)
    assert tcpx / published - 1.0 == pytest.approx(0.0, abs=0.005)


def test_the_fp32_what_if_touches_the_maxtext_runs_only_and_slows_them() -> None:
    runs = development_runs()
    assert all(fp32_reduce(r) is None for r in runs if r.stack.name != "maxtext")
    for run in [r for r in runs if r.file.endswith(A3_FILE)]:
        change = fp32_reduce(run)
        assert change is not None
        assert signed_error(*change) <= signed_error(run) + 1e-9
    assert all(r.subset == "development" for r in runs)
