"""Rules about racks, power and cooling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from clusterforge.design.cabling.media import fiber_media, pick_media
from clusterforge.design.facility.cooling import COOLING_BAND_KW
from clusterforge.design.facility.hall import hall_of
from clusterforge.design.facility.layout import limited_node_kw
from clusterforge.design.rules.finding import Finding

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = [
    "air_cooling_over_band",
    "cooling_limits_density",
    "cooling_unsupported_by_node",
    "feed_loss",
    "floor_overloaded",
    "hall_shape_long_runs",
    "power_cap_required",
    "rack_power_over_cap",
]

# Air cooling is comfortable up to about 20 kW per rack and needs aisle containment above it
# (ASHRAE TC 9.9, Thermal Guidelines for Data Processing Environments, 5th ed.; Uptime
# Institute Global Data Center Survey 2024 on rack densities).
AIR_COMFORT_KW = 20.0

# The facility cooling methods a node's own cooling works with: an air-cooled server takes
# room air, contained or cooled at the rear door; a cold-plate (liquid) server needs a
# direct-to-chip loop. Immersion needs servers built for it (no fans, every part compatible
# with the fluid: the Open Compute Project's Advanced Cooling Solutions immersion
# requirements); the catalog's nodes are air-cooled (e.g. DGX H100 and DGX B200, whose user
# guides give their airflow) or cold-plate liquid-cooled (GB200 NVL72), none immersion-rated.
SUPPORTED_COOLING = {"air": ("air", "rear-door"), "liquid": ("direct-to-chip",)}


def rack_power_over_cap(d: Design) -> list[Finding]:
    den, node, f = d.layout_density, d.compute.node, d.spec.facility
    by_u = den.usable_u // node.u_height
    # Fire when the power limit leaves more than half of the rack's height unused.
    if (
        node.rack_scale_nodes
        or 2 * den.nodes_per_rack > by_u
        or d.compute.num_nodes <= den.nodes_per_rack
    ):
        return []
    full_kw = by_u * limited_node_kw(d.compute)
    return [
        Finding(
            id="rack-power-over-cap",
            severity="warning" if den.nodes_per_rack < 2 else "info",
            message=f"a full rack of {by_u} x {node.id} would draw {full_kw:.1f} kW, over the "
            f"{den.limit_kw:g} kW limit ({den.limited_by}); planned {den.nodes_per_rack} per rack",
            numbers={
                "nodes_by_u": by_u,
                "full_rack_kw": full_kw,
                "limit_kw": den.limit_kw,
                "nodes_per_rack": den.nodes_per_rack,
                "max_rack_kw": f.max_rack_kw,
            },
            fix="negotiate more kW per rack or liquid cooling to use fewer racks, floor and cables",
        )
    ]


def power_cap_required(d: Design) -> list[Finding]:
    cap = d.layout_density.power_cap
    if cap is None:
        return []
    return [
        Finding(
            id="power-cap-required",
            severity="warning",
            message=f"{cap.reason}: cap each GPU at {cap.gpu_power_limit_w:.0f} W (TDP "
            f"{cap.gpu_tdp_w:.0f} W), costing up to {1 - cap.throughput_factor:.0%} of throughput",
            numbers={
                "gpu_power_limit_w": cap.gpu_power_limit_w,
                "gpu_tdp_w": cap.gpu_tdp_w,
                "throughput_factor": round(cap.throughput_factor, 3),
            },
            fix=f"set `nvidia-smi -pl {cap.gpu_power_limit_w:.0f}` on every node, or raise "
            "facility.max_rack_kw / add liquid cooling",
        )
    ]


def air_cooling_over_band(d: Design) -> list[Finding]:
    hot = [r for r in d.racks if r.cooling.method == "air" and r.max_kw > AIR_COMFORT_KW]
    if not hot:
        return []
    worst = max(hot, key=lambda r: r.max_kw)
    return [
        Finding(
            id="air-cooling-over-band",
            severity="warning",
            message=f"{len(hot)} air-cooled racks exceed {AIR_COMFORT_KW:g} kW (worst {worst.name}: "
            f"{worst.max_kw:.1f} kW); air needs hot/cold-aisle containment up to "
            f"{COOLING_BAND_KW['air']:g} kW",
            numbers={
                "racks": len(hot),
                "worst_kw": worst.max_kw,
                "air_band_kw": COOLING_BAND_KW["air"],
            },
            fix="confirm aisle containment with the facility, or use rear-door heat exchangers",
        )
    ]


def cooling_limits_density(d: Design) -> list[Finding]:
    den = d.layout_density
    if den.limited_by != "cooling band":
        return []
    return [
        Finding(
            id="cooling-limits-density",
            severity="info",
            message=f"the best cooling available ({', '.join(d.spec.facility.cooling_available)}) "
            f"removes {den.limit_kw:g} kW per rack, below the contracted "
            f"{d.spec.facility.max_rack_kw:g} kW",
            numbers={"limit_kw": den.limit_kw, "max_rack_kw": d.spec.facility.max_rack_kw},
            fix="add rear-door or direct-to-chip cooling to use the contracted power",
        )
    ]


def feed_loss(d: Design) -> list[Finding]:
    node = d.compute.node
    if d.spec.facility.feeds_per_rack < 2:
        return []
    if not node.num_psus:
        return _shelf_feed_loss(d)
    left_kw = node.num_psus // 2 * node.psu_kw
    need = d.layout_density.node_max_kw
    if left_kw >= need:
        return []
    return [
        Finding(
            id="feed-loss-exceeds-psus",
            severity="warning",
            message=f"losing one feed leaves {node.num_psus // 2} of {node.num_psus} PSUs = "
            f"{left_kw:.1f} kW, below the {need:g} kW node max: nodes throttle or shut down at load",
            numbers={"psu_kw_after_feed_loss": left_kw, "node_max_kw": need},
            fix="accept power-brake on feed loss, cap GPU power, or check the vendor's site guide",
        )
    ]


def floor_overloaded(d: Design) -> list[Finding]:
    """Racks whose mass over their footprint exceeds the floor's distributed-load rating."""
    rating = d.spec.facility.floor_rating_kn_per_m2
    heavy = [r for r in d.racks if r.floor.load_kn_per_m2 > rating]
    if not heavy:
        return []
    worst = max(heavy, key=lambda r: r.floor.load_kn_per_m2)
    load = worst.floor
    return [
        Finding(
            id="floor-overloaded",
            severity="warning",
            message=f"{len(heavy):,} {'rack loads' if len(heavy) == 1 else 'racks load'} the floor "
            f"beyond its {rating:g} kN/m2 rating (worst "
            f"{worst.name}: {load.mass_kg:,.0f} kg on {load.footprint_m2:.2f} m2 = "
            f"{load.load_kn_per_m2:.1f} kN/m2, {load.point_load_kn:.2f} kN per foot)",
            numbers={
                "racks": len(heavy),
                "worst_mass_kg": round(load.mass_kg),
                "worst_kn_per_m2": load.load_kn_per_m2,
                "floor_rating_kn_per_m2": rating,
            },
            fix="have a structural engineer check the slab (spreader plates or plinths spread "
            "the load), place these racks on slab rather than raised floor, or set "
            "facility.floor_rating_kn_per_m2 to the floor's certified rating",
        )
    ]


