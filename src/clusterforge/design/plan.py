"""The design pipeline: one function per stage, composed by :func:`plan`."""

from __future__ import annotations

import math

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.cabling.links import design_cabling
from clusterforge.design.compute import size_compute
from clusterforge.design.cost.bom import (
    Parts,
    bill_of_materials,
    power_summary,
)
from clusterforge.design.cost.tco import CostDesign, cost_design
from clusterforge.design.fabric.network import design_compute_fabric
from clusterforge.design.fabric.support import design_support_fabrics
from clusterforge.design.facility.layout import choose_density, lay_out
from clusterforge.design.management import management_servers
from clusterforge.design.result import Design
from clusterforge.design.rules import evaluate
from clusterforge.design.storage import size_storage
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec, job_layout, resolve_node_id

__all__ = ["Design", "break_even_gpus", "management_servers", "plan"]

BREAK_EVEN_MAX_GPUS = 32768
BREAK_EVEN_REFERENCE_GPUS = 2048
BREAK_EVEN_PLANS = 5  # refinement plans after the two fitted points


def plan(spec: ClusterSpec, catalog: Catalog | None = None, *, break_even: bool = True) -> Design:
    """Design the cluster described by ``spec`` (pure: no I/O)."""
    catalog = catalog or load_catalog()
    compute = size_compute(spec, catalog)
    storage = size_storage(spec, catalog, compute.num_training_gpus)
    fabric = design_compute_fabric(spec, compute, catalog)
    density = choose_density(spec, compute)
    management = management_servers(spec, compute)
    mgmt = sum(management.values())
    # The OOB fabric needs a port per PDU, known only once racks are laid out: start from an
    # estimate and re-lay until the support fabrics stop changing (one extra pass in practice).
    pdu_estimate = 2 * (
        math.ceil(compute.num_nodes / density.nodes_per_rack) + fabric.num_switches // 10 + 2
    )
    support = design_support_fabrics(spec, compute, fabric, storage, catalog, pdu_estimate, mgmt)
    layout = lay_out(spec, compute, fabric, support, storage, catalog, density, mgmt)
    for _ in range(3):
        num_pdus = sum(r.circuit.num_whips for r in layout.racks)
        resized = design_support_fabrics(spec, compute, fabric, storage, catalog, num_pdus, mgmt)
        if resized == support:
            break
        support = resized
        layout = lay_out(spec, compute, fabric, support, storage, catalog, density, mgmt)
    cabling = design_cabling(compute, fabric, support, storage, layout, catalog)
    parts = Parts(
        spec=spec,
        compute=compute,
        fabric=fabric,
        support=support,
        storage=storage,
        layout=layout,
        cabling=cabling,
        catalog=catalog,
        management=management,
    )
    bom = bill_of_materials(parts)
    power = power_summary(parts)
    cost = cost_design(
        spec, gpu=compute.gpu, num_training_gpus=compute.num_training_gpus, bom=bom, power=power
    )
    if break_even and not cost.build_wins:
        cost = cost.model_copy(update={"break_even_gpus": break_even_gpus(spec, catalog, cost)})
    design = Design(
        spec=spec,
        job=job_layout(spec, catalog),
        compute=compute,
        storage=storage,
        fabric=fabric,
        support_fabrics=support,
        layout_density=density,
        racks=layout.racks,
        cabling=cabling,
        power=power,
        bom=bom,
        cost=cost,
        layout=layout,
        catalog=catalog,
    )
    return design.model_copy(update={"findings": evaluate(design)})


def _at_size(spec: ClusterSpec, num_gpus: int) -> ClusterSpec:
    """The same spec at ``num_gpus``, its workload reduced to data parallelism so that any
    whole number of nodes is a valid size."""
    workload = spec.workload and spec.workload.model_copy(
        update={
            "tensor_parallel": 1,
            "pipeline_parallel": 1,
            "context_parallel": 1,
            "expert_parallel": 1,
            "data_parallel": None,
            "global_batch": num_gpus,
            "micro_batch": 1,
            "pipeline_layers": None,
        }
    )
    return spec.model_copy(update={"num_gpus": num_gpus, "workload": workload})


