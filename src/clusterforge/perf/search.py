"""Plan search: enumerate valid parallelism plans that fit in memory, rank by throughput.

The space is the one practitioners sweep (Narayanan et al. 2021 §3.3 takeaways: TP inside
the NVLink domain, PP across nodes, DP for the rest; Korthikanti et al. 2022: the cheapest
recomputation that fits): TP in powers of two up to the NVLink domain, PP over the divisors
of the GPU count up to 64 (uneven layer splits allowed), CP only for long sequences, EP over
the expert count, micro-batches 1/2/4, interleaving where it divides, ZeRO-1 and ZeRO-3, and
for each the cheapest recomputation mode that fits.

Speed: plans are pruned by memory first (no timing), then ranked by branch and bound on
lower bounds of their step time (:mod:`clusterforge.perf.search_cache`), so only the plans
that can still reach the top are simulated on the fabric; the answer is the one timing
every fitting plan would give, and :class:`SearchResult` says how many plans each stage saw.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from clusterforge.catalog import Gpu, ModelArch
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.blockscale import check_block_scaled_stack
from clusterforge.perf.calibration import Calibration
from clusterforge.perf.comm import CommModel
from clusterforge.perf.ep_overlap_rules import (
    EP_OVERLAP_RULES,
    check_ep_overlap,
    check_ep_overlap_model,
    ep_overlap_error,
)
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.optimizer_offload import HostMemory
from clusterforge.perf.parallel import ParallelPlan, validate_plan
from clusterforge.perf.roofline import check_precision
from clusterforge.perf.search_cache import FreeComm, RecordingComm
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step

__all__ = ["SearchResult", "candidate_plans", "least_recompute", "search"]

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
                layout=replace(job, vpp=vpp),
                micro_batch=mb,
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
    searched. Raises :class:`PlanError` when the plan itself is invalid, including a layout
    Megatron-Core refuses under the stack's EP overlap; that overlap also rules out full and
    block recomputation (:mod:`clusterforge.perf.ep_overlap_rules`).
    """
    stages = validate_plan(arch, plan, plan.layout.num_gpus)
    check_ep_overlap(plan.with_(recompute="none", recompute_layers=None), stack)
    if stack.moe_a2a_overlap:
        modes = tuple(mode for mode in modes if mode != "full")

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


def overlap_refused(arch: ModelArch, plan: ParallelPlan, stack: Stack) -> bool:
    """True when ``plan`` is a valid plan whose layout Megatron-Core refuses under the
    stack's EP overlap; its recomputation is left out (:func:`least_recompute` chooses it and
    never chooses full recomputation under the overlap). An invalid plan is not counted."""
    if not stack.moe_a2a_overlap:
        return False
    try:
        validate_plan(arch, plan, plan.layout.num_gpus)
    except PlanError:
        return False
    return ep_overlap_error(plan.with_(recompute="none", recompute_layers=None), stack) is not None


@dataclass(frozen=True)
class SearchResult:
    """The best plans and how many were looked at: generated, fitting in memory, timed;
    ``num_refused``: generated plans Megatron-Core refuses under the stack's EP overlap
    (:data:`~clusterforge.perf.ep_overlap_rules.EP_OVERLAP_RULES`), dropped unpriced."""

    predictions: list[Prediction]
    num_candidates: int
    num_fitting: int
    num_timed: int
    num_refused: int = 0


def _fitting(
    arch: ModelArch, plans: list[ParallelPlan], gpu: Gpu, stack: Stack
) -> tuple[list[ParallelPlan], int]:
    """Each valid plan with its least fitting recomputation (memory pruning, no timing), and
    how many plans Megatron-Core refuses under the stack's EP overlap."""
    fitting = []
    refused = 0
    for plan in plans:
        if overlap_refused(arch, plan, stack):
            refused += 1
            continue
        try:
            option = least_recompute(arch, plan, gpu, stack)
        except PlanError:
            continue
        if option is not None:
            fitting.append(option)
    return fitting, refused