def cooling_unsupported_by_node(d: Design) -> list[Finding]:
    """GPU racks cooled by a method the node's own cooling does not work with."""
    node = d.compute.node
    supported = SUPPORTED_COOLING[node.cooling]
    wrong = sorted({r.cooling.method for r in d.racks if r.role == "gpu"} - set(supported))
    if not wrong:
        return []
    return [
        Finding(
            id="cooling-unsupported-by-node",
            severity="error",
            message=f"GPU racks are cooled by {', '.join(wrong)}, but {node.id} is a "
            f"{node.cooling}-cooled system that supports only {', '.join(supported)} "
            "(vendor specification)",
            numbers={"node_cooling": node.cooling, "rack_cooling": ", ".join(wrong)},
            fix=f"offer {' or '.join(supported)} in facility.cooling_available, or choose a "
            "node rated for the facility's cooling",
        )
    ]


def _shelf_feed_loss(d: Design) -> list[Finding]:
    """Rack-scale systems on power shelves: one feed's shelves must carry the whole rack."""
    short = [r for r in d.racks if r.role == "gpu" and r.circuit.utilization > 1 + 1e-9]
    if not short:
        return []
    c = short[0].circuit
    return [
        Finding(
            id="feed-loss-exceeds-psus",
            severity="warning",
            message=f"losing one feed leaves {c.circuits_per_feed} power shelves on "
            f"{c.circuits_per_feed} x {c.breaker_a:g} A circuits ({c.usable_kw * c.circuits_per_feed:.1f}"
            f" kW usable) for a {c.load_kw:.1f} kW rack: the rack throttles or trips at full load",
            numbers={
                "racks": len(short),
                "feed_kw_after_loss": c.usable_kw * c.circuits_per_feed,
                "rack_max_kw": c.load_kw,
            },
            fix="accept power-brake on feed loss, cap GPU power, or check the vendor's site guide",
        )
    ]


