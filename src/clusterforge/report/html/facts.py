"""Report sections read straight from a design: summary, findings, floor, racks, fabric,
cabling and power. Nothing here re-derives a design fact; it selects and formats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterforge.design.facility.hall import hall_of
from clusterforge.report.elevation import elevation_svg
from clusterforge.report.fabric.picture import fabric_svg
from clusterforge.report.figure_file import svg_fragment
from clusterforge.report.floor import floor_svg
from clusterforge.report.format import counted, power_limit_text
from clusterforge.report.html import charts
from clusterforge.report.html.model import (
    Figure,
    Metric,
    Section,
    Table,
    kw,
    money,
    num,
    pct,
    table,
)

if TYPE_CHECKING:
    from clusterforge.design import Design
    from clusterforge.design.cabling.links import LinkClass
    from clusterforge.design.facility.power import Circuit
    from clusterforge.design.facility.racks import Rack

__all__ = [
    "FeedGroup",
    "cabling_section",
    "fabric_section",
    "feed_groups",
    "findings_section",
    "floor_section",
    "power_section",
    "racks_section",
    "rail_table",
    "summary_metrics",
]

LONGEST_RUNS = 10
MAX_RACK_BARS = 150  # beyond, racks with the same feed load share a bar
GROUP_NAMES_SHOWN = 3
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def summary_metrics(design: Design) -> tuple[Metric, ...]:
    """The headline figures of a design, each read from the design model."""
    c, p = design.compute, design.power
    return (
        Metric("GPUs", num(c.num_gpus_total),
               f"{num(c.num_training_gpus)} training; {num(c.num_nodes)} x {c.node.name} "
               f"({num(c.num_spare_nodes)} spare)"),
        Metric("racks", num(len(design.racks)), f"{c.node.u_height}U nodes"),
        _fabric_metric(design),
        Metric("IT power (max)", kw(p.it_max_kw), f"average {kw(p.it_average_kw)}"),
        Metric("facility power", kw(p.facility_kw), f"average {kw(p.facility_average_kw)}"),
        Metric("capex", money(design.cost.capex_usd),
               f"{money(design.cost.capex_per_gpu_usd)} per GPU"),
        Metric("build vs rent", "build wins" if design.cost.build_wins else "rent wins",
               f"build {money(design.cost.build_total_usd)}, {design.cost.rent_basis} rent "
               f"{money(design.cost.rent_total_usd)} over {design.cost.years:g} years"),
    )  # fmt: skip


def _fabric_metric(design: Design) -> Metric:
    """The compute fabric's shape and switches; a one-node design has none to count."""
    f = design.fabric
    if f.num_switches == 0:
        return Metric("fabric", "none", "; ".join(f.notes) or "one node: no compute fabric")
    return Metric("fabric", f"{f.topology}, {counted(f.tiers, 'tier')}",
                  f"{num(f.num_switches)} x {f.switch.name}; {f.fabric}")  # fmt: skip


def findings_section(design: Design) -> Section:
    """The rule findings, most severe first."""
    findings = sorted(design.findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 3))
    lead = (
        f"{len(findings)} finding(s) from the design rules."
        if findings
        else "No findings: every design rule passed."
    )
    rows = table(
        ("severity", "rule", "what", "fix"),
        findings,
        lambda f: (f.severity, f.id, f.message, f.fix),
    )
    return Section(
        "findings", "Findings", lead, tables=(rows,) if findings else (), open_tables=True
    )


def floor_section(design: Design) -> Section:
    """The floor to scale (the drawing of floor.svg): racks at their places, coloured by
    their maximum draw, aisles between the rows, network racks marked."""
    racks = design.racks
    rows = table(
        ("rack", "role", "row", "position", "x (m)", "y (m)", "max kW", "U used", "cooling"),
        racks,
        lambda r: (r.name, r.role, str(r.row), str(r.position), f"{r.x_m:.1f}", f"{r.y_m:.1f}",
                   f"{r.max_kw:.1f}", str(r.u_used), r.cooling.method),
        numeric=(False, False, True, True, True, True, True, True, False),
    )  # fmt: skip
    hall = hall_of(racks, design.spec.facility)
    cooling = ", ".join(sorted({r.cooling.method for r in racks}))
    lead = (f"{num(len(racks))} racks in {num(hall.num_rows)} rows on a {hall.width_m:.1f} m x "
            f"{hall.depth_m:.1f} m floor ({hall.aspect_ratio:.1f}:1), drawn to scale; colour "
            f"is the rack's maximum draw in kW, hatched racks hold the network. "
            f"Cooling: {cooling}.")  # fmt: skip
    picture = Figure(svg_fragment(floor_svg(design)), "floor plan to scale")
    return Section("floor", "Floor plan", lead, (picture,), (rows,))


