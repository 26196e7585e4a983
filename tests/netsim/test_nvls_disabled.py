"""All-reduce with NVLink SHARP switched off (``NCCL_NVLS_ENABLE=0``).

With the variable at 0, ``ncclNvlsInit`` (``src/transport/nvls.cc``) leaves ``nvlsSupport``
at 0, so ``updateCollCostTable`` (``src/enqueue.cc``) skips NVLS and NVLS-Tree and NCCL's
tuner weighs the other algorithms only (NVIDIA/nccl v2.26.2-1).  The 20-rack GB200 NVL72
table of coreweave/nccl-tests was measured that way (its jobs set the variable since
commit a736384, 2025-04-14; the table came with commit bee97e7, 2025-05-05)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.errors import SimulationError
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.spec import parse_spec

GIB = 2**30


def _racks(racks: int) -> FabricGraph:
    return build_fabric_graph(
        plan(
            parse_spec(
                {
                    "num_gpus": 72 * racks,
                    "node": "gb200-nvl72-tray",
                    "spare_fraction": 0,
                    "facility": {"max_rack_kw": 140},
                    "workload": {"tensor_parallel": 8, "global_batch": 72 * racks},
                }
            )
        )
    )


@pytest.fixture(scope="module")
def two_racks() -> FabricGraph:
    return _racks(2)


def test_nvls_off_leaves_ring_and_tree_across_racks(two_racks):
    ranks = np.arange(144)[None, :]
    on = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks)
    off = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks, nvls=False)
    assert on.algorithm == "nvls_tree"
    assert off.algorithm in ("ring", "tree")


def test_nvls_off_inside_one_rack_runs_ring(two_racks):
    ranks = np.arange(72)[None, :]
    on = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks)
    off = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks, nvls=False)
    assert on.algorithm == "nvls"
    assert off.algorithm == "ring"


@pytest.mark.parametrize("algorithm", ["nvls", "nvls_tree"])
def test_forcing_nvls_while_it_is_off_is_refused(two_racks, algorithm):
    ranks = np.arange(144)[None, :]
    with pytest.raises(SimulationError, match="NCCL_NVLS_ENABLE"):
        simulate_collective(two_racks, "all_reduce", GIB, ranks, algorithm=algorithm, nvls=False)


def test_ring_search_channels_of_an_nvl72_rack():
    """NCCL's ring (and tree) graph on a fused NVL72 rack: each channel takes 48 GB/s (the
    first search speed at or below a 400 Gb/s NIC's 50 GB/s) of every GPU's 18 x 40 GB/s
    NVLink (SM100_NVLINK_BW), so 15 channels fit; at 48 GB/s on Blackwell with more than 4
    channels ncclTopoDupChannels does not double them."""
    from clusterforge.netsim.tuner import mnnvl_channels

    assert mnnvl_channels("blackwell", nic_gbyte_per_s=50.0, nics=72) == 15
    assert mnnvl_channels("blackwell", nic_gbyte_per_s=50.0, nics=8) == 8
    assert mnnvl_channels("hopper", nic_gbyte_per_s=50.0, nics=72) == 7


@pytest.fixture(scope="module")
def four_racks() -> FabricGraph:
    return _racks(4)


def test_tree_across_racks_leaves_each_rack_through_its_channels_nics(four_racks):
    """Under MNNVL NCCL's node is the rack (72 GPUs chained over NVLink inside it,
    ``ncclTopoPreset``), and the trees between racks leave each rack through the NICs of
    its 15 channels, not through one tray's 4."""
    from clusterforge.netsim.collectives import build_phases, ring_order

    seq = ring_order(four_racks, np.arange(288)[None, :])
    (phase,) = build_phases(four_racks, "all_reduce", "tree", seq, pxn=True)
    ports = set(zip(phase.net.src_node.tolist(), phase.net.src_nic.tolist(), strict=True))
    rack_of = {node // 18 for node, _ in ports}
    assert rack_of == {0, 1, 2, 3}
    per_rack = [sum(1 for node, _ in ports if node // 18 == r) for r in range(4)]
    assert per_rack == [15, 15, 15, 15]


def test_tree_across_20_racks_runs_at_its_channels_ceiling():
    """1,440 ranks on 20 racks with NVLS off (nNodes 20, 72 ranks per node): the tree's 15
    channels cap its bus bandwidth at 15 x the per-channel tree ceiling (24 GB/s,
    Blackwell, 3+ nodes), above the 8 channels x 24 of a tree between 4-GPU trays."""
    graph = _racks(20)
    res = simulate_collective(
        graph, "all_reduce", 8 * GIB, np.arange(1440)[None, :], algorithm="tree", nvls=False
    )
    assert 250.0 < res.busbw_gbyte_per_s <= 15 * 24.0


def test_20_racks_pick_the_tree_at_2_gib_and_the_ring_at_8_gib():
    """NCCL 2.26.2 on 20 racks, NVLS off, no LL128 between racks (the GPUs reach their NICs
    through Grace): the ring's 2,878 Simple steps cost ~14 ms of NCCL's latency, more than
    the tree loses in bandwidth at 2 GiB; at 8 GiB the ring's 15 channels win."""
    graph = _racks(20)
    ranks = np.arange(1440)[None, :]

    def run(size: float):
        return simulate_collective(graph, "all_reduce", size, ranks, nvls=False, ll128_c2c=False)

    assert run(2 * GIB).algorithm == "tree"
    assert run(8 * GIB).algorithm == "ring"


def test_tree_fill_is_its_first_chunk_through_every_hop():
    """NCCL's tree cuts Simple all-reduce into chunks of NCCL_BUFFSIZE / NCCL_STEPS =
    512 KiB (``calcCollChunking``, chunkSteps 1), and the first one crosses the chain up
    and down (2 x 71 NVLink hops on a 72-GPU rack) and the tree between racks up and down
    (2 x log2i(20) = 8 hops, as NCCL's latency counts them) before the pipeline runs full:
    each NVLink hop at the GPU's NVLink payload rate shared by the 2 x 15 channels (both
    trees), each network hop at its NIC's rate shared by the two channels of that NIC; a
    hop costs the longer of that and NCCL's hop latency (4 us NVLink, 14 us network, for
    Simple), which the tree's latency already counts."""
    from clusterforge.netsim.latency import tree_fill_s
    from clusterforge.netsim.tuner import TuningContext

    ctx = TuningContext(
        collective="all_reduce",
        num_ranks=1440,
        num_nodes=20,
        generation="blackwell",
        intra="nvlink",
        net_path_latency_s=0.0,
        node_net_gbyte_per_s=15 * 46.0,
        num_channels=15,
        intra_gbyte_per_s=690.0,
    )

    def fill(chunk: float, intra_us: float, inter_us: float) -> float:
        nvl = chunk / (690.0 / 30) / 1e3
        net = chunk / (15 * 46.0 / 30) / 1e3
        return (2 * 71 * max(0.0, nvl - intra_us) + 8 * max(0.0, net - inter_us)) * 1e-6

    assert tree_fill_s(ctx, "simple", 8 * GIB) == pytest.approx(fill(524288, 4.0, 14.0))
    # a channel's share of a small message is its whole chunk
    assert tree_fill_s(ctx, "simple", 30 * 2**17) == pytest.approx(fill(2**17, 4.0, 14.0))
    # LL128: a 614,400-byte step keeps 15/16 (576,000 B), halved while a channel's share
    # is below 64 x (1 + 4 + 7.2) / 72 chunks: 512 MiB on 30 channels holds 31 of them
    assert tree_fill_s(ctx, "ll128", 512 * 2**20) == pytest.approx(fill(576000, 1.25, 8.5))
    assert tree_fill_s(ctx, "ll128", 64 * 2**20) == pytest.approx(fill(144000, 1.25, 8.5))
    one_node = TuningContext(**{**ctx.__dict__, "num_nodes": 1, "num_channels": 0})
    assert tree_fill_s(one_node, "simple", 8 * GIB) == 0.0


def test_a_20_rack_tree_call_pays_its_fill():
    """At 512 MiB the fill (~3.5 ms) is longer than the bandwidth time (~3 ms)."""
    graph = _racks(20)
    small = simulate_collective(
        graph, "all_reduce", 512 * 2**20, np.arange(1440)[None, :], nvls=False
    )
    assert small.algorithm == "tree"
    assert small.busbw_gbyte_per_s < 200.0


def test_ring_across_racks_leaves_each_rack_through_its_channels_nics(four_racks):
    """Under MNNVL NCCL's ring graph is built on the fused rack too: each of its 15 channels
    runs through the rack's 72 GPUs over NVLink and crosses to the next rack through its own
    NIC (``ncclTopoCompute``, ``src/graph/search.cc``), not through one tray's 4."""
    from clusterforge.netsim.collectives import build_phases, ring_order

    seq = ring_order(four_racks, np.arange(288)[None, :])
    for collective in ("all_reduce", "all_gather"):
        (phase,) = build_phases(four_racks, collective, "ring", seq, pxn=True)
        ports = set(zip(phase.net.src_node.tolist(), phase.net.src_nic.tolist(), strict=True))
        per_rack = [sum(1 for node, _ in ports if node // 18 == r) for r in range(4)]
        assert per_rack == [15, 15, 15, 15]
        assert len({node for node, _ in ports}) > 4 * 4  # spread over the racks' trays


def test_ring_across_two_racks_runs_at_its_channels_nics(two_racks):
    """15 channels of 400 Gb/s NICs per rack boundary: the ring between 2 racks is no longer
    held to one tray's 4 NICs (~190 GB/s of bus bandwidth) but runs near NVLink's ring
    rate inside one rack, as NCCL's fused rack does."""
    ranks = np.arange(144)[None, :]
    res = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks, algorithm="ring")
    one = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks[:, :72], algorithm="ring")
    assert res.busbw_gbyte_per_s > 2 * 4 * 50.0
    assert res.busbw_gbyte_per_s == pytest.approx(one.busbw_gbyte_per_s, rel=0.15)


def test_ring_latency_counts_racks_as_nccl_nodes(two_racks):
    """NCCL's ring latency under MNNVL: one rack is one node (every step an NVLink step,
    no network overhead, no inter-node plateau factor); across racks only the rack
    boundaries are network steps."""
    from clusterforge.netsim.latency import latency_s
    from clusterforge.netsim.tuner import TuningContext

    def ctx(n: int, nodes: int) -> TuningContext:
        return TuningContext(
            collective="all_reduce", num_ranks=n, num_nodes=nodes, generation="blackwell",
            intra="nvlink", net_path_latency_s=0.0,
        )  # fmt: skip

    one = simulate_collective(
        two_racks, "all_reduce", 8 * GIB, np.arange(72)[None, :], algorithm="ring"
    )
    assert one.latency_s == pytest.approx(latency_s("ring", "simple", ctx(72, 1)))
    two = simulate_collective(
        two_racks, "all_reduce", 8 * GIB, np.arange(144)[None, :], algorithm="ring"
    )
    assert two.latency_s < latency_s("ring", "simple", ctx(144, 36))
    assert two.latency_s > latency_s("ring", "simple", ctx(144, 2))


def test_a_group_with_part_of_a_rack_has_the_channels_of_its_own_nics(two_racks):
    """NCCL searches the ring on the GPUs of the communicator: 4 GPUs of one tray per rack
    reach 4 NICs, so 4 channels at 48 GB/s, doubled to 8 (``ncclTopoDupChannels``), not the
    whole rack's 15."""
    from clusterforge.netsim.trees import rack_channels

    assert rack_channels(two_racks) == 15
    assert rack_channels(two_racks, np.arange(72)) == 15
    assert rack_channels(two_racks, np.arange(4)) == 8


def test_ring_over_racks_with_unequal_gpu_counts_crosses_through_the_channels_nics(two_racks):
    """A group with 36 GPUs in one rack and 28 in the other (data parallelism over 128 GPUs
    packed 72 + 56 with TP 2) is still NCCL's ring of two fused racks: it crosses between
    them through each channel's own NIC, at the ring rate of an even split, not through a
    tray's 4 NICs as a ring of trays would (~90 GB/s of bus bandwidth)."""
    from clusterforge.netsim.collectives import build_phases, ring_order

    uneven = np.r_[np.arange(0, 72, 2), np.arange(72, 128, 2)][None, :]
    even = np.r_[np.arange(0, 56, 2), np.arange(72, 128, 2)][None, :]
    for collective in ("all_gather", "reduce_scatter"):
        res = simulate_collective(two_racks, collective, 2 * GIB, uneven, algorithm="ring")
        ref = simulate_collective(two_racks, collective, 2 * GIB, even, algorithm="ring")
        (phase,) = build_phases(
            two_racks, collective, "ring", ring_order(two_racks, uneven), pxn=True
        )
        ports = set(zip(phase.net.src_node.tolist(), phase.net.src_nic.tolist(), strict=True))
        assert [sum(1 for node, _ in ports if node // 18 == r) for r in range(2)] == [15, 15]
        assert res.busbw_gbyte_per_s > 2 * 4 * 50.0
        assert res.busbw_gbyte_per_s == pytest.approx(ref.busbw_gbyte_per_s, rel=0.1)


def test_ring_over_racks_with_one_gpu_in_a_rack_uses_that_gpus_nic(two_racks):
    """A group with one GPU in the first rack and a tray's 4 in the second crosses between
    the racks on as many channels as the single GPU's NIC carries (each channel's head has
    a NIC of its own), and runs."""
    group = np.array([[0, 72, 73, 74, 75]])
    res = simulate_collective(two_racks, "all_gather", 256 * 2**20, group, algorithm="ring")
    assert 0 < res.busbw_gbyte_per_s <= 2 * 50.0
