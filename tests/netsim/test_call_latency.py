"""The per-call cost of a collective across nodes that NCCL's latency table leaves out
(``call_across_nodes_us`` in netsim/data/efficiency.toml, fitted on calibration rows)."""

from __future__ import annotations

import pytest

from clusterforge.constants import read_constants
from clusterforge.netsim.latency import latency_s, nccl_latency_s
from clusterforge.netsim.tuner import TuningContext
from clusterforge.netsim.vocab import Algorithm

_CALL = read_constants("clusterforge.netsim", "efficiency.toml")["call_across_nodes_us"]


def _ctx(num_nodes: int) -> TuningContext:
    return TuningContext("all_reduce", 8 * num_nodes, num_nodes, "hopper", "nvlink", 0.0)


def test_a_call_across_nodes_pays_one_fixed_cost_beyond_nccls_table():
    # NCCL tuning.cc, tree LL: base 6.8 + 2 x ((ppn - 1) x 0.6 + log2(m) x 5.0) µs
    table_2 = 6.8 + 2 * (7 * 0.6 + 1 * 5.0)
    table_4 = 6.8 + 2 * (7 * 0.6 + 2 * 5.0)
    assert _CALL.tag == "fitted" and float(_CALL.value) > 0
    assert nccl_latency_s("tree", "ll", _ctx(2)) == pytest.approx(table_2 * 1e-6)
    assert latency_s("tree", "ll", _ctx(2)) == pytest.approx((table_2 + _CALL.value) * 1e-6)
    # once per call, not per network hop: 4 nodes pay the same
    assert latency_s("tree", "ll", _ctx(4)) == pytest.approx((table_4 + _CALL.value) * 1e-6)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "chain", "nvls_tree", "direct", "pat"])
def test_every_algorithm_across_nodes_pays_it_and_one_node_does_not(algorithm: Algorithm):
    across = latency_s(algorithm, "simple", _ctx(2)) - nccl_latency_s(algorithm, "simple", _ctx(2))
    assert across == pytest.approx(_CALL.value * 1e-6)
    one = latency_s(algorithm, "simple", _ctx(1))
    assert one == pytest.approx(nccl_latency_s(algorithm, "simple", _ctx(1)))
