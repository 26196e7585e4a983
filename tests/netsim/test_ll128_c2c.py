"""LL128 across nodes when the GPU reaches its NIC through the CPU (Grace superchips).

NCCL enables LL128 by default only where its graph's GPU-to-NIC path (``typeInter``) is
short enough (``ncclTopoTuneModel``, ``src/graph/tuning.cc``): up to PXN on Hopper and newer
while ``NCCL_LL128_C2C`` is 1 (its default), else up to PXB.  On GB200 and GH200 the NIC sits
on the Grace CPU's PCIe and the GPU reaches the CPU over NVLink-C2C: NCCL 2.27.3 named that
path P2C (``src/graph/topo.h``, below PXN since 2.27.5) and added the variable; before, the
path counted as PHB, past PXN, so LL128 stayed off between NCCL nodes (NVIDIA/nccl v2.26.2-1
and v2.27.3-1)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.tuner import TuningContext, protocols_for
from clusterforge.spec import parse_spec
from tests.netsim.designs import make_design

GIB = 2**30


def _ctx(nodes: int, nic_path: str, ll128_c2c: bool) -> TuningContext:
    return TuningContext(
        collective="all_reduce", num_ranks=8 * nodes, num_nodes=nodes, generation="blackwell",
        intra="nvlink", net_path_latency_s=0.0, nic_path=nic_path, ll128_c2c=ll128_c2c,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize("algorithm", ["ring", "tree", "chain"])
def test_ll128_across_nodes_needs_the_c2c_path_enabled(algorithm):
    assert "ll128" in protocols_for(algorithm, _ctx(2, "pxb", ll128_c2c=False))
    assert "ll128" in protocols_for(algorithm, _ctx(2, "p2c", ll128_c2c=True))
    assert "ll128" not in protocols_for(algorithm, _ctx(2, "p2c", ll128_c2c=False))
    # one NCCL node: no network path in the graph, LL128 stays on
    assert "ll128" in protocols_for(algorithm, _ctx(1, "p2c", ll128_c2c=False))


@pytest.fixture(scope="module")
def two_racks() -> FabricGraph:
    spec = {
        "num_gpus": 144,
        "node": "gb200-nvl72-tray",
        "spare_fraction": 0,
        "facility": {"max_rack_kw": 140},
        "workload": {"tensor_parallel": 8, "global_batch": 144},
    }
    return build_fabric_graph(plan(parse_spec(spec)))


def test_gb200_nics_sit_behind_the_grace_cpu(two_racks):
    assert two_racks.nic_behind_c2c


def test_old_nccl_runs_no_ll128_between_gb200_racks(two_racks):
    """A ring across 2 NVL72 racks at 1 GiB runs LL128 with NCCL_LL128_C2C=1 and falls back
    to Simple without it; inside one rack (one NCCL node) LL128 stays."""
    ranks = np.arange(144)[None, :]
    new = simulate_collective(two_racks, "all_reduce", GIB, ranks, algorithm="ring")
    old = simulate_collective(
        two_racks, "all_reduce", GIB, ranks, algorithm="ring", ll128_c2c=False
    )
    assert new.protocol == "ll128"
    assert old.protocol != "ll128"
    rack = simulate_collective(
        two_racks, "all_reduce", GIB, ranks[:, :72], algorithm="ring", ll128_c2c=False
    )
    assert rack.protocol == "ll128"


def test_nics_on_the_gpus_pcie_switch_keep_ll128():
    """DGX H100: each NIC shares a PCIe switch with its GPU (PXB), so the setting does not
    matter."""
    graph = build_fabric_graph(make_design(num_gpus=16))
    assert not graph.nic_behind_c2c
    ranks = np.arange(16)[None, :]
    a = simulate_collective(
        graph, "all_reduce", 64 * 2**20, ranks, algorithm="ring", protocol="ll128"
    )
    b = simulate_collective(
        graph, "all_reduce", 64 * 2**20, ranks, algorithm="ring", protocol="ll128", ll128_c2c=False
    )
    assert a.time_s == pytest.approx(b.time_s)
