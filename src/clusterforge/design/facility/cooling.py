"""Cooling: method per rack density, heat and airflow.

Bands (practical kW per rack; ASHRAE TC 9.9 liquid-cooling guidance and vendor sizing guides):
air with hot/cold-aisle containment ≤ 30 kW
(AMD ROCm dc-design: raised floor not recommended above 30 kW); active rear-door heat
exchanger ≤ 75 kW (HPE/Motivair bands); direct-to-chip liquid ≤ 140 kW (NVL72 at 120-132 kW),
removing ~70 % of the heat to liquid (AMD: 60-80 %), the rest to air; single-phase immersion
≤ 150 kW per tank (two-phase reaches 250 but carries PFAS concerns).

Heat: 1 kW = 3,412 BTU/h; airflow ``CFM = 3,412·kW / (1.08·ΔT°F)`` (the sensible-heat
equation for standard air, ASHRAE Handbook—Fundamentals), with
ΔT = 20 °F by default (≈ 158 CFM per kW).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "COOLING_BAND_KW",
    "CoolingDesign",
    "airflow_cfm",
    "choose_cooling",
    "cool_rack",
]

COOLING_BAND_KW = {"air": 30.0, "rear-door": 75.0, "direct-to-chip": 140.0, "immersion": 150.0}
LIQUID_HEAT_SHARE = {"air": 0.0, "rear-door": 0.0, "direct-to-chip": 0.7, "immersion": 1.0}
BTU_PER_H_PER_KW = 3412.0
DELTA_T_F = 20.0
ORDER = ("air", "rear-door", "direct-to-chip", "immersion")  # cheapest first


class CoolingDesign(BaseModel):
    model_config = ConfigDict(frozen=True)
    method: str
    band_kw: float = Field(description="Practical upper limit of the method per rack")
    heat_kw: float
    heat_btu_per_h: float
    liquid_heat_kw: float
    air_heat_kw: float
    airflow_cfm: float = Field(description="Air needed for the air-side heat at ΔT = 20 °F")


def airflow_cfm(kw: float, delta_t_f: float = DELTA_T_F) -> float:
    """CFM = 3,412 · kW / (1.08 · ΔT)."""
    return BTU_PER_H_PER_KW * kw / (1.08 * delta_t_f)


def choose_cooling(rack_kw: float, available: list[str], node_liquid: bool) -> str | None:
    """Cheapest available method whose band holds ``rack_kw`` (liquid nodes need liquid)."""
    for method in ORDER:
        if method not in available:
            continue
        if node_liquid and method in ("air", "rear-door"):
            continue
        if rack_kw <= COOLING_BAND_KW[method]:
            return method
    return None


def cool_rack(rack_kw: float, method: str) -> CoolingDesign:
    liquid = rack_kw * LIQUID_HEAT_SHARE[method]
    air = rack_kw - liquid
    return CoolingDesign(
        method=method,
        band_kw=COOLING_BAND_KW[method],
        heat_kw=rack_kw,
        heat_btu_per_h=rack_kw * BTU_PER_H_PER_KW,
        liquid_heat_kw=liquid,
        air_heat_kw=air,
        airflow_cfm=airflow_cfm(air),
    )
