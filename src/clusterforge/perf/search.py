"""Plan search: enumerate valid parallelism plans that fit in memory, rank by throughput.

The space is the one practitioners sweep (Narayanan et al. 2021 §3.3 takeaways: TP inside
the NVLink domain, PP across nodes, DP for the rest; Korthikanti et al. 2022: the cheapest
recomputation that fits): TP in powers of two up to the NVLink domain, PP over the divisors of the GPU count up to 64
(uneven layer splits allowed), CP only for long sequences, EP over the expert count,
micro-batches 1/2/4, interleaving where it divides, ZeRO-1 and ZeRO-3, and for each the
cheapest recomputation mode that fits. Communication results are memoised by the
:class:`~clusterforge.perf.comm.CommModel`, so thousands of plans take seconds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.errors import PlanError
from clusterforge.perf.comm import CommModel
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan, validate_plan
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step

__all__ = ["candidate_plans", "least_recompute", "recompute_options", "search_plans"]

RECOMPUTE_ORDER = ("none", "selective", "full")
MICRO_BATCHES = (1, 2, 4)
VIRTUAL_STAGES = (1, 2, 4)
LONG_SEQUENCE = 16384  # CP is considered from this sequence length on
MAX_PP = 64  # deepest pipeline tried (Narayanan et al. 2021 ran up to 64 stages)


def _powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(limit.bit_length()) if 2**i <= limit]


def _degrees(
    arch: ModelArch, base: ParallelPlan, num_gpus: int, domain: int
) -> Iterator[tuple[int, int, int, int]]:
    """(tp, pp, cp, ep) combinations whose product divides the GPU count."""
    tps = [t for t in _powers_of_two(min(domain, arch.num_heads)) if arch.num_heads % t == 0]
    pps = [p for p in range(1, min(arch.num_layers, MAX_PP) + 1) if num_gpus % p == 0]
    cps = _powers_of_two(8) if base.seq_length >= LONG_SEQUENCE else [1]
    eps = [e for e in _powers_of_two(arch.num_experts) if arch.num_experts % e == 0]
    for tp, pp, cp, ep in itertools.product(tps, pps, cps, eps):
        if num_gpus % (tp * pp * cp) == 0:
            yield tp, pp, cp, ep


def candidate_plans(
    arch: ModelArch, base: ParallelPlan, num_gpus: int, domain: int
) -> Iterator[ParallelPlan]:
    """Plans to try (not yet validated), keeping batch, sequence and precision of ``base``."""
    for tp, pp, cp, ep in _degrees(arch, base, num_gpus, domain):
        dp = num_gpus // (tp * pp * cp)
        vpps = VIRTUAL_STAGES if pp > 1 else (1,)
        for mb, vpp, zero in itertools.product(MICRO_BATCHES, vpps, (1, 3)):
            if zero == 3 and pp > 1:
                continue  # FSDP/ZeRO-3 with pipelining is not a configuration people run
            yield base.with_(
                tp=tp,
                pp=pp,
                cp=cp,
                ep=ep,
                dp=dp,
                micro_batch=mb,
                vpp=vpp,
                zero_stage=zero,
                sequence_parallel=tp > 1,
                pipeline_layers=None,
            )


def recompute_options(plan: ParallelPlan, max_stage_layers: int) -> Iterator[ParallelPlan]:
    """Recomputation variants from cheapest to most memory-saving: none, selective, block
    recomputation of 1, 2, ... layers per stage, full (Korthikanti et al. 2022 §5)."""
    yield plan.with_(recompute="none", recompute_layers=None)
    yield plan.with_(recompute="selective", recompute_layers=None)
    for k in range(1, max_stage_layers):
        yield plan.with_(recompute="full", recompute_layers=k)
    yield plan.with_(recompute="full", recompute_layers=None)


def least_recompute(
    arch: ModelArch,
    plan: ParallelPlan,
    gpu: Gpu,
    stack: Stack,
    modes: tuple[str, ...] = RECOMPUTE_ORDER,
) -> ParallelPlan | None:
    """The plan with the least recomputation among ``modes`` that fits in the GPU's memory
    (checked with the memory model alone, before any timing), or None; block recomputation
    is tried only when ``modes`` allows both ``"full"`` and something less.

    Raises :class:`PlanError` when the plan itself is invalid.
    """
    stages = validate_plan(arch, plan, plan.num_gpus)
    block = "full" in modes and len(modes) > 1
    for option in recompute_options(plan, max(stages)):
        partial = option.recompute_layers is not None
        if option.recompute not in modes or (partial and not block):
            continue
        if memory_per_gpu(arch, option, stages, stack).total_gib <= gpu.hbm_gib:
            return option
    return None


def _cheapest_fitting(
    arch: ModelArch, plan: ParallelPlan, gpu: Gpu, comm: CommModel, domain: int, stack: Stack
) -> Prediction | None:
    try:
        fitting = least_recompute(arch, plan, gpu, stack)
    except PlanError:
        return None
    if fitting is None:
        return None
    return predict_step(arch, fitting, gpu, comm, domain, stack)


def search_plans(
    arch: ModelArch,
    base: ParallelPlan,
    gpu: Gpu,
    comm: CommModel,
    nvlink_domain_gpus: int,
    top: int = 10,
    stack: Stack | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Prediction]:
    """The ``top`` fitting plans by tokens/s (ties: less memory first).

    ``progress(done, total)`` is called after each candidate (the CLI draws a bar with it).
    """
    stack = stack or Stack.megatron_core()
    found = []
    candidates = list(candidate_plans(arch, base, base.num_gpus, nvlink_domain_gpus))
    for done, plan in enumerate(candidates, start=1):
        pred = _cheapest_fitting(arch, plan, gpu, comm, nvlink_domain_gpus, stack)
        if progress is not None:
            progress(done, len(candidates))
        if pred is not None:
            found.append(pred)
    if not found:
        raise PlanError(
            f"no plan of {arch.id} on {base.num_gpus} x {gpu.id} both divides the global batch "
            f"{base.global_batch} (micro-batch x DP must divide it) and fits in "
            f"{gpu.hbm_gib:.0f} GiB; change the global batch, the GPU count or the GPU"
        )
    found.sort(key=lambda p: (-p.tokens_per_s, p.memory_per_gpu_gib))
    return found[:top]
