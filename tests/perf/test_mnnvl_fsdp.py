"""FSDP across two GB200 NVL72 racks: the data-parallel collectives the step model times run
as NCCL runs them on a multi-node NVLink fabric (the rack is NCCL's node, and the ring
crosses between racks through the NICs of its 15 channels), also when the job's GPUs fill
one rack and part of the next."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.comm import NetsimComm
from clusterforge.perf.parallel import shard_groups
from clusterforge.spec import parse_spec

GIB = 2**30
NIC_GBYTE_PER_S = 50.0  # ConnectX-7 400 Gb/s per GPU of a GB200 compute tray


@pytest.fixture(scope="module")
def comm_128() -> NetsimComm:
    """128 GB200 GPUs: 72 in one NVL72 rack, 56 in the next (the trays packed in order)."""
    spec = {
        "num_gpus": 128,
        "node": "gb200-nvl72-tray",
        "facility": {"max_rack_kw": 140},
        "workload": {"tensor_parallel": 2, "global_batch": 64},
    }
    return NetsimComm(plan(parse_spec(spec)))


def test_fsdp_gather_over_two_racks_is_not_held_to_a_trays_nics(comm_128) -> None:
    """TP 2 x DP 64: each shard group holds 36 GPUs of the first rack and 28 of the second.
    NCCL's ring over the two fused racks runs at the rate of an even split (about 600 GB/s
    of bus bandwidth at 2 GiB), not at the ~90 GB/s of a ring of trays whose rack-to-rack
    hop goes through one tray's 4 NICs."""
    layout = JobLayout(tp=2, pp=1, dp=64)
    fsdp = ParallelPlan(layout, global_batch=64, micro_batch=1, seq_length=8192, zero_stage=3)
    shard, _ = shard_groups(fsdp)
    assert shard.shape == (2, 64)
    even = np.stack([np.r_[np.arange(r, 56, 2), np.arange(72 + r, 128, 2)] for r in (0, 1)])

    def busbw(collective, groups: np.ndarray) -> float:
        n = groups.shape[1]
        return 2 * GIB / comm_128.collective_time_s(collective, 2 * GIB, groups) * (n - 1) / n

    for collective in ("all_gather", "reduce_scatter"):
        assert busbw(collective, shard) / 1e9 > 2 * 4 * NIC_GBYTE_PER_S
        assert busbw(collective, shard) == pytest.approx(busbw(collective, even), rel=0.1)
