"""GB200 NVL72: one 72-GPU NVLink domain over 18 trays (NVIDIA GTC25 S72583 slide: GB200
NVL72, 32 GPUs, NVLink 680 / NVLink SHARP 850 GB/s busbw)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.spec import parse_spec

LARGE = 16 * 2**30


@pytest.fixture(scope="module")
def nvl72() -> FabricGraph:
    spec = parse_spec(
        {
            "num_gpus": 576,
            "node": "gb200-nvl72-tray",
            "facility": {"max_rack_kw": 140, "cooling_available": ["direct-to-chip"]},
            "workload": {"global_batch": 1152},
        }
    )
    return build_fabric_graph(plan(spec))


def test_the_nvlink_domain_spans_18_trays(nvl72):
    assert nvl72.gpus_per_node == 4 and nvl72.domain_gpus == 72 and nvl72.nvls


@pytest.mark.parametrize(("algorithm", "published"), [("ring", 680), ("nvls", 850)])
def test_32_gpus_across_8_trays_reach_the_published_busbw(nvl72, algorithm, published):
    group = np.arange(32)[None, :]  # 8 trays of one rack
    res = simulate_collective(nvl72, "all_reduce", LARGE, group, algorithm=algorithm)
    assert res.busbw_gbyte_per_s == pytest.approx(published, rel=0.08)
    assert res.limiting_link is not None and res.limiting_link.link_class == "nvlink"
    for cls in ("nic-leaf", "leaf-nic"):  # nothing leaves the NVLink domain
        assert res.link_class_utilization[cls].max_utilization == 0


def test_auto_uses_nvls_inside_the_domain_and_the_nics_across_domains(nvl72):
    """Across racks NCCL's node is the rack (MNNVL): NVLS-Tree, whose rack-to-rack hop runs
    over 32 heads' NICs per rack, so 2 racks keep close to one rack's bus bandwidth
    (tests/netsim/test_mnnvl.py; measured 793 vs 835 GB/s at 8 GiB, coreweave/nccl-tests)."""
    inside = simulate_collective(nvl72, "all_reduce", LARGE, np.arange(72)[None, :])
    assert inside.algorithm == "nvls"
    assert inside.link_class_utilization["nic-leaf"].max_utilization == 0
    across = simulate_collective(nvl72, "all_reduce", LARGE, np.arange(144)[None, :])
    assert across.algorithm == "nvls_tree"
    assert across.busbw_gbyte_per_s > 0.9 * inside.busbw_gbyte_per_s


def test_nvls_beats_ring_inside_the_domain(nvl72):
    group = np.arange(32)[None, :]
    ring = simulate_collective(nvl72, "all_reduce", LARGE, group, algorithm="ring")
    nvls = simulate_collective(nvl72, "all_reduce", LARGE, group, algorithm="nvls")
    assert nvls.busbw_gbyte_per_s > 1.15 * ring.busbw_gbyte_per_s


@pytest.mark.parametrize("num_gpus", [8, 16, 32, 64, 72])
def test_all_to_all_inside_the_domain_keeps_its_rate_at_any_rank_count(nvl72, num_gpus):
    """A large all-to-all inside the rack runs at the per-GPU NVLink port's p2p share
    whatever the rank count: NCCL gives each channel the same work at 8 and 64 ranks
    (``scheduleP2pTasksToPlan`` / ``addP2pToPlan`` in NVIDIA/nccl ``src/enqueue.cc``: fewer
    channels per peer as peers grow, the same p2p channels in all) and the NVSwitch trays
    are non-blocking; docs/validation.md, "All-to-all inside an NVLink domain"."""
    group = np.arange(num_gpus)[None, :]
    res = simulate_collective(nvl72, "all_to_all", LARGE, group)
    eight = simulate_collective(nvl72, "all_to_all", LARGE, np.arange(8)[None, :])
    assert res.algorithm == "direct"
    assert res.busbw_gbyte_per_s == pytest.approx(eight.busbw_gbyte_per_s, rel=0.01)
    assert res.limiting_link is not None and res.limiting_link.link_class == "nvlink"
    for cls in ("nic-leaf", "leaf-nic"):
        assert res.link_class_utilization[cls].max_utilization == 0
