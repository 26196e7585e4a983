"""What-if: NCCL's network proxy as a serial server of a tree's network operations
(``benchmarks/proxy_serial_whatif.py``, docs/validation.md): NCCL's chunk rule, the operation count,
and the bare-metal one-GPU pair that refutes it at NCCL's 1 us per operation."""

from __future__ import annotations

import pytest
from benchmarks.proxy_serial_whatif import (
    proxy_operations,
    proxy_serial,
    score_as_chosen,
    tree_chunk_bytes,
)

from clusterforge.netsim.collectives import ring_order
from clusterforge.netsim.context import tuning_context
from clusterforge.netsim.tuner import TuningContext
from validation.nccl_rows import ROWS, _graph, ranks, score


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def _ctx(row_id: str) -> TuningContext:
    row = _row(row_id)
    graph = _graph(row["node"], row["num_nodes"], row.get("nics_per_node"))
    seq = ring_order(graph, ranks(row, graph.gpus_per_node)[None, :])
    return tuning_context(graph, "all_reduce", seq, "tree")


def test_ll128_tree_chunk_halves_to_18000_bytes_at_4_mib_from_4_nodes():
    """calcCollChunking (src/enqueue.cc): 1 + log2(nodes) + ppn / 10 steps decide the
    halvings; 4 MiB on 16 tree channels keeps 36,000 B on 2 nodes, 18,000 B on 4."""
    assert tree_chunk_bytes(_ctx("pub-n309-g-h100-2n-ar-4m"), "ll128", 4 * 2**20) == 36000
    assert tree_chunk_bytes(_ctx("pub-vp-h100-4n-ar-4m"), "ll128", 4 * 2**20) == 18000


def test_an_interior_node_serves_twice_the_operations_of_a_two_node_tree():
    two = proxy_operations(_ctx("pub-n309-g-h100-2n-ar-1m"), "ll128", 2**20)
    four = proxy_operations(_ctx("pub-vp-h100-4n-ar-1m"), "ll128", 2**20)
    assert four == pytest.approx(2 * two)
    # 3.6 chunks of 18,000 B per channel: 3 beyond the first, 2 channels per GPU
    assert two == pytest.approx(3 * 2 * 2)


def test_the_what_if_brings_8_node_4_mib_within_5_percent_but_breaks_the_one_gpu_pair():
    """The 8-node H100 call at 4 MiB (+48 % before) fits; the bare-metal pair of one GPU per
    node (nccl-tests #232, 2 MiB, -8 % before) turns more than 40 % too slow: its proxy
    served 232 operations in 113 us, under half NCCL's 1 us each."""
    eight, pair = (
        score(_row("pub-n309-g-h100-8n-ar-4m")),
        score(_row("h100-2node-1gpu-roce-i232-2m")),
    )
    with proxy_serial():
        assert abs(score_as_chosen(eight).error) < 0.05
        assert score_as_chosen(pair).error < -0.40
    assert eight.error > 0.40 and abs(pair.error) < 0.15


def test_the_what_if_leaves_calibration_rows_unchanged():
    calibration = [r for r in ROWS if r["set"] == "calibration"]
    before = [score(r).error for r in calibration]
    with proxy_serial():
        after = [score(r).error for r in calibration]
    assert after == pytest.approx(before)
