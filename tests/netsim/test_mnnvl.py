"""All-reduce across GB200 NVL72 racks (multi-node NVLink, MNNVL).

NCCL fuses the topologies of an NVLink domain's trays into one node (``ncclTopoGetSystem``,
``src/graph/topo.cc``, NVIDIA/nccl v2.26.2-1), so across racks it runs NVLS-Tree: NVLS over
the rack's NVLink switches and double binary trees between racks over the NICs of the NVLS
heads, min(NCCL_MAX_NVLS_ARITY = 32, the rack's NICs) GPUs with a NIC of their own, each
carrying 1/H of the data.  NVLS pipelines in loops of nvlsChannels x nHeads chunks
(``calcCollChunking``, ``src/enqueue.cc``), so its ramp in bytes grows with that loop."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.netsim.collectives import build_phases, ring_order
from clusterforge.netsim.model import (
    RAMP_BYTES,
    RAMP_EXPONENT,
    RAMP_NVLS_CONCURRENT_OPS,
    RAMP_SECONDS,
    nvls_pipeline_efficiency,
    pipeline_efficiency,
)
from clusterforge.netsim.trees import NVLS_MAX_HEADS, nvls_heads
from clusterforge.netsim.tuner import nvls_chunk_bytes
from clusterforge.spec import parse_spec

GIB = 2**30
MIB = 2**20


def _racks(racks: int, nics_per_node: int | None = None) -> FabricGraph:
    data: dict = {
        "num_gpus": 72 * racks,
        "node": "gb200-nvl72-tray",
        "spare_fraction": 0,
        "facility": {"max_rack_kw": 140},
        "workload": {"tensor_parallel": 8, "global_batch": 72 * racks},
    }
    if nics_per_node is not None:
        data["network"] = {"nics_per_node": nics_per_node}
    return build_fabric_graph(plan(parse_spec(data)))


@pytest.fixture(scope="module")
def two_racks() -> FabricGraph:
    return _racks(2)


def _inter_nic_ports(graph: FabricGraph, n: int) -> set[tuple[int, int]]:
    seq = ring_order(graph, np.arange(n)[None, :])
    inter = build_phases(graph, "all_reduce", "nvls_tree", seq, pxn=True)[1]
    return set(zip(inter.net.src_node.tolist(), inter.net.src_nic.tolist(), strict=True))


def test_two_racks_reduce_across_racks_over_32_heads_each(two_racks):
    """NVLS-Tree between the two racks: NCCL's 32 NVLS heads per rack, each on its own
    NIC, carry the rack-to-rack hop (not one tray's 4 NICs)."""
    assert NVLS_MAX_HEADS == 32
    ports = _inter_nic_ports(two_racks, 144)
    assert len(ports) == 2 * 32
    assert len({node for node, _ in ports}) > 2 * 4  # spread over the racks' trays


def test_the_racks_nics_bound_the_heads():
    """One NIC per tray: 18 NICs per rack, so 18 heads (NCCL's heads are GPUs with a NIC)."""
    graph = _racks(2, nics_per_node=1)
    assert nvls_heads(graph, np.arange(72)).size == 18
    assert len(_inter_nic_ports(graph, 144)) == 2 * 18


def test_two_racks_run_close_to_one_rack(two_racks):
    """Each head sends and receives S/32 across racks (32 x 400 Gb/s, ~1,500 GB/s of
    algorithm bandwidth) while NVLS moves S per GPU at ~460 GB/s: the NVLink stage paces
    both, so 2 racks reach one rack's bus bandwidth (measured 793 vs 835 GB/s at 8 GiB,
    coreweave/nccl-tests README, NCCL 2.26.2)."""
    size = 8 * GIB
    one = simulate_collective(two_racks, "all_reduce", size, np.arange(72)[None, :])
    two = simulate_collective(two_racks, "all_reduce", size, np.arange(144)[None, :])
    assert one.algorithm == "nvls"
    assert two.algorithm == "nvls_tree"
    assert two.busbw_gbyte_per_s == pytest.approx(one.busbw_gbyte_per_s, rel=0.05)
    assert two.limiting_link is not None and two.limiting_link.link_class == "nvlink"


def test_nvls_tree_counts_racks_as_nccl_nodes(two_racks):
    """The tree's latency counts log2 of the racks (NCCL's nNodes under MNNVL), not of the
    36 trays: 2 racks pay NVLS's 25 us plus one round of network steps."""
    two = simulate_collective(two_racks, "all_reduce", 8 * GIB, np.arange(144)[None, :])
    assert two.latency_s < 100e-6


def test_nvls_ramp_scales_with_the_loop():
    """A loop of 32 channels x 32 heads (one NVL72 rack) is 8 loops of the calibration's
    16 x 8: the same share of steady bandwidth at 8x the bytes, where the fill outlasts
    the time ramp; at the calibration's loop and rate both are the fitted ramp."""
    rack = 32 * 32
    assert RAMP_NVLS_CONCURRENT_OPS == 16 * 8
    slow = 1e3  # steady seconds: the time ramp far below the loop's fill
    for size in (64 * MIB, 512 * MIB, 2 * GIB):
        assert nvls_pipeline_efficiency(slow, size, rack) == pytest.approx(
            nvls_pipeline_efficiency(slow, size / 8, RAMP_NVLS_CONCURRENT_OPS)
        )
        assert nvls_pipeline_efficiency(slow, size, rack) < nvls_pipeline_efficiency(
            slow, size, RAMP_NVLS_CONCURRENT_OPS
        )
    size = 16 * MIB
    calibrated = 1 / (1 + (RAMP_BYTES / size) ** RAMP_EXPONENT)
    steady_s = size * RAMP_SECONDS / RAMP_BYTES  # the calibration's rate
    got = nvls_pipeline_efficiency(steady_s, size, RAMP_NVLS_CONCURRENT_OPS)
    assert got == pytest.approx(calibrated)
    assert pipeline_efficiency(steady_s) == pytest.approx(calibrated)


def test_one_rack_nvls_is_deep_in_its_ramp_at_512_mib(two_racks):
    """72 GPUs at 512 MiB run 8 NVLS loops: below 82 % of the 8 GiB bus bandwidth
    (measured 586 vs 835 GB/s, 70 %)."""
    rack = np.arange(72)[None, :]
    mid = simulate_collective(two_racks, "all_reduce", 512 * MIB, rack)
    large = simulate_collective(two_racks, "all_reduce", 8 * GIB, rack)
    assert mid.busbw_gbyte_per_s < 0.82 * large.busbw_gbyte_per_s


def test_nccl_chunk_rules_for_nvls_and_nvls_tree():
    """calcCollChunking (src/enqueue.cc, NCCL 2.26.2) on a rack's 32 x 32 loop: NVLS keeps
    128 KiB only from 64 loops' worth (8 GiB) and drops to 64 KiB below; NVLS-Tree keeps
    128 KiB down to 4 loops' worth on 2 racks and caps at 64 KiB from 4 racks."""
    ops = 32 * 32
    assert nvls_chunk_bytes("nvls", 8 * GIB, ops, 1) == 128 * 1024
    assert nvls_chunk_bytes("nvls", 2 * GIB, ops, 1) == 64 * 1024
    assert nvls_chunk_bytes("nvls", 512 * MIB, ops, 1) == 64 * 1024
    assert nvls_chunk_bytes("nvls", 64 * MIB, ops, 1) == 32 * 1024
    assert nvls_chunk_bytes("nvls", 32 * MIB, ops, 1) == 16 * 1024
    assert nvls_chunk_bytes("nvls_tree", 512 * MIB, ops, 2) == 128 * 1024
    assert nvls_chunk_bytes("nvls_tree", 256 * MIB, ops, 2) == 64 * 1024
    assert nvls_chunk_bytes("nvls_tree", 8 * GIB, ops, 20) == 64 * 1024
    assert nvls_chunk_bytes("nvls_tree", 32 * MIB, ops, 20) == 32 * 1024


def test_two_racks_ramp_deeper_than_one_at_512_mib(two_racks):
    """NVLS-Tree's 128 KiB chunks make its loop twice NVLS's 64 KiB one at 512 MiB, so 2
    racks stay further below their steady rate (measured 494 vs 586 GB/s)."""
    size = 512 * MIB
    one = simulate_collective(two_racks, "all_reduce", size, np.arange(72)[None, :])
    two = simulate_collective(two_racks, "all_reduce", size, np.arange(144)[None, :])
    assert two.busbw_gbyte_per_s < 0.92 * one.busbw_gbyte_per_s