# A hall whose shape alone doubles its longest runs (aspect ratio about 14:1 and beyond).
HALL_SHAPE_FACTOR_LIMIT = 2.0


def hall_shape_long_runs(d: Design) -> list[Finding]:
    """A long, narrow hall: its shape, not its size, stretches the compute fabric's longest
    run past the reach of the medium a square hall of the same area would need.

    The longest run scales with half the hall's perimeter (cables from the middle core block,
    along and across the rows; :mod:`clusterforge.design.facility.hall`), so a square hall's
    longest run is this one divided by :attr:`Hall.shape_factor`.  It fires when that factor
    is at least :data:`HALL_SHAPE_FACTOR_LIMIT` and the two runs need different media (a
    longer-reach, dearer optic: single-mode DR4 at 500 m instead of 100 m, or multimode SR4
    at 50 m, catalog media.toml)."""
    compute = [c for c in d.cabling if c.fabric == "compute" and c.num_links]
    if not compute or not d.racks:
        return []
    hall = hall_of(d.racks, d.spec.facility)
    longest = max(compute, key=lambda c: c.length_m_max)
    square_m = longest.length_m_max / hall.shape_factor
    media = fiber_media(d.catalog, longest.gbit_per_s)
    if hall.shape_factor < HALL_SHAPE_FACTOR_LIMIT or not media:
        return []
    here, square = pick_media(np.array([longest.length_m_max, square_m]), media, what="hall")
    if here == square:
        return []
    return [
        Finding(
            id="hall-shape-long-runs",
            severity="warning",
            message=f"the hall is {hall.width_m:.1f} m x {hall.depth_m:.0f} m "
            f"({hall.aspect_ratio:.0f}:1): its longest {longest.name} run is "
            f"{longest.length_m_max:.0f} m on {media[here].id}, where a square hall of the same "
            f"{hall.area_m2:,.0f} m2 ({hall.square_side_m:.0f} m a side) would need about "
            f"{square_m:.0f} m on {media[square].id} ({hall.shape_factor:.1f}x shorter)",
            numbers={
                "hall_width_m": hall.width_m,
                "hall_depth_m": hall.depth_m,
                "aspect_ratio": hall.aspect_ratio,
                "shape_factor": hall.shape_factor,
                "longest_run_m": longest.length_m_max,
                "square_hall_run_m": square_m,
                "medium": media[here].id,
                "square_hall_medium": media[square].id,
            },
            fix="raise facility.racks_per_row (longer rows, fewer of them) toward a square "
            "floor, or split the cluster over halls joined at the core",
        )
    ]
