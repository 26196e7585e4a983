"""What-ifs: the design's job again with one thing changed (cooling, spares, storage,
checkpoints), kept only where the change moves the expected time to train."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from clusterforge.goodput.checkpoint import checkpoint_cost
from clusterforge.goodput.expected import Expected, GoodputInputs, expected_goodput
from clusterforge.goodput.rates import JobRates

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = ["WhatIfFacts", "arrhenius_factor", "what_if_facts", "what_ifs"]

# Arrhenius acceleration of thermally activated failures (JEDEC JEP122H, §5: AF =
# exp(Ea/k · (1/T_cool - 1/T_hot))).  Ea = 0.5 eV sits in the 0.3-0.9 eV span JEP122
# gives for silicon and package mechanisms; a 15 K cooler die is a stated assumption for
# direct liquid cooling against air (measure DCGM_FI_DEV_GPU_TEMP on both).
BOLTZMANN_EV_PER_K = 8.617333e-5
ARRHENIUS_EA_EV = 0.5
AIR_DIE_K = 273.15 + 75.0
LIQUID_COOLER_BY_K = 15.0
THERMAL_CLASSES = ("gpu", "hbm")  # the rates were measured on an air-cooled H100 fleet


def arrhenius_factor(*, hot_k: float, cool_k: float, ea_ev: float = ARRHENIUS_EA_EV) -> float:
    """How many times fewer thermally activated failures at ``cool_k`` than at ``hot_k``."""
    return math.exp(ea_ev / BOLTZMANN_EV_PER_K * (1.0 / cool_k - 1.0 / hot_k))


def _scaled(rates: JobRates, factor: float, classes: tuple[str, ...] | None = None) -> JobRates:
    """``rates`` with the classes named (all when None) multiplied by ``factor``."""
    per_hour = {
        k: v * factor if classes is None or k in classes else v for k, v in rates.per_hour.items()
    }
    return JobRates(per_hour, rates.needs_spare)


@dataclass(frozen=True)
class WhatIfFacts:
    """What the design knows beyond the inputs: the checkpoint stall if it were async, the
    read-back time from peers' host memory (in-memory checkpoints), and whether its GPUs
    are air-cooled (liquid cooling is a change only for them)."""

    async_delta_s: float | None = None  # None when the design already checkpoints async
    in_memory_read_s: float | None = None
    air_cooled: bool = True
    write_s: float | None = None  # the part of a checkpoint bandwidth sets (None: all of it)
    write_in_background: bool = False  # async: the write delays the next checkpoint only


# A what-if is shown only when it moves the expected time to train by at least this share:
# the resolution of the figures shown (ETTR to 0.1 %).
MIN_WHAT_IF_CHANGE = 1e-3


def what_ifs(inputs: GoodputInputs, facts: WhatIfFacts | None = None) -> dict[str, Expected]:
    """The questions a buyer asks, each one change to the inputs, priced by the expected
    model: more spares, faster storage, async or in-memory checkpoints, quicker relaunch,
    hot spares, a smaller job, liquid cooling, a healthier fleet.  Only the changes that
    apply to this design are asked (no liquid cooling for liquid-cooled GPUs, no async for
    async checkpoints), and only those that change the answer are kept; "as designed"
    comes first."""
    facts = facts or WhatIfFacts()
    base = expected_goodput(inputs)
    out = {"as designed": base}
    for label, variant in _variants(inputs, facts).items():
        result = expected_goodput(variant)
        if _differs(result, base):
            out[label] = result
    return out


def _variants(inputs: GoodputInputs, facts: WhatIfFacts) -> dict[str, GoodputInputs]:
    """Each applicable change to ``inputs``, by label."""
    rates = inputs.rates
    spares = (
        ("twice the spares", 2 * inputs.num_spares)
        if inputs.num_spares > 0
        else ("one spare node", 1)
    )
    variants = {
        spares[0]: replace(inputs, num_spares=spares[1]),
        "storage 2x faster": _faster_storage(inputs, facts),
        "relaunch in half the time": replace(inputs, relaunch_s=inputs.relaunch_s / 2),
        "hot spares in the job's leaf": replace(inputs, swap_s=0.0),
        "half the job (half the GPUs, twice the time)": replace(
            inputs, rates=_scaled(rates, 0.5), work_s=2.0 * inputs.work_s
        ),
        "half the failure rate": replace(inputs, rates=_scaled(rates, 0.5)),
    }
    if facts.air_cooled:
        cooler = 1.0 / arrhenius_factor(hot_k=AIR_DIE_K, cool_k=AIR_DIE_K - LIQUID_COOLER_BY_K)
        variants["liquid cooling (GPU 15 K cooler, Arrhenius)"] = replace(
            inputs, rates=_scaled(rates, cooler, THERMAL_CLASSES)
        )
    if facts.async_delta_s is not None:
        # The write goes on in the background: the next checkpoint waits for it.
        variants["async checkpoints"] = replace(
            inputs, delta_s=facts.async_delta_s, min_interval_s=inputs.delta_s
        )
    if facts.in_memory_read_s is not None and facts.in_memory_read_s < inputs.read_s:
        variants["in-memory checkpoints (read back from peers)"] = replace(
            inputs, read_s=facts.in_memory_read_s
        )
    return variants


def _faster_storage(inputs: GoodputInputs, facts: WhatIfFacts) -> GoodputInputs:
    """Storage twice as fast: half the write and the read-back; the coordination floor of
    each checkpoint stays."""
    write = inputs.delta_s if facts.write_s is None else facts.write_s
    faster = replace(inputs, read_s=inputs.read_s / 2)
    if facts.write_in_background:
        return replace(faster, min_interval_s=max(0.0, inputs.min_interval_s - write / 2))
    return replace(faster, delta_s=inputs.delta_s - write / 2)


def _differs(variant: Expected, base: Expected) -> bool:
    """Whether a what-if changes what is shown: the expected time or the spares needed."""
    moved = abs(variant.wall_s - base.wall_s) >= MIN_WHAT_IF_CHANGE * base.wall_s
    return moved or variant.spares.spares_for_99 != base.spares.spares_for_99


def what_if_facts(design: Design) -> WhatIfFacts:
    """Checkpoint stall if async (the shard's copy to host memory), the read-back from
    peers' host memory over the NICs (in-memory checkpoints, Wang et al. SOSP 2023), and
    the GPUs' cooling."""
    rel, storage, fabric = design.spec.reliability, design.storage, design.fabric
    gpus_per_node = design.compute.num_training_gpus / max(design.compute.num_training_nodes, 1)
    shard_gbyte = storage.checkpoint_tbyte * 1000.0 / design.compute.num_training_gpus
    async_delta = None if rel.checkpoint == "async" else shard_gbyte / rel.async_copy_gbyte_per_s
    # Each GPU's shard comes back from a peer node's host memory over the node's NICs.
    nic_gbyte_per_gpu = fabric.nics_per_node * fabric.nic_gbit_per_s / 8.0 / gpus_per_node
    in_memory = shard_gbyte / nic_gbyte_per_gpu if nic_gbyte_per_gpu > 0 else None
    return WhatIfFacts(
        async_delta_s=async_delta,
        in_memory_read_s=in_memory,
        air_cooled=design.compute.node.cooling == "air",
        write_s=checkpoint_cost(design).write_s,
        write_in_background=rel.checkpoint == "async",
    )
