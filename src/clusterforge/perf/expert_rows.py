"""Rows per local expert under dropless, randomly balanced routing.

Megatron-Core's forced load balancing (``moe_router_force_load_balancing``, the setting of
Megatron-Bridge's MoE performance benchmarks, which "force-balance the token distribution
among experts" and drop no token: docs/performance-summary-archive.md at 067f987df03b)
replaces each token's router logits by normal random values before the top-k (``RandomSTE``,
``apply_random_logits`` in megatron/core/transformer/moe/moe_utils.py, NVIDIA/Megatron-LM
core_v0.15.0 to core_v0.18.0). Every token then picks ``k`` distinct experts uniformly at
random: balanced on average, but each expert's row count is random around the mean
``m = tokens x k / E`` of the EP group. Two costs follow that the mean alone leaves out:

- Ragged row tiles. Transformer Engine's ``GroupedLinear`` runs one GEMM per local expert on
  that expert's own rows (``m_splits``; ``general_grouped_gemm``, transformer_engine/
  pytorch/module/grouped_linear.py, v2.9 to v2.12), so each expert's last row tile is partly
  empty; with the counts spread around the mean, the tile count is that of
  ``ceil(X / tile)`` over the count ``X`` (:func:`row_tile_mixture`), half a tile above
  ``m / tile`` when the mean sits on a tile edge; the experts of a round of concurrent GEMMs
  draw theirs independently (:func:`round_tile_mixture`, :func:`ragged_grouped_gemm_time_s`).
- The busiest rank. The EP all-to-all after the experts waits for every rank of the group,
  so each layer moves at the pace of the rank with the most rows. A rank holding ``L`` of the
  ``E`` experts receives, per token, a hypergeometric number of the token's ``k`` copies
  (mean ``k L / E``, variance ``k (L/E) (1 - L/E) (E - k) / (E - 1)``); summed over the
  group's tokens it is close to normal, and the busiest of ``ep`` ranks exceeds the mean by
  the expected maximum of ``ep`` standard normals times its standard deviation
  (:func:`expected_max_normal`; the ranks' counts are slightly anti-correlated, so this is a
  small upper bound).

Drop-and-pad runs compute their fixed capacity (no spread), and routing that is not random
(learned routers, deterministic balanced gates) is not described here.
"""

from __future__ import annotations

import math
from functools import cache

from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, load_constants

__all__ = [
    "busiest_rank_rows",
    "expected_max_normal",
    "ragged_grouped_gemm_time_s",
    "round_tile_mixture",
    "row_tile_mixture",
]

_GRID_STEP = 1e-3
_GRID_HALF_WIDTH = 9.0


@cache
def expected_max_normal(n: int) -> float:
    """Expected maximum of ``n`` independent standard normals, ``E[max] = int x n phi(x)
    Phi(x)^(n-1) dx`` by the midpoint rule (0 for ``n = 1``; 0.5642 for 2, 1.4236 for 8)."""
    if n <= 1:
        return 0.0
    total = 0.0
    steps = int(2 * _GRID_HALF_WIDTH / _GRID_STEP)
    for i in range(steps):
        x = -_GRID_HALF_WIDTH + (i + 0.5) * _GRID_STEP
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        cdf = 0.5 * math.erfc(-x / math.sqrt(2.0))
        total += x * n * pdf * cdf ** (n - 1)
    return total * _GRID_STEP


def busiest_rank_rows(arch: ModelArch, plan: ParallelPlan) -> tuple[float, float]:
    """(rows per local expert on the EP group's busiest rank, standard deviation of one
    expert's rows) under uniform random routing (the module docstring)."""
    experts, k, ep = arch.num_experts, arch.top_k, plan.layout.ep
    local = experts / ep
    mean_rows = tokens_per_gpu(plan) * k * ep / experts
    group_tokens = mean_rows * experts / k
    share = local / experts
    rank_var = group_tokens * k * share * (1.0 - share) * (experts - k) / max(1, experts - 1)
    busiest = mean_rows * local + math.sqrt(rank_var) * expected_max_normal(ep)
    expert_sd = math.sqrt(group_tokens * (k / experts) * (1.0 - k / experts))
    return busiest / local, expert_sd


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def row_tile_mixture(mean: float, sd: float, tile: float) -> list[tuple[int, float]]:
    """(row tiles, probability) of ``ceil(X / tile)`` for a normal row count ``X`` of mean
    ``mean`` and deviation ``sd``: one entry of probability 1 when ``sd`` is 0."""
    if sd <= 0.0:
        return [(max(1, math.ceil(mean / tile)), 1.0)]
    low = max(1, math.floor((mean - 6.0 * sd) / tile))
    high = max(low, math.ceil((mean + 6.0 * sd) / tile))
    mixture = []
    for tiles in range(low, high + 1):
        upper = _normal_sf(((tiles - 1) * tile - mean) / sd)
        p = upper - _normal_sf((tiles * tile - mean) / sd)
        if p > 1e-9:
            mixture.append((tiles, p))
    total = sum(p for _, p in mixture)
    return [(tiles, p / total) for tiles, p in mixture]


def round_tile_mixture(mean: float, sd: float, tile: float, gemms: int) -> list[tuple[int, float]]:
    """(row tiles of ``gemms`` concurrent expert GEMMs together, probability): the sum of
    ``gemms`` independent draws of :func:`row_tile_mixture`."""
    one = row_tile_mixture(mean, sd, tile)
    total: dict[int, float] = {0: 1.0}
    for _ in range(gemms):
        step: dict[int, float] = {}
        for tiles, p in total.items():
            for more, q in one:
                step[tiles + more] = step.get(tiles + more, 0.0) + p * q
        total = {t: p for t, p in step.items() if p > 1e-9}
    norm = sum(total.values())
    return sorted((t, p / norm) for t, p in total.items())


def ragged_grouped_gemm_time_s(
    rows: float,
    sd: float,
    n: float,
    k: float,
    perf: GpuPerf,
    num_gemms: float,
    concurrent: int,
) -> float:
    """Expected time of ``num_gemms`` expert GEMMs ``(rows_i x k) @ (k x n)`` run
    ``concurrent`` at a time (Transformer Engine's grouped linear, as
    :func:`~clusterforge.perf.moe.grouped_gemm_time_s` prices equal ones), each expert's rows
    a normal count of mean ``rows`` and deviation ``sd`` cut into row tiles of the model's
    ``gemm_tile_m``: a round's GEMMs share the SMs' waves, so each round is timed as one GEMM
    over the sum of its experts' row tiles (the weights' reads, a small term at these shapes,
    counted once)."""
    tile = load_constants().gemm_tile_m
    count = max(1, round(num_gemms))
    gemms = max(1, min(concurrent, count))
    full_rounds, rest = divmod(count, gemms)

    def round_s(experts: int) -> float:
        mixture = round_tile_mixture(rows, sd, tile, experts)
        return sum(p * gemm_time_s(tiles * tile, n, k, perf) for tiles, p in mixture)

    time = full_rounds * round_s(gemms)
    return time + (round_s(rest) if rest else 0.0)