def racks_section(design: Design) -> Section:
    """Rack elevations: the same drawing as ``plan``'s racks.svg, inlined."""
    racks = design.racks
    rows = table(
        ("rack", "row", "devices (U: name)", "max kW"),
        racks,
        lambda r: (r.name, str(r.row), _devices_text(r), f"{r.max_kw:.1f}"),
        numeric=(False, True, False, True),
    )
    lead = (
        f"{num(len(racks))} racks of {design.spec.facility.rack_u}U in "
        f"{num(len({r.row for r in racks}))} rows, front-on (the drawing of racks.svg); "
        "devices coloured by role, switches by their fabric."
    )
    picture = Figure(svg_fragment(elevation_svg(design)), "rack elevations")
    return Section("racks", "Rack elevations", lead, (picture,), (rows,))


def _devices_text(rack: Rack) -> str:
    shown = [d for d in rack.devices if d.u_height > 0]
    return "; ".join(
        f"U{d.u_position}: {d.name}" for d in sorted(shown, key=lambda d: d.u_position)
    )


def fabric_section(design: Design) -> Section:
    """The compute fabric's diagram (fabric.svg: one node group in full, rails in colour, the
    tiers above, the support fabrics) and its tables by tier."""
    f, c = design.fabric, design.compute
    tiers = [
        ("nodes", c.num_nodes, f.num_node_links, "-"),
        ("leaves", f.num_leaves, f.num_leaf_spine_links, f"{f.oversubscription:g}:1"),
        ("spines", f.num_spines, f.num_spine_core_links, f"{f.core_oversubscription:g}:1"),
        ("cores", f.num_cores, 0, "-"),
    ]
    tiers = [t for t in tiers if t[1] > 0]
    picture = Figure(svg_fragment(fabric_svg(design)), "compute fabric diagram")
    tier_rows = table(
        ("tier", "count", "links up", "oversubscription up"),
        tiers,
        lambda t: (t[0], num(t[1]), num(t[2]), t[3]),
        caption="compute fabric by tier",
        numeric=(False, True, True, False),
    )
    support = table(
        ("fabric", "switch", "endpoint ports", "leaves", "spines", "Gb/s per port"),
        design.support_fabrics,
        lambda s: (s.name, s.switch.name, num(s.num_endpoint_ports), num(s.num_leaves),
                   num(s.num_spines), f"{s.port_gbit_per_s:g}"),
        caption="support fabrics",
    )  # fmt: skip
    if f.num_switches == 0:  # one node: nothing to draw or count but the support fabrics
        why = "; ".join(f.notes) or "one node: no compute fabric"
        lead = f"{why[:1].upper()}{why[1:]}. The support fabrics it has are in the table."
        return Section("fabric", "Fabric", lead, (), (support,))
    lead = (
        f"{num(f.num_switches)} x {f.switch.name} ({f.radix} ports) for "
        f"{counted(c.num_nodes, 'node')}; bisection {num(f.bisection_gbit_per_s / 1000, 1)} "
        f"Tb/s, at most {counted(f.max_switch_hops, 'switch hop')}, "
        f"{'lossless' if f.lossless else 'lossy'} {f.fabric}."
    )
    tables = (tier_rows, rail_table(design), support)
    return Section("fabric", "Fabric", lead, (picture,), tables)


def rail_table(design: Design) -> Table:
    """The first node group (a scalable unit on a rail-optimized fabric, a ToR leaf on a
    leaf-spine) in full: which leaf each node NIC plugs into, read from the fabric's
    connectivity (the one owner of that wiring)."""
    import numpy as np

    from clusterforge.design.compute import node_name

    conn = design.fabric.connectivity
    node, nic, leaf = conn.node_links()
    group_nodes = np.flatnonzero(conn.group_of(np.arange(conn.num_nodes)) == 0)
    hcas = design.compute.node.compute_hca_names
    headers = ["node"] + [
        f"NIC {i}" + (f" ({hcas[i]})" if i < len(hcas) else "") for i in range(conn.nics_per_node)
    ]
    leaf_at = {
        (int(n), int(i)): conn.switch_name(int(sw))
        for n, i, sw in zip(node, nic, leaf, strict=True)
    }
    rows = tuple(
        (node_name(int(n)), *(leaf_at.get((int(n), i), "-") for i in range(conn.nics_per_node)))
        for n in group_nodes
    )
    caption = f"node group 1 in full ({len(rows)} nodes): the leaf each compute NIC plugs into"
    return Table(headers=tuple(headers), rows=rows, caption=caption)


