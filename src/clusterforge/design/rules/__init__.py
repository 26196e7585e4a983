"""Rules of the trade, checked against a design and explained.

Each rule is a function ``Design -> list[Finding]`` (:mod:`.finding`), grouped by what it
looks at: racks, power and cooling (:mod:`.facility`), the fabric (:mod:`.fabric`), storage
(:mod:`.storage`), the compute nodes and owning them (:mod:`.compute`), access to the
management plane (:mod:`.security`). :data:`RULES` lists
every rule, in the order their findings are reported within one severity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from clusterforge.design.rules.compute import consumer_gpu, cpu_cores, no_spares, rent_cheaper
from clusterforge.design.rules.fabric import (
    all_to_all_topology,
    nic_per_gpu,
    oversubscribed_fabric,
    oversubscribed_fabric_with_tp,
    single_switch_lag,
    tp_exceeds_nvlink,
)
from clusterforge.design.rules.facility import (
    air_cooling_over_band,
    cooling_limits_density,
    cooling_unsupported_by_node,
    feed_loss,
    floor_overloaded,
    hall_shape_long_runs,
    power_cap_required,
    rack_power_over_cap,
)
from clusterforge.design.rules.finding import Finding
from clusterforge.design.rules.security import bmc_reachable
from clusterforge.design.rules.storage import storage_bandwidth

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = ["RULES", "Finding", "Rule", "evaluate"]

Rule = Callable[["Design"], list[Finding]]

RULES: tuple[Rule, ...] = (
    rack_power_over_cap,
    power_cap_required,
    air_cooling_over_band,
    cooling_limits_density,
    cooling_unsupported_by_node,
    floor_overloaded,
    hall_shape_long_runs,
    tp_exceeds_nvlink,
    oversubscribed_fabric_with_tp,
    oversubscribed_fabric,
    nic_per_gpu,
    feed_loss,
    storage_bandwidth,
    bmc_reachable,
    single_switch_lag,
    all_to_all_topology,
    no_spares,
    consumer_gpu,
    cpu_cores,
    rent_cheaper,
)


def evaluate(design: Design) -> list[Finding]:
    """All findings, errors first."""
    order = {"error": 0, "warning": 1, "info": 2}
    found = [f for check in RULES for f in check(design)]
    return sorted(found, key=lambda f: order[f.severity])