def _gap_usd(spec: ClusterSpec, catalog: Catalog, num_gpus: int) -> float | None:
    """Build total minus rent total at ``num_gpus`` (negative: building wins); None when no
    fabric of the spec's kind, nor a rail-optimized one, reaches that size."""
    sized = _at_size(spec, num_gpus)
    try:
        cost = plan(sized, catalog, break_even=False).cost
    except CapacityError:
        # The spec's own topology may not grow (a single switch): compare on one that does.
        network = spec.network.model_copy(
            update={"topology": "rail-optimized", "tiers": None, "link_aggregation": False}
        )
        try:
            cost = plan(
                sized.model_copy(update={"network": network}), catalog, break_even=False
            ).cost
        except CapacityError:
            return None
    return cost.build_total_usd - cost.rent_total_usd


def break_even_gpus(
    spec: ClusterSpec, catalog: Catalog | None = None, cost: CostDesign | None = None
) -> int | None:
    """Smallest GPU count (whole nodes) at which building beats renting, all else equal.

    Building costs about F + v·N for N GPUs (F: staff, management servers, the smallest
    fabric; v: a node's share of hardware, power, racks and fabric) and renting r·N, so the
    gap build − rent is close to linear in N and crosses zero at N* = F / (r − v). The gap
    is planned at the spec's size (``cost``, when the caller has it) and at a second size
    (one node when the spec's size already wins, else a larger reference), then N* is refined
    by regula falsi on planned designs: at most 2 + BREAK_EVEN_PLANS plans in all, none above
    BREAK_EVEN_MAX_GPUS. Returns the smallest planned size where building won, or None when
    the gap does not shrink with size or no planned size up to the cap wins.
    """
    catalog = catalog or load_catalog()
    step = catalog.nodes[resolve_node_id(spec, catalog)].num_gpus
    points: dict[int, float] = {}
    if cost is not None:
        points[spec.num_gpus] = cost.build_total_usd - cost.rent_total_usd
    elif (gap := _gap_usd(spec, catalog, spec.num_gpus)) is not None:
        points[spec.num_gpus] = gap
    if not points:
        return None
    second = _second_size(spec.num_gpus, step, wins=points[spec.num_gpus] < 0)
    if second not in points and (gap := _gap_usd(spec, catalog, second)) is not None:
        points[second] = gap
    for _ in range(BREAK_EVEN_PLANS):
        guess = _next_guess(points, step)
        if guess is None or guess in points:
            break
        gap = _gap_usd(spec, catalog, guess)
        if gap is None:
            break
        points[guess] = gap
    winners = [n for n, gap in points.items() if gap < 0]
    return min(winners) if winners else None


def _second_size(num_gpus: int, step: int, *, wins: bool) -> int:
    """The second size of the linear fit: one node when the spec's size already wins (the
    crossing lies below), else 2,048 GPUs for small specs and half the spec above."""
    if wins:
        return step
    if num_gpus < BREAK_EVEN_REFERENCE_GPUS // 2:
        return BREAK_EVEN_REFERENCE_GPUS // step * step
    return max(step, num_gpus // 2 // step * step)


def _next_guess(points: dict[int, float], step: int) -> int | None:
    """Where the line through the two points nearest the sign change crosses zero, rounded up
    to whole nodes; None when bracketed to one node, when the gap does not shrink with size,
    or when the crossing lies beyond the cap."""
    losers = sorted(n for n, gap in points.items() if gap >= 0)
    winners = sorted(n for n, gap in points.items() if gap < 0)
    if losers and winners:
        a, b = losers[-1], winners[0]
        if b - a <= step:
            return None
    elif len(losers) >= 2:
        a, b = losers[-2], losers[-1]
    elif len(winners) >= 2:
        a, b = winners[0], winners[1]
    else:
        return None
    slope = (points[b] - points[a]) / (b - a)
    if slope >= 0:
        return None
    crossing = a - points[a] / slope
    guess = max(step, math.ceil(crossing / step) * step)
    if losers and winners:
        guess = min(max(guess, a + step), b - step)
    return guess if guess <= BREAK_EVEN_MAX_GPUS else None
