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
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.comm import Collective, CommModel
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan, validate_plan
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step

__all__ = ["SearchResult", "candidate_plans", "least_recompute", "search", "search_plans"]

RECOMPUTE_ORDER = ("none", "selective", "full")
MICRO_BATCHES = (1, 2, 4)
VIRTUAL_STAGES = (1, 2, 4)
LONG_SEQUENCE = 16384  # CP is considered from this sequence length on
MAX_PP = 64  # deepest pipeline tried (Narayanan et al. 2021 ran up to 64 stages)


def _powers_of_two(limit: int) -> list[int]:
    return [2**i for i in range(limit.bit_length()) if 2**i <= limit]


def _layouts(
    arch: ModelArch, base: ParallelPlan, num_gpus: int, domain: int
) -> Iterator[JobLayout]:
    """Job layouts of ``num_gpus`` GPUs over the degrees tried (DP from the layout)."""
    tps = [t for t in _powers_of_two(min(domain, arch.num_heads)) if arch.num_heads % t == 0]
    pps = [p for p in range(1, min(arch.num_layers, MAX_PP) + 1) if num_gpus % p == 0]
    cps = _powers_of_two(8) if base.seq_length >= LONG_SEQUENCE else [1]
    eps = [e for e in _powers_of_two(arch.num_experts) if arch.num_experts % e == 0]
    for tp, pp, cp, ep in itertools.product(tps, pps, cps, eps):
        try:
            yield JobLayout.for_gpus(num_gpus, tp=tp, pp=pp, cp=cp, ep=ep)
        except PlanError:
            continue  # the degrees do not divide the GPUs, or EP does not divide DP x CP


def candidate_plans(
    arch: ModelArch, base: ParallelPlan, num_gpus: int, domain: int
) -> Iterator[ParallelPlan]:
    """Plans to try (not yet validated), keeping batch, sequence and precision of ``base``."""
    for job in _layouts(arch, base, num_gpus, domain):
        vpps = VIRTUAL_STAGES if job.pp > 1 else (1,)
        for mb, vpp, zero in itertools.product(MICRO_BATCHES, vpps, (1, 3)):
            if zero == 3 and job.pp > 1:
                continue  # FSDP/ZeRO-3 with pipelining is not a configuration people run
            yield base.with_(
                **job.degrees(),
                micro_batch=mb,
                vpp=vpp,
                zero_stage=zero,
                sequence_parallel=job.tp > 1,
                pipeline_layers=None,
                recompute_layers=None,
            )


def least_recompute(
    arch: ModelArch,
    plan: ParallelPlan,
    gpu: Gpu,
    stack: Stack,
    modes: tuple[str, ...] = RECOMPUTE_ORDER,
) -> ParallelPlan | None:
    """The plan with the least recomputation among ``modes`` that fits in the GPU's memory,
    checked with the memory model alone (no timing), or None.

    Order: none, selective, block recomputation of ``k`` layers per stage (only when
    ``modes`` allows ``"full"`` and something less), full (Korthikanti et al. 2022 §5).
    Activation memory is linear in ``k``, so the smallest fitting ``k`` is solved for, not
    searched. Raises :class:`PlanError` when the plan itself is invalid.
    """
    stages = validate_plan(arch, plan, plan.num_gpus)

    def memory_gib(option: ParallelPlan) -> float:
        return memory_per_gpu(arch, option, stages, stack).total_gib

    for mode in ("none", "selective"):
        option = plan.with_(recompute=mode, recompute_layers=None)
        if mode in modes and memory_gib(option) <= gpu.hbm_gib:
            return option
    full = plan.with_(recompute="full", recompute_layers=None)
    if "full" not in modes or memory_gib(full) > gpu.hbm_gib:
        return None
    if len(modes) == 1:
        return full
    layers = max(stages)
    kept, recomputed = (
        memory_gib(plan.with_(recompute="full", recompute_layers=0)),
        memory_gib(full),
    )
    if kept <= recomputed:
        return full
    k = max(1, math.ceil((kept - gpu.hbm_gib) / (kept - recomputed) * layers))
    for layers_recomputed in range(k, layers):
        option = plan.with_(recompute="full", recompute_layers=layers_recomputed)
        if memory_gib(option) <= gpu.hbm_gib:
            return option
    return full


class _NoComm:
    """A fabric with free communication: a lower bound on any plan's step time."""

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        return 0.0


@dataclass(frozen=True)
class SearchResult:
    """The best plans and how many were looked at: generated, fitting in memory, timed."""

    predictions: list[Prediction]
    num_candidates: int
    num_fitting: int
    num_timed: int


def _fitting(
    arch: ModelArch, plans: list[ParallelPlan], gpu: Gpu, stack: Stack
) -> list[ParallelPlan]:
    """Each valid plan with its least fitting recomputation (memory pruning, no timing)."""
    fitting = []
    for plan in plans:
        try:
            option = least_recompute(arch, plan, gpu, stack)
        except PlanError:
            continue
        if option is not None:
            fitting.append(option)
    return fitting


def search(
    arch: ModelArch,
    base: ParallelPlan,
    gpu: Gpu,
    comm: CommModel,
    nvlink_domain_gpus: int,
    *,
    top: int = 10,
    stack: Stack | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """The ``top`` fitting plans by tokens/s (ties: less memory first), branch and bound.

    Candidates are pruned by memory first; each survivor's step time with free
    communication is a lower bound on its real time (exposed communication is never
    negative), so survivors are timed on the fabric in the order of their bound until the
    next bound is slower than the ``top``-th best time. ``progress(done, total)`` is called
    after each timed plan.
    """
    stack = stack or Stack.megatron_core()
    candidates = list(candidate_plans(arch, base, base.num_gpus, nvlink_domain_gpus))
    fitting = _fitting(arch, candidates, gpu, stack)
    free = _NoComm()
    bounds = sorted(
        (
            (predict_step(arch, p, gpu, free, nvlink_domain_gpus, stack).step_time_s, i, p)
            for i, p in enumerate(fitting)
        ),
    )
    found: list[Prediction] = []
    for done, (bound, _, plan) in enumerate(bounds, start=1):
        if len(found) >= top and bound > found[top - 1].step_time_s:
            break
        found.append(predict_step(arch, plan, gpu, comm, nvlink_domain_gpus, stack))
        found.sort(key=lambda p: (p.step_time_s, p.memory_per_gpu_gib))
        if progress is not None:
            progress(done, len(bounds))
    if not found:
        raise PlanError(
            f"no plan of {arch.id} on {base.num_gpus} x {gpu.id} both divides the global batch "
            f"{base.global_batch} (micro-batch x DP must divide it) and fits in "
            f"{gpu.hbm_gib:.0f} GiB; change the global batch, the GPU count or the GPU"
        )
    return SearchResult(found[:top], len(candidates), len(fitting), len(found))


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
    """The ``top`` fitting plans by tokens/s (see :func:`search`)."""
    result = search(
        arch, base, gpu, comm, nvlink_domain_gpus, top=top, stack=stack, progress=progress
    )
    return result.predictions
