"""Rules of the trade, checked against a design and explained.

Each rule is a function ``Design -> list[Finding]`` registered in :data:`RULES`; a finding has
an id, a severity, a message, the numbers that triggered it and a fix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from clusterforge.design.facility.cooling import COOLING_BAND_KW

if TYPE_CHECKING:
    from clusterforge.design.plan import Design

__all__ = ["RULES", "Finding", "evaluate"]

Severity = Literal["error", "warning", "info"]
# Air cooling is comfortable up to about 20 kW per rack and needs aisle containment above it
# (ASHRAE TC 9.9, Thermal Guidelines for Data Processing Environments, 5th ed.; Uptime
# Institute Global Data Center Survey 2024 on rack densities).
AIR_COMFORT_KW = 20.0
# Tensor parallelism across nodes needs at least the 400 Gb/s per GPU of NVIDIA's reference
# designs (DGX SuperPOD H100: one NDR 400 Gb/s port per GPU); Megatron-LM keeps TP inside the
# NVLink domain for this reason (Narayanan et al. 2021, §3.3).
MIN_GBIT_PER_GPU_TP = 400.0


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    severity: Severity
    message: str
    numbers: dict[str, float | int | str]
    fix: str

    @field_validator("numbers")
    @classmethod
    def _readable(cls, numbers: dict[str, float | int | str]) -> dict[str, float | int | str]:
        """Floats keep 6 significant digits: 9.9, not 9.899999999999999 (binary rounding)."""
        return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in numbers.items()}


Rule = Callable[["Design"], list[Finding]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def evaluate(design: Design) -> list[Finding]:
    """All findings, errors first."""
    order = {"error": 0, "warning": 1, "info": 2}
    found = [f for check in RULES for f in check(design)]
    return sorted(found, key=lambda f: order[f.severity])


@rule
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
    full_kw = by_u * node.max_kw
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


@rule
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


@rule
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


@rule
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


def _tp_group(d: Design) -> int:
    return 1 if d.job is None else d.job.tp * d.job.cp


@rule
def tp_exceeds_nvlink(d: Design) -> list[Finding]:
    if d.job is None:
        return []
    tp, domain = d.job.tp, d.compute.nvlink_domain_gpus
    if tp <= domain:
        return []
    return [
        Finding(
            id="tp-exceeds-nvlink-domain",
            severity="error",
            message=f"tensor parallel {tp} is larger than the {domain}-GPU NVLink domain: every "
            "layer's all-reduce crosses the scale-out network",
            numbers={"tensor_parallel": tp, "nvlink_domain_gpus": domain},
            fix=f"keep tensor_parallel ≤ {domain} and use pipeline or context parallelism across nodes",
        )
    ]


@rule
def oversubscribed_fabric_with_tp(d: Design) -> list[Finding]:
    fab, tp = d.fabric, _tp_group(d)
    if tp <= d.compute.nvlink_domain_gpus:
        return []
    if fab.oversubscription <= 1.0 and fab.gbit_per_s_per_gpu >= MIN_GBIT_PER_GPU_TP:
        return []
    return [
        Finding(
            id="fabric-weak-for-tp",
            severity="error",
            message=f"TP x CP = {tp} spans nodes over a fabric with {fab.oversubscription:g}:1 "
            f"oversubscription and {fab.gbit_per_s_per_gpu:g} Gb/s per GPU",
            numbers={
                "tp_x_cp": tp,
                "oversubscription": fab.oversubscription,
                "gbit_per_s_per_gpu": fab.gbit_per_s_per_gpu,
            },
            fix=f"non-blocking fabric with ≥ {MIN_GBIT_PER_GPU_TP:g} Gb/s per GPU, or TP within a node",
        )
    ]


@rule
def oversubscribed_fabric(d: Design) -> list[Finding]:
    fab = d.fabric
    out = []
    if fab.oversubscription > 1.0:
        out.append(
            Finding(
                id="fabric-oversubscribed",
                severity="warning",
                message=f"leaves are {fab.oversubscription:g}:1 oversubscribed: all-reduce and "
                "all-to-all across leaves get a fraction of line rate",
                numbers={
                    "oversubscription": fab.oversubscription,
                    "bisection_gbit_per_s": fab.bisection_gbit_per_s,
                },
                fix="place jobs leaf-aligned (topology-aware scheduling) or design 1:1",
            )
        )
    if fab.core_oversubscription > 1.0:
        out.append(
            Finding(
                id="core-oversubscribed",
                severity="warning",
                message=f"spines reach the core at {fab.core_oversubscription:g}:1: traffic "
                "between pods (data-parallel groups larger than a pod) shares a fraction of "
                "the pod's bandwidth",
                numbers={
                    "core_oversubscription": fab.core_oversubscription,
                    "bisection_gbit_per_s": fab.bisection_gbit_per_s,
                },
                fix="keep jobs within a pod, put pipeline stages (not data parallelism) across "
                "pods, or design the core 1:1",
            )
        )
    return out


@rule
def nic_per_gpu(d: Design) -> list[Finding]:
    nics, gpus = d.fabric.nics_per_node, d.compute.gpus_per_node
    if nics >= gpus or gpus == 1:
        return []
    return [
        Finding(
            id="fewer-nics-than-gpus",
            severity="warning",
            message=f"{nics} compute NICs for {gpus} GPUs per node: GPUs share NICs and PCIe "
            f"switches, {d.fabric.gbit_per_s_per_gpu:g} Gb/s per GPU",
            numbers={"nics_per_node": nics, "gpus_per_node": gpus},
            fix="one NIC per GPU (rail-optimized), as in DGX/HGX reference designs",
        )
    ]


@rule
def feed_loss(d: Design) -> list[Finding]:
    node = d.compute.node
    if d.spec.facility.feeds_per_rack < 2 or not node.num_psus:
        return []
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


@rule
def storage_bandwidth(d: Design) -> list[Finding]:
    s = d.storage
    heuristic = d.compute.num_training_gpus * d.spec.storage.read_mbyte_per_s_per_gpu / 1000
    out = []
    if s.read_gbyte_per_s < heuristic:
        out.append(
            Finding(
                id="storage-read-too-low",
                severity="warning",
                message=f"storage reads {s.read_gbyte_per_s:g} GB/s, below {heuristic:.1f} GB/s "
                f"({d.spec.storage.read_mbyte_per_s_per_gpu:g} MB/s per GPU)",
                numbers={"read_gbyte_per_s": s.read_gbyte_per_s, "needed_gbyte_per_s": heuristic},
                fix="add storage blocks or remove storage.read_gbyte_per_s to size it automatically",
            )
        )
    if s.checkpoint_write_s > d.spec.storage.checkpoint_write_s * 1.0001:
        out.append(
            Finding(
                id="checkpoint-write-slow",
                severity="warning",
                message=f"one checkpoint ({s.checkpoint_tbyte:.2f} TB) takes {s.checkpoint_write_s:.0f} s "
                f"to write, over the {d.spec.storage.checkpoint_write_s:g} s target",
                numbers={"checkpoint_write_s": s.checkpoint_write_s},
                fix="more write bandwidth, or asynchronous / sharded checkpointing",
            )
        )
    return out


@rule
def single_switch_lag(d: Design) -> list[Finding]:
    if not d.fabric.link_aggregation:
        return []
    return [
        Finding(
            id="single-switch-link-aggregation",
            severity="error",
            message="node NICs are bonded into one switch: link aggregation hashes each flow onto "
            "one member link, so collisions waste bandwidth and nothing scales past one switch",
            numbers={"nics_per_node": d.fabric.nics_per_node},
            fix="one NIC per GPU into a rail-optimized or leaf-spine fabric, each NIC its own rail",
        )
    ]


@rule
def all_to_all_topology(d: Design) -> list[Finding]:
    if d.job is None or d.job.ep <= 1 or d.fabric.topology not in ("rail-only", "dragonfly"):
        return []
    return [
        Finding(
            id="all-to-all-on-restricted-topology",
            severity="warning",
            message=f"expert parallelism (all-to-all) on a {d.fabric.topology} fabric: cross-rail "
            "or cross-group traffic takes NVLink forwarding or global links",
            numbers={"expert_parallel": d.job.ep},
            fix="rail-optimized fat-tree for MoE training",
        )
    ]


# The node and cost rules register themselves on import (they live apart to keep modules small).
from clusterforge.design import rules_compute as _rules_compute  # noqa: E402, F401
