"""FSDP development rows that differ only in their GPU count (one source, model, micro-batch,
samples per GPU, sharding, recomputation, stack; ``benchmarks/fsdp_rank_scaling.py``): the
per-GPU throughput the larger run keeps, as a share of the smaller run's, is predicted
within 2 points of the measured share. Rows of one source share their unknowns (the
cluster, the software), so the pair isolates what changes with the GPU count. The 2-point
tolerance was set with this test, after the pairs were first printed; pairs outside it are
strict xfails with what the benchmark shows about them. Only development rows are read."""

from __future__ import annotations

import pytest
from benchmarks.fsdp_rank_scaling import FsdpRow, fsdp_development_rows, rank_pairs

TOLERANCE = 0.02

_BEYOND_COLLECTIVES = (
    "the measured step grows by {measured} ms, more than the unit collectives' own growth "
    "at NCCL's latency model even with none of it overlapped ({raw} ms); the model adds "
    "{predicted} ms. A cost that grows with the ranks outside those calls' NCCL-model time "
    "(collectives slower at scale than NCCL's tuning model, stragglers at every "
    "per-unit synchronisation) is not modelled"
)
_A3_HSDP = (
    "HSDP on Google A3 VMs (GPUDirect-TCPX, the cross-VM collectives at its measured share "
    "of the NIC rate; unrolled layers whose cross-VM gradient all-reduces XLA merges into "
    "1 GiB calls that start after the backward, clusterforge.perf.xla_combine): the measured "
    "step grows by {measured} ms, the model's by {predicted} ms, the one-VM row itself 62 ms "
    "short (+4.5 %). Not modelled: TCPX's all-reduce rate (the share is read from a two-VM "
    "all-gather), any part of the merged calls XLA's scheduler starts before the backward ends"
)
KNOWN_GAPS = {
    "llmfoundry-h100-large-mpt-70b-128gpu->512": _BEYOND_COLLECTIVES.format(
        measured=784, raw=426, predicted=147
    ),
    "pub-maxtext-h100-llama2-70b-fp8-64gpu->256": _BEYOND_COLLECTIVES.format(
        measured=635, raw=205, predicted=40
    ),
    "pub-maxtext-h100-llama3-70b-bf16-512gpu->2048": _BEYOND_COLLECTIVES.format(
        measured=379, raw=23, predicted=6
    ),
    "pub-tt-h100-8b-8gpu-fsdp->128": _BEYOND_COLLECTIVES.format(measured=80, raw=71, predicted=3),
    "pub-paxml-h100-gpt3-175b-fp8-512gpu->2048": _BEYOND_COLLECTIVES.format(
        measured=420, raw=48, predicted=13
    )
    + ". The FSDP group stays at 128 ranks (16 nodes) in both runs, only the replicas grow "
    "(4 -> 16), so what grows is not the group's gathers or reduce-scatters; both rows are "
    "predicted not to fit and timed with the memory check left out",
    "llmfoundry-a100-40gb-mpt-7b-32gpu->128": _BEYOND_COLLECTIVES.format(
        measured=279, raw=44, predicted=24
    ),
    "llmfoundry-a100-40gb-mpt-3b-32gpu->128": _BEYOND_COLLECTIVES.format(
        measured=49, raw=24, predicted=22
    )
    + ". Kept share predicted 0.0211 off the measured one, with the Triton attention at its "
    "measured rate by sequence length (0.0199 before, when the attention was priced faster "
    "and the same growth was a larger share of a shorter step)",
    "llmfoundry-a100-40gb-mpt-1b-32gpu->128": (
        "the 32-GPU run is the slow one: 15,555 tokens/s per GPU (MFU 45.4 %) against "
        "18,647 at 128 GPUs in the same table (its step 218 ms longer), transcribed as "
        "published; nothing in the model makes 32 GPUs slower than 128"
    ),
    "pub-maxtext-a3-llama2-7b-8gpu->32": _A3_HSDP.format(measured=304, predicted=402),
    "pub-maxtext-a3-llama2-7b-8gpu->128": _A3_HSDP.format(measured=454, predicted=503),
    "together-b200-llama3-70b-fsdp-64->592": _BEYOND_COLLECTIVES.format(
        measured=960, raw=767, predicted=200
    )
    + ". Megatron-FSDP (Megatron-Bridge, NeMo 25.11.01) over DGX B200 nodes on InfiniBand, "
    "2 sequences per GPU at every size; the 64-GPU row itself is 202 ms slow (-4.2 %). The "
    "cluster's own nccl-tests sendrecv at 512 MB, two days later, fell from 42.5 GB/s on 2 "
    "nodes to 26.1 on 8 and 14.5 on 16-32 (together-dgxc-benchmarking, tests/b200/worklog/"
    "2026-04-10_network_fabric_analysis.md): a fabric slower with the node count than the "
    "model's non-blocking rail-optimised one",
    "together-b200-llama3-70b-fsdp-64->256": (
        "the measured step grows by 290 ms from 64 to 256 GPUs, the model's by 88 ms: inside "
        "the unit collectives' own growth at NCCL's latency model with none of it overlapped "
        "(345 ms), so Megatron-FSDP's per-unit all-gathers and reduce-scatters over 32 nodes "
        "show more of their time than the model leaves exposed; whether the overlap or the "
        "calls' rate at 256 ranks (the cluster's sendrecv bandwidth fell with the node "
        "count, see the 592-GPU pair) is not established"
    ),
    "pub-tt-h100-8b-8gpu-fsdp-compile-fp8->128": (
        "the measured step grows by 35 ms from 8 to 128 GPUs, the model's by -5 ms: the "
        "unit collectives' growth (60 ms back to back) is hidden behind compute but for "
        "the overlap interference; measured, about half of it shows"
    ),
}

PAIRS = list(rank_pairs(list(fsdp_development_rows())))


def _pair_id(pair: tuple[FsdpRow, FsdpRow]) -> str:
    small, large = pair
    return f"{small.run.name}->{large.run.base.layout.num_gpus}"


def _cases() -> list[object]:
    return [
        pytest.param(
            pair,
            id=_pair_id(pair),
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[_pair_id(pair)])]
            if _pair_id(pair) in KNOWN_GAPS
            else [],
        )
        for pair in PAIRS
    ]


def test_pairs_are_found_in_three_sources() -> None:
    assert len({small.run.file for small, _ in PAIRS}) >= 3
    assert set(KNOWN_GAPS) <= {_pair_id(p) for p in PAIRS}


@pytest.mark.parametrize("pair", _cases())
def test_throughput_kept_at_more_gpus_is_predicted(pair: tuple[FsdpRow, FsdpRow]) -> None:
    small, large = pair
    measured = small.measured_step_s / large.measured_step_s
    predicted = small.predicted_step_s / large.predicted_step_s
    assert abs(predicted - measured) <= TOLERANCE
