"""All-reduce of 1-8 MiB across nodes of 8 H100: the candidates NCCL's table weighs there.

NCCL times tree/LL128 and NVLS-Tree/Simple as latency + size / bandwidth
(``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime`` in ``src/graph/tuning.cc``).  The tree's
figures are the same from NVIDIA/nccl v2.19.3-1 to commit 5067397; NVLS-Tree's network hop
was 14 us until v2.28.9-1 and is 20.9 us since (the model's, ``data/nccl.toml``).  With
8 channels at 48 GB/s (``sm90SpeedArrayInter``), 16 channels after duplication:

* 4 nodes, 4 MiB: tree/LL128 65.5 us + 4 MiB / (8 x 29 GB/s x 0.5 x 0.8) = 110.7 us,
  NVLS-Tree 108.6 us + 4 MiB / (8 x 45.5 x 5/6) = 122.4 us: the tree (in v2.24-v2.26,
  NVLS-Tree's 81 us + 4 MiB / 160 GB/s = 107.2 us would win);
* 2 nodes, 4 MiB: tree/LL128 48.5 + 35.7 = 84.2 us, NVLS-Tree 66.8 + 10.9 = 77.7 us:
  NVLS-Tree, where the model's own NVLS-Tree time (its NVLS ramp) is about twice NCCL's, so
  the model runs the tree (docs/validation.md, "NCCL's algorithm at 1-32 MiB across H100
  nodes, by release").
"""

from __future__ import annotations

import pytest

from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
from clusterforge.netsim.latency import nccl_latency_s
from clusterforge.netsim.tuner import TuningContext
from tests.netsim.designs import make_design

MIB = 2**20


def _ctx(num_nodes: int) -> TuningContext:
    return TuningContext(
        collective="all_reduce",
        num_ranks=8 * num_nodes,
        num_nodes=num_nodes,
        generation="hopper",
        intra="nvlink",
        net_path_latency_s=0.0,
        num_channels=8,
    )


@pytest.mark.parametrize(("nodes", "tree_us", "nvls_tree_us"), [(2, 48.5, 66.8), (4, 65.5, 108.6)])
def test_nccl_latencies_of_the_two_candidates(nodes, tree_us, nvls_tree_us):
    """Tree LL128: 14 + 2 (7 x 1.25 + log2(m) x 8.5) us; NVLS-Tree: 25 + 2 log2(m) x 20.9."""
    ctx = _ctx(nodes)
    assert nccl_latency_s("tree", "ll128", ctx) == pytest.approx(tree_us * 1e-6)
    assert nccl_latency_s("nvls_tree", "simple", ctx) == pytest.approx(nvls_tree_us * 1e-6)


def _all_reduce(num_nodes: int, size_bytes: float):
    gpus = 8 * num_nodes
    design = make_design(num_gpus=gpus, workload={"tensor_parallel": 8, "global_batch": gpus})
    graph, groups = build_fabric_graph(design), groups_for(design, "all")
    return graph, groups, simulate_collective(graph, "all_reduce", size_bytes, groups)


def test_four_nodes_at_4_mib_run_the_tree_as_nccls_table():
    res = _all_reduce(4, 4 * MIB)[2]
    assert (res.algorithm, res.protocol) == ("tree", "ll128")


@pytest.mark.xfail(
    strict=True,
    reason="NCCL's table runs NVLS-Tree for 4 MiB on 2 H100 nodes (77.7 against 84.2 us); the "
    "model's NVLS-Tree at 1-32 MiB across nodes carries its NVLS ramp fitted inside one node, "
    "about twice NCCL's estimate and 18-52 % slower than the measured rows, so it runs the "
    "tree (N309_LL128_MID in tests/validation/test_nccl_validation.py)",
)
def test_two_nodes_at_4_mib_run_nvls_tree_as_nccls_table():
    res = _all_reduce(2, 4 * MIB)[2]
    assert res.algorithm == "nvls_tree"