def _branch_and_bound(
    fitting: list[ParallelPlan],
    time_plan: Callable[[ParallelPlan, CommModel], Prediction],
    comm: RecordingComm,
    top: int,
    progress: Callable[[int, int], None] | None,
) -> list[Prediction]:
    """The ``top`` fastest of ``fitting`` (ties: less memory, then the earlier plan), with as
    few collectives simulated as it can.

    Every plan starts with its free-communication bound; the plan with the lowest bound is
    taken next and its bound recomputed with the collectives simulated so far (for it or for
    other plans, :class:`KnownComm`); if some are still unknown, the largest message among
    them is simulated and the plan goes back in the queue. Once all its collectives are
    known its time is exact. The search stops when the lowest bound is slower than the
    ``top``-th best time found, so the result is that of timing every plan, while a plan
    whose largest messages already make it too slow is never simulated further.
    """
    free = FreeComm()
    queue = [(time_plan(p, free).step_time_s, i, p) for i, p in enumerate(fitting)]
    heapq.heapify(queue)
    found: list[tuple[float, float, int, Prediction]] = []
    while queue:
        bound, index, plan = heapq.heappop(queue)
        if len(found) >= top and bound > found[top - 1][0]:
            break
        known = comm.known
        timed = time_plan(plan, known)
        if known.unanswered:  # a lower bound still: learn its largest message, queue it again
            collective, size_bytes, groups = max(known.unanswered, key=lambda q: q[1])
            comm.collective_time_s(collective, size_bytes, groups)
            heapq.heappush(queue, (timed.step_time_s, index, plan))
            continue
        bisect.insort(found, (timed.step_time_s, timed.memory_per_gpu_gib, index, timed))
        if progress is not None:
            progress(len(found), len(fitting))
    return [prediction for *_, prediction in found]


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
    calibration: Calibration | None = None,
    host: HostMemory | None = None,
) -> SearchResult:
    """The ``top`` fitting plans by tokens/s (ties: less memory first), branch and bound.

    Candidates are pruned by memory first (no timing); the survivors are ranked by
    :func:`_branch_and_bound`, which returns what timing every survivor on the fabric would
    and says how many it timed. ``progress(timed, fitting)`` is called after each timed plan.
    ``host``: the node's host memory (plans that offload the optimizer need it). A
    precision the GPU or the stack cannot run is refused first (:func:`check_precision`,
    :func:`check_block_scaled_stack`), as is the EP
    overlap on a dense model (:func:`check_ep_overlap_model`); candidates Megatron-Core refuses
    under that overlap are dropped before the memory pruning and counted
    (:attr:`SearchResult.num_refused`).
    """
    check_precision(gpu, base.precision)  # every candidate keeps the base's precision
    chosen = stack or Stack.megatron_core()
    check_block_scaled_stack(chosen.name, base.precision)
    check_ep_overlap_model(arch, chosen)
    candidates = list(candidate_plans(arch, base, base.layout.num_gpus, nvlink_domain_gpus))
    fitting, refused = _fitting(arch, candidates, gpu, chosen)

    def time_plan(plan: ParallelPlan, fabric: CommModel) -> Prediction:
        return predict_step(
            arch, plan, gpu, fabric, nvlink_domain_gpus, chosen, calibration=calibration, host=host
        )

    recording = RecordingComm(comm, domain_gpus=nvlink_domain_gpus)
    found = _branch_and_bound(fitting, time_plan, recording, top, progress)
    if not found:
        overlap = (
            f" ({refused} refused under expert_parallel_overlap: {EP_OVERLAP_RULES})"
            if refused
            else ""
        )
        raise PlanError(
            f"no plan of {arch.id} on {base.layout.num_gpus} x {gpu.id} both divides the global batch "
            f"{base.global_batch} (micro-batch x DP must divide it) and fits in "
            f"{gpu.hbm_gib:.0f} GiB{overlap}; change the global batch, the GPU count or the GPU"
        )
    return SearchResult(found[:top], len(candidates), len(fitting), len(found), refused)
