"""An all-to-all across NVLink cliques chunk by chunk through the proxy at NCCL's 1 us per
network operation (``netsim.alltoall.proxy_serial_s``, ``benchmarks/p2p_chunk_proxy_whatif.py``,
docs/validation.md): NCCL 2.28.7's chunk rule, the 2.29.2 doubling on Arm hosts with Blackwell
GPUs, the operation count, and the calibration row it leaves alone."""

from __future__ import annotations

from benchmarks.p2p_chunk_proxy_whatif import (
    net_p2p,
    p2p_chunk_base_bytes,
    row_graph,
    without_proxy_bound,
)

from clusterforge.netsim.alltoall import p2p_net_steps, proxy_serial_s
from validation.nccl_rows import ROWS, ranks, score

KIB = 1024


def _row(row_id: str) -> dict:
    return next(r for r in ROWS if r["id"] == row_id)


def test_chunks_are_a_quarter_step_under_one_step_and_a_half_under_eight():
    """addP2pToPlan (src/enqueue.cc, v2.28.7-1) on a network connection, one channel until a
    part exceeds one step, then two."""
    assert p2p_net_steps(64 * KIB) == 2  # 32 KiB chunks
    assert p2p_net_steps(128 * KIB) == 2  # 64 KiB chunks
    assert p2p_net_steps(256 * KIB) == 4  # 2 parts of 128 KiB in 64 KiB chunks
    assert p2p_net_steps(1024 * KIB) == 8
    assert p2p_net_steps(128 * 1024 * KIB) == 1024


def test_nccl_2_29_2_doubles_the_chunk_on_grace_blackwell_only():
    gb300 = _row("pub-ocigpu-gb300-32n-a2a-16g")
    assert p2p_chunk_base_bytes(gb300) == 128 * KIB  # NCCL 2.28.7
    assert p2p_chunk_base_bytes(gb300, version=(2, 29, 2)) == 256 * KIB
    assert p2p_chunk_base_bytes(_row("h100-6node-alltoall"), version=(2, 29, 2)) == 128 * KIB


def test_two_racks_of_18_and_14_trays_give_72_network_peers_at_most():
    row = _row("pub-ocigpu-gb300-32n-a2a-16g")
    p2p = net_p2p(row)
    assert p2p is not None
    assert (p2p.ranks, p2p.domains, p2p.network_peers) == (128, 2, 72)
    assert p2p.proxy_ops == 2 * 72 * 1024
    graph = row_graph(row)
    seq = ranks(row, graph.gpus_per_node)[None, :]
    assert abs(proxy_serial_s(graph, seq, row["size_bytes"]) - p2p.proxy_ops * 1e-6) < 1e-9
    assert net_p2p(_row("pub-ocigpu-gb300-16n-a2a-16g")) is None  # one clique, one node


def test_the_calibration_all_to_all_is_not_bound_by_the_proxy():
    """6 DGX H100 at 4 GiB: 54,720 operations (55 ms) against a 74 ms call."""
    row = _row("h100-6node-alltoall")
    with without_proxy_bound():
        free = score(row).simulated_gbyte_per_s
    assert score(row).simulated_gbyte_per_s == free


def test_the_bound_leaves_the_two_rack_row_above_twice_the_measured():
    """NCCL's own 1 us per operation covers less than half of the 16 GiB gap."""
    row = _row("pub-ocigpu-gb300-32n-a2a-16g")
    with without_proxy_bound():
        free = score(row).simulated_gbyte_per_s
    bound = score(row).simulated_gbyte_per_s
    assert row["busbw"] * 2 < bound < free
