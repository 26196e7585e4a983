"""The slowdown an overlapped collective inflicts on the compute beside it
(``overlap_interference``, :func:`~clusterforge.perf.compute.overlapped_s`)."""

from __future__ import annotations

import math

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.netsim.tuner import network_channels, nvls_channels
from clusterforge.perf.compute import overlapped_s
from clusterforge.perf.roofline import load_constants

# Largest published slowdown of compute overlapped with NCCL collectives on A100 / H100:
# 40.0 % (arXiv 2507.03114, 4 GPUs, GPT and LLaMA layers; pytorch/pytorch PR 179937 reports
# 30-40 % for matmuls beside NCCL on 8 H100 over NVLink).
PUBLISHED_MAX_SLOWDOWN = 0.40
# NCCL runs its search channels twice (ncclTopoPostset, src/graph/connect.cc: "Duplication
# should be complete now", nChannels x 2), one CTA each; 16 SMs on a DGX with 8 NICs (NCCL
# maintainer, NVIDIA/nccl issue 689).
RING_CHANNEL_COPIES = 2


@pytest.mark.parametrize(
    ("comm_s", "window_s", "expected_s"),
    [
        # longer than its window: 1 s sticks out, the hidden 1 s costs 0.25 s of compute
        (2.0, 1.0, 1.0 + 0.25 * 1.0),
        # hidden entirely: a quarter of its 1 s
        (1.0, 4.0, 0.25),
        # no window: all of it
        (3.0, 0.0, 3.0),
        # nothing to hide
        (0.0, 5.0, 0.0),
        # an unlimited window (pipeline sends behind other micro-batches)
        (0.8, math.inf, 0.2),
    ],
)
def test_overlapped_collective_adds_its_hidden_share_to_the_compute(
    comm_s: float, window_s: float, expected_s: float
) -> None:
    assert load_constants().overlap_interference == 0.25
    assert overlapped_s(comm_s, window_s) == pytest.approx(expected_s)


def test_interference_lies_between_nccls_sm_share_and_the_published_slowdowns() -> None:
    """NCCL's CTAs each hold an SM alone, so the share of SMs its channels take is a floor on
    the slowdown of the compute beside them (wave tails and HBM traffic add to it); the
    constant may not exceed the largest published slowdown."""
    gpus = load_catalog().gpus
    h100_sms = gpus["h100-sxm"].num_sms
    a100_sms = gpus["a100-80gb"].num_sms
    # DGX H100: 8 NICs of 400 Gb/s (under 50 GB/s of payload) -> 8 search channels, run twice
    h100_ring = RING_CHANNEL_COPIES * network_channels(
        nics=8, nic_payload_gbyte_per_s=48.0, generation="hopper"
    )
    assert h100_ring == 16
    assert h100_ring / h100_sms == pytest.approx(16 / 132)
    assert nvls_channels("hopper") / h100_sms == pytest.approx(16 / 132)
    # DGX A100: 8 NICs of 200 Gb/s (under 25 GB/s) -> 8 search channels, run twice
    a100_ring = RING_CHANNEL_COPIES * network_channels(
        nics=8, nic_payload_gbyte_per_s=23.0, generation="ampere"
    )
    assert a100_ring / a100_sms == pytest.approx(16 / 108)
    interference = load_constants().overlap_interference
    assert max(h100_ring / h100_sms, a100_ring / a100_sms) < interference
    assert interference <= PUBLISHED_MAX_SLOWDOWN
