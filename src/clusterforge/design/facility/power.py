"""Electrical formulas: circuit capacity, breaker choice, feed-loss and power capping.

* Three phase (balanced): ``P = √3 · V_LL · I · PF``; single phase ``P = V · I · PF``
  (IEEE Std 141, "Red Book", §3).
* Continuous load ≤ 80 % of the breaker rating (NEC 210.19/210.20/215.3), a parameter
  because IEC practice may rate circuits at nameplate.
* A and B feeds each carry the whole rack (2N distribution, Uptime Institute Tier III/IV
  concurrent maintainability: either feed alone must carry the load).
* Power capping: CMOS dynamic power ``P ∝ f·V²`` with ``V ∝ f`` gives ``P ∝ f³``, so a GPU held
  at a share ``c`` of its TDP keeps about ``c^(1/3)`` of its clock-bound throughput.  This is
  an optimistic bound for compute-bound work ([D], first principles); NVIDIA allows power
  limits down to roughly half of TDP on H100-class parts [U], which we take as the floor.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.errors import CapacityError
from clusterforge.spec import FacilitySpec

__all__ = [
    "MAX_CIRCUITS_PER_FEED",
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
MIN_POWER_CAP_FRACTION = 0.5
# Zero-U PDUs hang in a rack's two rear vertical channels, a few per side; beyond four whips
# per feed the rack cannot hold the PDUs [U, rack vendors' accessory guides].
MAX_CIRCUITS_PER_FEED = 4


class Circuit(BaseModel):
    """The feed of one rack: per feed, ``circuits_per_feed`` whips of one breaker size."""

    model_config = ConfigDict(frozen=True)
    voltage_v: float
    phases: int
    breaker_a: float
    usable_kva: float = Field(description="Per circuit, after the continuous-load factor")
    usable_kw: float = Field(description="usable_kva x power factor")
    circuits_per_feed: int
    num_feeds: int
    load_kw: float = Field(description="Rack load each feed must carry alone")
    phase_current_a: float = Field(description="Per-phase current of one feed at full rack load")
    utilization: float = Field(description="Load over the feed's usable capacity")

    @property
    def num_whips(self) -> int:
        return self.circuits_per_feed * self.num_feeds


class PowerCap(BaseModel):
    """A proposal to cap GPU power so one node fits the rack limit."""

    model_config = ConfigDict(frozen=True)
    gpu_power_limit_w: float
    gpu_tdp_w: float
    node_max_kw: float = Field(description="Node max power with the cap applied")
    throughput_factor: float = Field(description="(cap/TDP)^(1/3): expected share of throughput")
    reason: str


def circuit_kva(voltage_v: float, breaker_a: float, phases: int, load_factor: float) -> float:
    """Usable apparent power of one circuit, kVA: √3·V·I·f (3φ) or V·I·f (1φ)."""
    root = math.sqrt(3) if phases == 3 else 1.0
    return root * voltage_v * breaker_a * load_factor / 1000


def phase_current_a(load_kw: float, voltage_v: float, phases: int, power_factor: float) -> float:
    """Per-phase current, A: I = P / (√3·V·PF) for 3φ, P / (V·PF) for 1φ."""
    root = math.sqrt(3) if phases == 3 else 1.0
    return load_kw * 1000 / (root * voltage_v * power_factor)


def plan_circuits(load_kw: float, facility: FacilitySpec) -> Circuit:
    """Circuits for one rack: each feed carries the whole load (A+B), whips of one size.

    With ``breaker_a`` set, enough whips of that size per feed; otherwise the smallest
    standard breaker that carries the rack on one whip, or several of the largest.
    """
    f = facility

    def usable_kw(amps: float) -> float:
        return circuit_kva(f.voltage_v, amps, f.phases, f.continuous_load_factor) * f.power_factor

    if f.breaker_a is not None:
        amps = f.breaker_a
    else:
        fitting = [a for a in STANDARD_BREAKERS_A if usable_kw(a) >= load_kw]
        amps = fitting[0] if fitting else STANDARD_BREAKERS_A[-1]
    per_circuit = usable_kw(amps)
    count = max(1, math.ceil(load_kw / per_circuit - 1e-9))
    if count > MAX_CIRCUITS_PER_FEED:
        raise CapacityError(
            f"facility: a {load_kw:.1f} kW rack needs {count:,} circuits per feed at "
            f"{f.voltage_v:g} V, {amps:g} A ({per_circuit:.2f} kW usable each); a rack takes at "
            f"most {MAX_CIRCUITS_PER_FEED} PDUs per feed: raise facility.breaker_a or "
            "facility.voltage_v"
        )
    return Circuit(
        voltage_v=f.voltage_v,
        phases=f.phases,
        breaker_a=amps,
        usable_kva=circuit_kva(f.voltage_v, amps, f.phases, f.continuous_load_factor),
        usable_kw=per_circuit,
        circuits_per_feed=count,
        num_feeds=f.feeds_per_rack,
        load_kw=load_kw,
        phase_current_a=phase_current_a(load_kw, f.voltage_v, f.phases, f.power_factor),
        utilization=load_kw / (per_circuit * count),
    )


def propose_power_cap(
    node_max_kw: float, num_gpus: int, gpu_tdp_w: float, limit_kw: float, field: str
) -> PowerCap:
    """Cap each GPU so a node draws at most ``limit_kw``; refuse below half of TDP."""
    excess_w = (node_max_kw - limit_kw) * 1000
    cap_w = gpu_tdp_w - excess_w / num_gpus
    if cap_w < MIN_POWER_CAP_FRACTION * gpu_tdp_w:
        raise CapacityError(
            f"{field}: {limit_kw:g} kW is below one node ({node_max_kw:g} kW max) even with GPUs "
            f"capped at {MIN_POWER_CAP_FRACTION:.0%} of their {gpu_tdp_w:g} W TDP; raise "
            "facility.max_rack_kw, add a cooling method, or choose a smaller node"
        )
    factor = (cap_w / gpu_tdp_w) ** (1 / 3)
    return PowerCap(
        gpu_power_limit_w=round(cap_w, 1),
        gpu_tdp_w=gpu_tdp_w,
        node_max_kw=limit_kw,
        throughput_factor=factor,
        reason=f"one node draws {node_max_kw:g} kW max, over the {limit_kw:g} kW rack limit",
    )
