"""Communicator groups of a training job, as arrays of global GPU ranks.

Megatron-LM's rank order (``parallel_state.initialize_model_parallel``): tensor-parallel
ranks are adjacent, then context parallel, then data parallel, then pipeline parallel::

    rank = tp + TP·(cp + CP·(dp + DP·pp))

The job's ranks land on GPUs by ``placement``: ``packed`` fills nodes in order (a scheduler
with topology-aware placement: consecutive nodes share leaves and rails), ``fragmented``
scatters the job over randomly chosen nodes of the whole fabric (a busy cluster's leftovers,
crossing many leaves).  Both use only nodes cabled to the compute fabric: spares outside it
(cold, or on a separate spare pool) never carry a rank.  Global GPU id = node · gpus_per_node + local GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

import numpy as np

from clusterforge.errors import PlanError, SimulationError
from clusterforge.job import GROUP_KINDS, JobLayout
from clusterforge.netsim.vocab import PLACEMENTS, Communicators, Placement

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = ["design_job", "groups_for"]


def _fabric_nodes(design: Design) -> int:
    """Nodes a job may run on: those cabled to the compute fabric, node ids ``[0, n)``.

    Training nodes come first, then spares (:class:`~clusterforge.design.ComputeDesign`);
    the fabric cables the first ``connectivity.num_nodes`` of them: all of them when spares
    are 'counted', the spares that fill free leaf ports with 'spare-ports', none with
    'spare-pool' (the pool's own leaves join no training leaf).  The other spares have no
    fabric link (cold spares are cabled in when they replace a failed node), so no job
    rank lands on them.
    """
    return min(design.fabric.connectivity.num_nodes, design.compute.num_nodes)


def _place(design: Design, num_gpus: int, placement: Placement, seed: int) -> np.ndarray:
    """Global GPU id of each job rank, on nodes cabled to the compute fabric."""
    gpn = design.compute.gpus_per_node
    nodes_needed = -(-num_gpus // gpn)
    usable = _fabric_nodes(design)
    if nodes_needed > usable:
        uncabled = design.compute.num_nodes - usable
        why = f" ({uncabled} spare nodes are not cabled to the fabric)" if uncabled else ""
        raise SimulationError(
            f"num_gpus: {num_gpus} GPUs need {nodes_needed} nodes, the design's fabric joins "
            f"{usable}{why}; ask for at most {usable * gpn}"
        )
    match placement:
        case "packed":
            nodes = np.arange(nodes_needed)
        case "fragmented":
            nodes = np.random.default_rng(seed).permutation(usable)[:nodes_needed]
        case _:
            assert_never(placement)
    ranks = np.arange(num_gpus)
    return nodes[ranks // gpn] * gpn + ranks % gpn


def design_job(
    design: Design, num_gpus: int | None = None, kind: Communicators = "dp"
) -> JobLayout:
    """The job whose ``kind`` groups are simulated: the design's job layout (pure data
    parallelism when the spec has no workload), on ``num_gpus`` GPUs when given with the same
    TP/PP/CP/EP and schedule, DP re-derived; one group over ``"all"`` GPUs needs no degrees,
    so any GPU count will do."""
    job = design.job or JobLayout(dp=design.compute.num_training_gpus)
    if num_gpus is None or num_gpus == job.num_gpus:
        return job
    try:
        return JobLayout.for_gpus(int(num_gpus)) if kind == "all" else job.on_gpus(int(num_gpus))
    except PlanError as exc:
        raise SimulationError(f"num_gpus: {exc}") from None


def groups_for(
    design: Design,
    kind: Communicators = "dp",
    *,
    layout: JobLayout | None = None,
    placement: Placement = "packed",
    seed: int = 0,
) -> np.ndarray:
    """Every ``kind`` group of the job ``layout`` placed on the design's GPUs, shape
    (num_groups, group_size), global GPU ids; ``"all"`` is one group over the job's GPUs.

    ``layout`` defaults to the design's job (:func:`design_job`).
    """
    if kind != "all" and kind not in GROUP_KINDS:
        raise SimulationError(
            f"groups: unknown group kind {kind!r}; use all or one of {', '.join(GROUP_KINDS)}"
        )
    if placement not in PLACEMENTS:
        raise SimulationError(
            f"placement: unknown placement {placement!r}; use packed or fragmented"
        )
    if not 0 <= int(seed) < 2**63:
        raise SimulationError(f"seed: {seed}; use a whole number from 0 to 2^63 - 1")
    job = design_job(design) if layout is None else layout
    gpu_of_rank = _place(design, job.num_gpus, placement, seed)
    if kind == "all":
        return gpu_of_rank[None, :]
    return np.asarray(gpu_of_rank[job.groups(kind)], np.int64)
