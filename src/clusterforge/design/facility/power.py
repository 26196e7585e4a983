"""Electrical formulas: circuit capacity, breaker choice, feed-loss and power capping.

* Three phase (balanced): ``P = √3 · V_LL · I · PF``; single phase ``P = V · I · PF``
  (IEEE Std 141, "Red Book", §3).
* Continuous load ≤ 80 % of the breaker rating (NEC 210.19/210.20/215.3), a parameter
  because IEC practice may rate circuits at nameplate.
* A and B feeds each carry the whole rack (2N distribution, Uptime Institute Tier III/IV
  concurrent maintainability: either feed alone must carry the load).
* Each circuit of a feed ends on one rack-end device of the rack's power path (catalog
  ``[[power_path]]``): a zero-U PDU the PSUs plug into, or a power shelf on the rack's DC busbar
  reached through a busway tap-off box.  The device caps the breaker (a zero-U PDU takes at
  most a 60/63 A inlet) and, for a power shelf, the load per circuit (its rated output), so a
  dense rack gets several circuits per feed, never one oversized whip.
* The current shown is per phase of one circuit, the quantity its breaker is rated for:
  ``I = (P / circuits per feed) / (√3·V·PF)``; ``breaker_load = I / breaker``, and the
  utilization is that over the continuous-load factor.
* Power capping: CMOS dynamic power ``P ∝ f·V²`` with ``V ∝ f`` gives ``P ∝ f³``, so a GPU held
  at a share ``c`` of its TDP keeps about ``c^(1/3)`` of its clock-bound throughput.  This is
  an optimistic bound for compute-bound work ([D], first principles); NVIDIA allows power
  limits down to roughly half of TDP on H100-class parts [U], which we take as the floor.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import PowerPath
from clusterforge.catalog.power_limit import MIN_POWER_LIMIT_FRACTION, rate_share_at_limit
from clusterforge.errors import CapacityError
from clusterforge.spec import FacilitySpec

__all__ = [
    "MIN_POWER_CAP_FRACTION",
    "STANDARD_BREAKERS_A",
    "Circuit",
    "PowerCap",
    "circuit_kva",
    "phase_current_a",
    "plan_circuits",
    "propose_power_cap",
]

STANDARD_BREAKERS_A = (16, 20, 30, 32, 40, 50, 60, 63, 80, 100, 125)
MIN_POWER_CAP_FRACTION = MIN_POWER_LIMIT_FRACTION  # the range the power-to-rate relation covers


class Circuit(BaseModel):
    """The feed of one rack: per feed, ``circuits_per_feed`` circuits of one breaker size, each
    ending on one rack-end device of the power path."""

    model_config = ConfigDict(frozen=True)
    power_path: str = Field(description="Catalog power path: how each circuit reaches the rack")
    voltage_v: float
    phases: int
    breaker_a: float = Field(description="Breaker rating of each circuit, A per phase")
    usable_kva: float = Field(description="Per circuit, after the continuous-load factor")
    usable_kw: float = Field(description="usable_kva x power factor")
    circuits_per_feed: int
    num_feeds: int
    load_kw: float = Field(description="Rack load each feed must carry alone")
    phase_current_a: float = Field(
        description="Per-phase current of one circuit when its feed carries the whole rack "
        "(the load shared by the feed's circuits): the quantity breaker_a rates"
    )
    breaker_load: float = Field(description="phase_current_a / breaker_a")
    utilization: float = Field(
        description="Load over the feed's usable capacity (= breaker_load / continuous-load factor)"
    )

    @property
    def num_whips(self) -> int:
        return self.circuits_per_feed * self.num_feeds


class PowerCap(BaseModel):
    """A proposal to cap GPU power so one node fits the rack limit."""

    model_config = ConfigDict(frozen=True)
    gpu_power_limit_w: float
    gpu_tdp_w: float
    node_max_kw: float = Field(description="Node max power with the cap applied")
    throughput_factor: float = Field(
        description=(
            "(cap/TDP)^0.705: the share of its matmul rate a capped GPU keeps "
            "(clusterforge.catalog.power_limit)"
        )
    )
    reason: str


def circuit_kva(voltage_v: float, breaker_a: float, phases: int, load_factor: float) -> float:
    """Usable apparent power of one circuit, kVA: √3·V·I·f (3φ) or V·I·f (1φ)."""
    root = math.sqrt(3) if phases == 3 else 1.0
    return root * voltage_v * breaker_a * load_factor / 1000


def phase_current_a(load_kw: float, voltage_v: float, phases: int, power_factor: float) -> float:
    """Per-phase current, A: I = P / (√3·V·PF) for 3φ, P / (V·PF) for 1φ."""
    root = math.sqrt(3) if phases == 3 else 1.0
    return load_kw * 1000 / (root * voltage_v * power_factor)


def plan_circuits(load_kw: float, facility: FacilitySpec, path: PowerPath) -> Circuit:
    """Circuits for one rack on power path ``path``: each feed carries the whole load (A+B).

    Per circuit, the path's rack-end device caps the breaker (``max_breaker_a``) and, for a
    power shelf, the load (its rated kW).  With ``facility.breaker_a`` set, enough circuits of
    that size; otherwise the fewest circuits the device allows, each on the smallest standard
    breaker that carries its share.
    """
    f = facility
    device_kw = path.circuit_max_kw or math.inf

    def usable_kw(amps: float) -> float:
        return circuit_kva(f.voltage_v, amps, f.phases, f.continuous_load_factor) * f.power_factor

    if f.breaker_a is not None and f.breaker_a > path.max_breaker_a:
        raise CapacityError(
            f"facility.breaker_a: {f.breaker_a:g} A is over the {path.max_breaker_a:g} A the "
            f"rack end of a {path.id} circuit takes; set at most {path.max_breaker_a:g} or leave "
            "it unset to let the planner choose"
        )
    top = f.breaker_a or max(a for a in STANDARD_BREAKERS_A if a <= path.max_breaker_a)
    count = max(1, math.ceil(load_kw / min(usable_kw(top), device_kw) - 1e-9))
    if count > path.max_circuits_per_feed and path.circuit_max_kw is not None:
        # A rack-scale system holds a fixed set of power shelves: more load than one feed's
        # shelves deliver is still fed (both feeds share it), but a feed alone cannot carry
        # it; the utilization over 1 says so and the feed-loss rule reports it.
        count = path.max_circuits_per_feed
    elif count > path.max_circuits_per_feed:
        raise CapacityError(
            f"facility: a {load_kw:.1f} kW rack needs {count:,} circuits per feed at "
            f"{f.voltage_v:g} V, {top:g} A ({min(usable_kw(top), device_kw):.2f} kW each); a rack "
            f"takes at most {path.max_circuits_per_feed} per feed ({path.id}): raise "
            f"facility.breaker_a (at most {path.max_breaker_a:g} A here) or facility.voltage_v, "
            "or lower facility.max_rack_kw"
        )
    share_kw = load_kw / count
    amps = f.breaker_a or min(
        a
        for a in STANDARD_BREAKERS_A
        if a <= top and usable_kw(a) >= min(share_kw, device_kw) - 1e-9
    )
    current = phase_current_a(share_kw, f.voltage_v, f.phases, f.power_factor)
    return Circuit(
        power_path=path.id,
        voltage_v=f.voltage_v,
        phases=f.phases,
        breaker_a=amps,
        usable_kva=circuit_kva(f.voltage_v, amps, f.phases, f.continuous_load_factor),
        usable_kw=usable_kw(amps),
        circuits_per_feed=count,
        num_feeds=f.feeds_per_rack,
        load_kw=load_kw,
        phase_current_a=current,
        breaker_load=current / amps,
        utilization=share_kw / usable_kw(amps),
    )


def propose_power_cap(
    node_max_kw: float,
    num_gpus: int,
    gpu_tdp_w: float,
    limit_kw: float,
    field: str,
    gpu_limit_w: float | None = None,
) -> PowerCap:
    """Cap each GPU so a node draws at most ``limit_kw``; refuse below half of TDP.
    ``node_max_kw`` is the node's draw with its GPUs at ``gpu_limit_w`` (the spec's
    ``gpu_power_limit_w``; TDP when None)."""
    excess_w = (node_max_kw - limit_kw) * 1000
    cap_w = (gpu_limit_w or gpu_tdp_w) - excess_w / num_gpus
    if cap_w < MIN_POWER_CAP_FRACTION * gpu_tdp_w:
        raise CapacityError(
            f"{field}: {limit_kw:g} kW is below one node ({node_max_kw:g} kW max) even with GPUs "
            f"capped at {MIN_POWER_CAP_FRACTION:.0%} of their {gpu_tdp_w:g} W TDP; raise "
            "facility.max_rack_kw, add a cooling method, or choose a smaller node"
        )
    factor = rate_share_at_limit(cap_w, gpu_tdp_w)
    return PowerCap(
        gpu_power_limit_w=round(cap_w, 1),
        gpu_tdp_w=gpu_tdp_w,
        node_max_kw=limit_kw,
        throughput_factor=factor,
        reason=f"one node draws {node_max_kw:g} kW max, over the {limit_kw:g} kW rack limit",
    )
