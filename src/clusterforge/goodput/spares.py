"""Each way to hold spares, side by side: what it adds to the bill and what it gives back.

The spec holds spares one way (``spare_fraction`` with ``network.spares``, or
``spare_nodes_per_nvlink_domain``); a buyer wants the others priced beside it without
planning the spec again and again.  Each option is the spec with its spares changed, planned
(capex and four-year cost from the design) and priced by the expected goodput model (ETTR,
expected days): none, whole spare nodes on free leaf ports, on a pool of their own, cabled
like training nodes, and (rack-scale NVLink domains) trays held as hot spares in every rack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clusterforge.design.spares import SpareMode, spares_held
from clusterforge.goodput.analysis import inputs_from_design
from clusterforge.goodput.expected import DAY_S, expected_goodput

if TYPE_CHECKING:
    from clusterforge.design import Design
    from clusterforge.spec import ClusterSpec

__all__ = ["DEFAULT_SPARE_FRACTION", "DOMAIN_SPARES", "SpareOption", "spare_options"]

# What an option with whole spare nodes keeps when the spec keeps none: the spec's own
# default (the no-spares finding's advice, 5 % of the nodes).
DEFAULT_SPARE_FRACTION = 0.05
# In-rack spares when the spec keeps none: 2 a domain, jobs on 16 of 18 GB200 NVL72 trays
# (NVIDIA's Slurm guidance for NVL72 recommends 16-node segments for large jobs).
DOMAIN_SPARES = 2


@dataclass(frozen=True)
class SpareOption:
    """One way to hold spares, planned and priced."""

    mode: SpareMode
    summary: str  # the spares held, in words
    num_spare_nodes: int
    capex_usd: float
    capex_delta_usd: float  # against the design as planned
    build_total_usd: float  # capex plus the years' opex
    build_delta_usd: float
    ettr: float
    expected_days: float
    as_designed: bool

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _variants(spec: ClusterSpec, has_domains: bool) -> list[ClusterSpec]:
    """The spec with each other way to hold spares (its own first)."""
    fraction = spec.spare_fraction if spec.spare_fraction > 0 else DEFAULT_SPARE_FRACTION
    per_domain = spec.spare_nodes_per_nvlink_domain or DOMAIN_SPARES
    whole = {"spare_fraction": fraction, "spare_nodes_per_nvlink_domain": 0}
    specs = [
        spec.model_copy(update={"spare_fraction": 0.0, "spare_nodes_per_nvlink_domain": 0}),
        *(
            spec.model_copy(
                update={**whole, "network": spec.network.model_copy(update={"spares": mode})}
            )
            for mode in ("spare-ports", "spare-pool", "counted")
        ),
    ]
    if has_domains:
        specs.append(
            spec.model_copy(
                update={"spare_fraction": 0.0, "spare_nodes_per_nvlink_domain": per_domain}
            )
        )
    return specs


def _option(
    design: Design, base: Design, days: float | None, step_s: float | None, *, own: bool
) -> SpareOption:
    held = spares_held(design)
    expected = expected_goodput(inputs_from_design(design, days=days, step_s=step_s))
    cost, base_cost = design.cost, base.cost
    return SpareOption(
        mode=held.mode,
        summary=held.summary,
        num_spare_nodes=held.num_spare_nodes,
        capex_usd=cost.capex_usd,
        capex_delta_usd=cost.capex_usd - base_cost.capex_usd,
        build_total_usd=cost.build_total_usd,
        build_delta_usd=cost.build_total_usd - base_cost.build_total_usd,
        ettr=expected.ettr,
        expected_days=expected.wall_s / DAY_S,
        as_designed=own,
    )


def spare_options(
    design: Design, *, days: float | None = None, step_s: float | None = None
) -> tuple[SpareOption, ...]:
    """The design's own spares and every other way to hold them, each planned and priced
    (``days``: the failure-free time to train; None: the performance model predicts it;
    ``step_s``: one training step, which checkpoints fall between).
    An option that plans to the same spares as the design's own is not repeated."""
    from clusterforge.design import plan

    own = spares_held(design)
    options = [_option(design, design, days, step_s, own=True)]
    seen = {(own.mode, own.num_spare_nodes)}
    for spec in _variants(design.spec, bool(design.compute.node.rack_scale_nodes)):
        variant = plan(spec)
        held = spares_held(variant)
        if (held.mode, held.num_spare_nodes) in seen:
            continue
        seen.add((held.mode, held.num_spare_nodes))
        options.append(_option(variant, design, days, step_s, own=False))
    return tuple(options)