def cabling_section(design: Design) -> Section:
    """Links by class and medium, and the longest runs."""
    classes = design.cabling
    media = sorted({m.medium for c in classes for m in c.media})
    labels = [f"{c.fabric}: {c.name}" for c in classes]
    series = [(m, [_links_of(c, m) for c in classes]) for m in media]
    figure = charts.bar_chart(
        "links by class and medium", labels=labels, series=series, y_title="links", stacked=True
    )
    by_medium = table(
        ("fabric", "class", "a", "b", "Gb/s", "medium", "links", "transceivers", "cost"),
        [(c, m) for c in classes for m in c.media],
        lambda cm: (cm[0].fabric, cm[0].name, cm[0].endpoint_a, cm[0].endpoint_b,
                    f"{cm[0].gbit_per_s:g}", cm[1].medium, num(cm[1].num_links),
                    num(cm[1].num_transceivers), money(cm[1].cost_usd)),
        caption="links by class and medium",
    )  # fmt: skip
    longest = table(
        ("fabric", "class", "longest (m)", "median (m)", "links"),
        sorted(classes, key=lambda c: c.length_m_max, reverse=True)[:LONGEST_RUNS],
        lambda c: (c.fabric, c.name, f"{c.length_m_max:.1f}", f"{c.length_m_median:.1f}",
                   num(c.num_links)),
        caption="longest runs",
    )  # fmt: skip
    total = sum(c.num_links for c in classes)
    lead = f"{num(total)} links in {len(classes)} classes over {len(media)} media."
    return Section("cabling", "Cabling", lead, (Figure(figure, "links"),), (by_medium, longest))


def _links_of(link_class: LinkClass, medium: str) -> int:
    return sum(m.num_links for m in link_class.media if m.medium == medium)


@dataclass(frozen=True)
class FeedGroup:
    """Racks of one role whose feeds carry the same load on the same circuits."""

    role: str
    circuit: Circuit
    racks: tuple[Rack, ...]

    @property
    def label(self) -> str:
        """Unique among the groups (a chart's category): it names the group's first rack."""
        if len(self.racks) == 1:
            return f"{self.role} rack {self.racks[0].name}"
        return f"{num(len(self.racks))} {self.role} racks like {self.racks[0].name}"

    @property
    def names(self) -> str:
        shown = ", ".join(r.name for r in self.racks[:GROUP_NAMES_SHOWN])
        return shown + (", …" if len(self.racks) > GROUP_NAMES_SHOWN else "")


def feed_groups(design: Design) -> list[FeedGroup]:
    """The racks grouped by role and feed circuit (the design plans each rack load's
    circuits once, so a large design has a handful of groups), most loaded feed first."""
    groups: dict[tuple[str, Circuit], list[Rack]] = {}
    for r in design.racks:
        groups.setdefault((r.role, r.circuit), []).append(r)
    found = [FeedGroup(role, circuit, tuple(rs)) for (role, circuit), rs in groups.items()]
    return sorted(found, key=lambda g: -g.circuit.utilization)


def _circuit_cells(c: Circuit) -> tuple[str, ...]:
    return (f"{c.load_kw:.1f}", str(c.num_feeds), str(c.circuits_per_feed), c.power_path,
            f"{c.breaker_a:g} A {c.phases}-phase {c.voltage_v:g} V", f"{c.usable_kw:.1f}",
            f"{c.phase_current_a:.1f}", pct(c.breaker_load), pct(c.utilization))  # fmt: skip


CIRCUIT_HEADERS = ("load kW", "feeds", "circuits per feed", "power path", "breaker",
                   "usable kW per circuit", "A per phase, per circuit", "of the breaker",
                   "utilization")  # fmt: skip


def power_section(design: Design) -> Section:
    """Each rack's feed load against the feed's usable capacity; beyond ``MAX_RACK_BARS``
    racks, one bar per group of racks with the same load and circuits."""
    racks = design.racks
    if len(racks) > MAX_RACK_BARS:
        groups = feed_groups(design)
        labels, loads = [g.label for g in groups], [g.circuit for g in groups]
        rows = table(("racks", "names", *CIRCUIT_HEADERS), groups,
                     lambda g: (g.label, g.names, *_circuit_cells(g.circuit)),
                     caption="racks grouped by feed load")  # fmt: skip
        per = f"{len(groups)} groups of racks with the same feed load (racks.csv: every rack)"
    else:
        labels, loads = [r.name for r in racks], [r.circuit for r in racks]
        rows = table(("rack", *CIRCUIT_HEADERS), racks,
                     lambda r: (r.name, *_circuit_cells(r.circuit)))  # fmt: skip
        per = "each rack"
    figure = charts.bar_chart(
        f"feed load: {per} (each feed carries the whole rack)",
        labels=labels,
        series=[("feed load", [100 * c.utilization for c in loads])],
        y_title="% of the feed's usable capacity",
        limit=("circuit limit", 100.0),
    )
    worst = max(racks, key=lambda r: r.circuit.utilization)
    p = design.power
    lead = (
        f"IT load {kw(p.it_max_kw)} at most, {kw(p.facility_kw)} at the facility; the most "
        f"loaded feed is {worst.name}'s at {pct(worst.circuit.utilization)} of its capacity."
    )
    if design.gpu_power_limit_w is not None:
        lead += f" GPU power limit: {power_limit_text(design)}."
    return Section("power", "Power", lead, (Figure(figure, "power per rack"),), (rows,))
