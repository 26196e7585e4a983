"""How a fused attention kernel's rate depends on the length of the call it runs.

A flash kernel gives each tile of 128 queries one CTA that loops over the key tiles it sees;
the tile's fixed work (loading Q, the output and log-sum-exp stores, the masked diagonal)
is amortised over that loop, so a short call runs below a long one's rate. cuDNN's published
sweep over sequence lengths (``[[cudnn_attention_sweep]]`` in ``data/efficiency.toml``) puts
B200's causal rate at 4,096 tokens at 73 % of its rate at 8,192 and Hopper's at 92 %.

Context parallelism shortens the calls: Transformer Engine's ring (``AttnFuncWithCPAndKVP2P``)
runs ``cp`` calls per layer, the causal one over the rank's own ``s / cp`` tokens and the
others over half its queries against all its received keys or the reverse, each scoring
``s^2 / (2 cp^2)`` query-key pairs per head: as many as a causal call over ``s / cp`` tokens,
the length at which :func:`cudnn_length_shares` reads the sweep. The all-gather variant runs
two calls per rank over ``s / (2 cp)`` queries each, ``s^2 / (4 cp)`` pairs on average, as
many as a causal call over ``s / sqrt(cp)`` tokens.

PyTorch SDPA's FlashAttention-2, whose measured rate is non-causal, keeps a causal share of it
by length (:data:`FLASH2_CAUSAL_SHARE`, :func:`causal_slowdown`). The Triton FlashAttention
has a measured causal forward + backward rate by length on A100
(:data:`TRITON_FWD_BWD_TFLOPS`, :func:`triton_fwd_bwd_tflops`).
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from importlib import resources

import numpy as np

from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import GpuPerf, load_constants
from clusterforge.perf.stack import Stack

__all__ = [
    "TRITON_FWD_BWD_TFLOPS",
    "causal_slowdown",
    "cudnn_call_length",
    "cudnn_length_shares",
    "triton_fwd_bwd_tflops",
]

# The Triton FlashAttention's forward + backward TFLOP/s by sequence length, causal, head dim
# 128, BF16/FP16, batch x sequence = 16k tokens, hidden 2048 (figure convention: causal FLOPs
# halved, backward 2.5x the forward's): Dao 2023, "FlashAttention-2", arXiv 2307.08691,
# Fig. 4 (d), "Attention forward + backward speed (A100 80GB SXM4)", with causal mask, head
# dimension 128, the "FlashAttention Triton" bars (FlashAttention-2 in the same panel: 99,
# 133, 155, 173, 182, 189) [V]; the image is Dao-AILab/flash-attention
# ``assets/flash2_a100_fwd_bwd_benchmark.png`` at 4f285b35 (2023-07-17). The benchmark script
# published with it (``benchmarks/benchmark_flash_attention.py`` at 60499abc) labels
# ``triton.ops.flash_attention`` (the Triton library's kernel, from Tillet's fused-attention
# tutorial) "Triton"; LLM Foundry's ``flash_attn_triton.py`` is Dao's port of the same
# tutorial, so the bars may measure the sibling kernel (an assumption). The A100 40GB part
# shares the SMs, clocks and peak (the kernel is compute-bound). No H100 bars exist
# (``assets/flash2_h100_fwd_bwd_benchmark.png`` has none): other GPUs keep the summary
# slowdowns of :mod:`clusterforge.perf.attention`.
_TRITON_A100 = ((512, 50.0), (1024, 61.0), (2048, 68.0), (4096, 74.0), (8192, 78.0), (16384, 80.0))
TRITON_FWD_BWD_TFLOPS: dict[str, tuple[tuple[int, float], ...]] = {
    "a100-80gb": _TRITON_A100,
    "a100-40gb": _TRITON_A100,
}


def triton_fwd_bwd_tflops(gpu_id: str, length: float) -> float | None:
    """The Triton FlashAttention's measured causal forward + backward TFLOP/s on ``gpu_id``
    for a call of ``length`` tokens, interpolated in log2 of the length (the ends' rates
    outside the measured 512-16k); ``None`` for a GPU without a measurement."""
    points = TRITON_FWD_BWD_TFLOPS.get(gpu_id)
    if points is None:
        return None
    logs = [math.log2(s) for s, _ in points]
    return float(np.interp(math.log2(max(length, 1.0)), logs, [r for _, r in points]))


# The length the [[cudnn_attention]] rates were read at (their `basis`).
CUDNN_RATE_LENGTH = 8192


@cache
def _sweeps() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per GPU id: (log2 lengths, forward share, backward share) of its sweep row, the shares
    taken of the row's rate at :data:`CUDNN_RATE_LENGTH`."""
    text = resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    out = {}
    for row in tomllib.loads(text).get("cudnn_attention_sweep", []):
        lengths = [int(n) for n in row["lengths"]]
        at = lengths.index(CUDNN_RATE_LENGTH)
        fwd = np.asarray(row["forward_tflops"], dtype=float)
        bwd = np.asarray(row["backward_tflops"], dtype=float)
        curve = (np.log2(np.asarray(lengths, dtype=float)), fwd / fwd[at], bwd / bwd[at])
        for gpu in row["gpus"]:
            out[gpu] = curve
    return out


def cudnn_length_shares(gpu_id: str, length: float) -> tuple[float, float]:
    """(forward, backward) share of the GPU's 8k cuDNN rates that a causal call over
    ``length`` tokens keeps: linear in log2 of the length between the swept lengths, the
    nearest end's share outside them; (1, 1) for a GPU without a sweep.

    The sweep is read at every length, longer calls included (B200: 114-121 % of the 8k rate
    at 16k-32k), as the source gives it; the 8k rates are its own 8k points. That puts NeMo
    25.04's B200 long-context runs 7-15 points further on the optimistic side, a gap of their
    own (docs/validation.md, "Context parallelism on Blackwell and the cuDNN call length").
    """
    sweep = _sweeps().get(gpu_id)
    if sweep is None:
        return 1.0, 1.0
    logs, fwd, bwd = sweep
    x = math.log2(max(length, 1.0))
    return float(np.interp(x, logs, fwd)), float(np.interp(x, logs, bwd))


def cudnn_call_length(plan: ParallelPlan, stack: Stack) -> float:
    """The causal length whose pairs per head one attention call of ``plan`` scores: the
    sequence without context parallelism, ``s / cp`` under a ring, ``s / sqrt(cp)`` under the
    all-gather variant (``Stack.cp_overlap`` off; module docstring)."""
    cp = plan.layout.cp
    if cp == 1:
        return float(plan.seq_length)
    if stack.cp_overlap or stack.context_parallel == "torch":
        return plan.seq_length / cp
    return plan.seq_length / math.sqrt(cp)


# FlashAttention-2's causal forward against its non-causal forward on H100 (BF16, head dim
# 128, 16 heads, batch x sequence = 16K tokens; causal FLOPs halved), by sequence length:
# Shah et al. 2024, "FlashAttention-3", arXiv 2407.08608, Fig. 5 (c) and (d), "Attention
# forward speed, head dim 128 (H100 80GB SXM5)", FlashAttention-2 bars, without / with causal
# mask: 309/191, 350/260, 362/298, 368/319, 370/333, 370/335 TFLOP/s at 512 ... 16K [S: the
# bar labels as transcribed from the figures]. The kernel skips the masked blocks, but its
# row blocks carry unequal work (a likely cause, not measured). PyTorch SDPA's measured H100
# rate (``[[sdpa_flash_attention]]``) is non-causal; a causal call keeps this share of it
# (linear in log2 of the call's length between the measured lengths, the 16K share beyond).
# Taken for the backward too (its time is a ratio of the forward's): no causal backward
# measurement of FlashAttention-2 on H100 is published.
FLASH2_CAUSAL_SHARE = (
    (512, 191 / 309),
    (1024, 260 / 350),
    (2048, 298 / 362),
    (4096, 319 / 368),
    (8192, 333 / 370),
    (16384, 335 / 370),
)


def _causal_share_of_rate(tokens: float) -> float:
    """Share of FlashAttention-2's non-causal rate that a causal call over ``tokens`` keeps
    (:data:`FLASH2_CAUSAL_SHARE`)."""
    lengths = [math.log2(length) for length, _ in FLASH2_CAUSAL_SHARE]
    shares = [share for _, share in FLASH2_CAUSAL_SHARE]
    return float(np.interp(math.log2(max(tokens, 1.0)), lengths, shares))


def causal_slowdown(plan: ParallelPlan, stack: Stack, perf: GpuPerf) -> float:
    """Time of the stack's fused attention over its time at a non-causal rate, where that
    rate is a non-causal measurement (PyTorch SDPA's FlashAttention-2 with a measured row).

    The causal calls: the whole attention without context parallelism; under a load-balanced
    ring only the step against the rank's own K, V (``1 / cp`` of its pairs, over its
    ``s / cp`` local tokens), the later steps running unmasked (PyTorch's
    ``_is_causal_behavior``: ``NOT_IS_CAUSAL`` for every step after the first).
    """
    if stack.attention != "sdpa_flash" or perf.gpu_id not in load_constants().sdpa_flash_tflops:
        return 1.0
    cp = plan.layout.cp
    causal = 1.0 / cp
    return causal / _causal_share_of_rate(plan.seq_length / cp) + (1.0 - causal)
