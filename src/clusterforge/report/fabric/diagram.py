"""The compute fabric as an architect draws it: one node group (a scalable unit) in full,
the switches above it tier by tier, the rest summarised, the support fabrics beside it.

This follows the drawings of NVIDIA's DGX SuperPOD reference architectures (H100 RA-11333,
"Compute fabric"; GB200 RA-11338, "Network fabrics"): a scalable unit (SU) of nodes whose
NIC *i* goes to the SU's leaf for rail *i* (rail-optimized), leaves to spines, spines to
cores, every other SU wired the same way.  The picture is built from the design's own
:class:`~clusterforge.design.fabric.connectivity.Connectivity` (which leaf each NIC plugs
into, which switches each bundle joins), so every topology it sizes draws its own shape:
rail-optimized, leaf-spine and fat-tree Clos of 1 to 3 tiers, rail-only, dragonfly (a group's
routers, its global links to the other groups) and a single switch.

What is drawn:

* the first node group's nodes (at most :data:`MAX_NODES_DRAWN`, the rest counted), framed
  by their NVLink domain when a domain spans nodes (a GB200 NVL72 rack is one domain of 18
  trays), each node's NIC *i* link in rail *i*'s colour;
* the switches of each tier that this group reaches (at most :data:`MAX_SWITCHES_DRAWN` a
  tier, the rest counted), leaves in their rail's colour on a rail-optimized fabric;
* per tier: total count, switch model, links and speed, oversubscription;
* the other groups as one box ("x 195 more SUs, wired alike"), spares, and the storage,
  in-band and out-of-band fabrics beside the compute fabric.

One model (:class:`~clusterforge.report.fabric.layout.Diagram`: boxes and links with
positions) is rendered three ways: an SVG or PNG through matplotlib
(:mod:`clusterforge.report.fabric.picture`), draw.io's mxGraph XML and Graphviz DOT
(:mod:`clusterforge.report.fabric.export`), the last two for network teams to edit.  In the
SVG each box is the group ``box-<id>``; switch ids are ``<tier>-<n>`` (``leaf-1``,
``spine-3``), links ``link-<a>-<b>``, each rail's links also carry ``rail-<i>`` in their id.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from clusterforge.report.fabric.layout import (
    BOX_H,
    BOX_W,
    DOMAIN_FILL,
    GAP,
    GROUP_FILL,
    LEFT,
    MAX_NODES_DRAWN,
    MAX_SWITCHES_DRAWN,
    NARROW_NODE_W,
    NODE_FILL,
    NODE_W,
    NOTE_FILL,
    ROW_Y,
    SUPPORT_FILL,
    TIER_FILL,
    Box,
    Diagram,
    Link,
    RowBuilder,
    rail_color,
)
from clusterforge.report.format import num

if TYPE_CHECKING:
    from clusterforge.design import Design
    from clusterforge.design.fabric.connectivity import Connectivity

__all__ = ["fabric_diagram"]


def _tier_of(c: Connectivity, switch_id: int) -> str:
    if switch_id < c.num_leaves:
        return "router" if c.kind == "dragonfly" else "leaf"
    return "spine" if switch_id < c.num_leaves + c.num_spines else "core"


def _box_id(c: Connectivity, switch_id: int) -> str:
    """``leaf-3``: the tier and the switch's number within it (as its host name has it)."""
    name = c.switch_name(switch_id)
    tier, number = name.rsplit("-", 1)
    return f"{tier}-{int(number)}"


def _capped(ids: list[int], limit: int) -> tuple[list[int], int]:
    """The first ``limit`` ids and how many more there are."""
    return ids[:limit], max(0, len(ids) - limit)


def _neighbours(links: tuple[np.ndarray, ...], ids: list[int], tier: int) -> list[int]:
    """Switches joined to ``ids`` by bundles of ``tier``, taken in turn from each of ``ids``
    (the first of each one's, then the second, ...): a capped row then shows how every drawn
    switch connects up, not only the first one's group."""
    a, b, _, t = links
    on = t == tier
    per_switch = [
        sorted(set(b[on & (a == i)].tolist()) | set(a[on & (b == i)].tolist())) for i in ids
    ]
    order: list[int] = []
    seen = set(ids)
    for rank in range(max((len(p) for p in per_switch), default=0)):
        for p in per_switch:
            if rank < len(p) and p[rank] not in seen:
                seen.add(p[rank])
                order.append(p[rank])
    return order


def fabric_diagram(design: Design) -> Diagram:
    """The diagram of ``design``'s compute fabric (see the module docstring)."""
    c, f, compute = design.fabric.connectivity, design.fabric, design.compute
    build = RowBuilder()
    if c.num_nodes == 0 or c.num_switches == 0:
        return _no_fabric(design)
    groups = c.group_of(np.arange(c.num_nodes))
    num_groups = int(groups.max()) + 1
    group_nodes = np.flatnonzero(groups == 0).tolist()
    drawn_nodes, more_nodes = _capped(group_nodes, MAX_NODES_DRAWN)
    node, nic, leaf = c.node_links()
    mine = np.isin(node, drawn_nodes)
    group_leaves = sorted(set(leaf[np.isin(node, group_nodes)].tolist()))
    drawn_leaves, more_leaves = _capped(group_leaves, MAX_SWITCHES_DRAWN)
    links = c.switch_links()

    # nodes, with their NVLink domains
    node_boxes = build.row(
        [(f"node-{n + 1}", compute.node_names[n], NODE_FILL, None) for n in drawn_nodes],
        ROW_Y["node"], "node", "", more_nodes, "nodes\nin this group",
        w=NODE_W if len(drawn_nodes) <= 12 else NARROW_NODE_W)  # fmt: skip
    _domains(build, design, drawn_nodes, node_boxes)

    # leaves (routers), coloured by rail when each leaf serves one rail
    rails = c.rail_optimized or c.kind == "rail-only"
    _leaves(build, c, (node[mine], nic[mine], leaf[mine]), drawn_leaves, more_leaves, rails)

    # upper tiers
    if c.kind == "dragonfly":
        _dragonfly(build, design, drawn_leaves, num_groups)
    else:
        drawn_spines = _upper(build, c, links, drawn_leaves, 0, "spine")
        if c.num_cores:
            _upper(build, c, links, drawn_spines, 1, "core")

    _group_frame(build, design, num_groups, node_boxes)
    tier_text = _tier_text(design, num_groups)
    legend = tuple((f"rail {i + 1}", rail_color(i)) for i in range(c.nics_per_node) if rails)
    _support(build, design)
    build.links += [Link("group-1", f"fabric-{s.name}", "#7d5ba6", dashed=True)
                    for s in design.support_fabrics]  # fmt: skip
    width = build.right + 20
    height = max((b.y + b.h for b in build.boxes), default=0) + 40
    title = (f"{design.spec.name}: compute fabric, {f.topology}, {f.tiers} tier(s), "
             f"{num(c.num_nodes)} nodes x {c.nics_per_node} NICs at {f.nic_gbit_per_s:g} Gb/s")  # fmt: skip
    # rows without switches (no core tier) leave no empty band at the top
    shift = min(b.y for b in build.boxes + build.frames) - 30
    boxes = tuple(replace(b, y=b.y - shift) for b in build.frames + build.boxes)
    rows = tuple((ROW_Y["leaf" if t == "router" else t] + BOX_H / 2 - shift, text)
                 for t, text in tier_text.items())  # fmt: skip
    return Diagram(title, boxes, tuple(build.links), rows, legend, width, height - shift)


def _leaves(build: RowBuilder, c: Connectivity, drawn_links: tuple[np.ndarray, ...],
            drawn_leaves: list[int], more_leaves: int, rails: bool) -> None:  # fmt: skip
    """The leaf (router) row and the drawn nodes' links to it: on a rail fabric a line per NIC
    in its rail's colour, else one line per node and leaf with the NIC count."""
    node, nic, leaf = drawn_links
    leaf_tier = "router" if c.kind == "dragonfly" else "leaf"
    rail_of_leaf = {int(sw): int(i) for sw, i in zip(leaf, nic, strict=True)}
    build.row(
        [(_box_id(c, s), c.switch_name(s),
          rail_color(rail_of_leaf[s]) if rails and s in rail_of_leaf else TIER_FILL[leaf_tier],
          rail_of_leaf.get(s) if rails else None) for s in drawn_leaves],
        ROW_Y["leaf"], "switch", leaf_tier, more_leaves, f"{leaf_tier}s of this group")  # fmt: skip
    if rails:  # a line per NIC, in its rail's colour
        for n, i, s in zip(node, nic, leaf, strict=True):
            if s in drawn_leaves:
                build.links.append(Link(f"node-{int(n) + 1}", _box_id(c, int(s)),
                                        rail_color(int(i)), rail=int(i)))  # fmt: skip
    else:  # a top-of-rack leaf takes all of a node's NICs: one line, their count
        pairs, counts = np.unique(np.stack([node, leaf]), axis=1, return_counts=True)
        for n, s, k in zip(pairs[0], pairs[1], counts, strict=True):
            if s in drawn_leaves:
                build.links.append(Link(f"node-{int(n) + 1}", _box_id(c, int(s)), "#4c78a8",
                                        count=int(k)))  # fmt: skip


def _upper(build: RowBuilder, c: Connectivity, links: tuple[np.ndarray, ...], below: list[int],
           tier: int, name: str) -> list[int]:  # fmt: skip
    """The switches of ``name`` joined to the drawn switches ``below``, and their links."""
    reached = _neighbours(links, below, tier)
    total = c.num_spines if name == "spine" else c.num_cores
    drawn, more = _capped(reached, MAX_SWITCHES_DRAWN)
    others = total - len(reached)
    build.row([(_box_id(c, s), c.switch_name(s), TIER_FILL[name], None) for s in drawn],
              ROW_Y[name], "switch", name, more + others,
              f"{name}s" + (f"\n({num(others)} serve other groups)" if others else ""))  # fmt: skip
    a, b, n, t = links
    on = (t == tier) & np.isin(a, below) & np.isin(b, drawn)
    for x, y, k in zip(a[on], b[on], n[on], strict=True):
        build.links.append(Link(_box_id(c, int(x)), _box_id(c, int(y)), count=int(k)))
    return drawn


def _dragonfly(build: RowBuilder, design: Design, routers: list[int], num_groups: int) -> None:
    """A dragonfly group: its routers joined all-to-all (local links, drawn as one frame) and
    their global links to the other groups, summarised as one box."""
    c = design.fabric.connectivity
    if num_groups <= 1 and c.num_groups <= 1:
        return
    others = max(c.num_groups, num_groups) - 1
    box = Box("other-groups", f"{num(others)} other groups\n{num(c.links_per_group_pair)} "
              "global link(s) per pair", "note", LEFT, ROW_Y["spine"], 3 * BOX_W, BOX_H * 1.6,
              NOTE_FILL, stroke="#b59a3c")  # fmt: skip
    build.boxes.append(box)
    for r in routers:
        build.links.append(Link(_box_id(c, r), box.id, count=c.global_links_per_router))


def _domains(build: RowBuilder, design: Design, nodes: list[int], boxes: list[Box]) -> None:
    """Frame the nodes of each NVLink domain that spans more than one node."""
    compute = design.compute
    per_domain = max(1, compute.nvlink_domain_gpus // max(compute.gpus_per_node, 1))
    if per_domain <= 1:
        return
    by_domain: dict[int, list[Box]] = {}
    for n, box in zip(nodes, boxes, strict=False):
        by_domain.setdefault(n // per_domain, []).append(box)
    for d, members in by_domain.items():
        x0, x1 = members[0].x - 6, members[-1].x + members[-1].w + 6
        build.frames.append(Box(f"nvlink-domain-{d + 1}", f"NVLink domain {d + 1}: "
                                f"{compute.nvlink_domain_gpus} GPUs ({per_domain} nodes)",
                                "domain", x0, ROW_Y["node"] - 6, x1 - x0, BOX_H + 26,
                                DOMAIN_FILL, stroke="#3c8d3c"))  # fmt: skip


def _group_frame(build: RowBuilder, design: Design, num_groups: int, nodes: list[Box]) -> None:
    """The first node group's frame (nodes and leaves) and the box for the other groups."""
    c = design.fabric.connectivity
    unit = {"dragonfly": "group", "rail-only": "rail group"}.get(c.kind)
    unit = unit or ("SU" if c.rail_optimized else "switch" if c.kind == "single-switch"
                    else "ToR group")  # fmt: skip
    leaf_row = [b for b in build.boxes if b.y == ROW_Y["leaf"]]
    x1 = max(b.x + b.w for b in [*leaf_row, *nodes]) + 10
    top = ROW_Y["leaf"] - 26
    build.frames.insert(0, Box("group-1", f"{unit} 1", "group", LEFT - 12, top,
                               x1 - LEFT + 12, ROW_Y["node"] + BOX_H + 34 - top, GROUP_FILL,
                               stroke="#6b7f99"))  # fmt: skip
    if num_groups > 1:
        x = x1 + 20
        note = Box("more-groups", f"x {num(num_groups - 1)} more {unit}s,\nwired alike", "note",
                   x, ROW_Y["leaf"] + 40, 150, 60, NOTE_FILL, stroke="#b59a3c")  # fmt: skip
        build.boxes.append(note)
        build.right = max(build.right, x + 150 + GAP)


def _tier_text(design: Design, num_groups: int) -> dict[str, str]:
    """Per tier: count, model, links and speed, oversubscription; spares under the nodes."""
    f, c, compute = design.fabric, design.fabric.connectivity, design.compute
    speed = f"{f.nic_gbit_per_s:g}G"
    sw = f.switch.id
    text = {}
    if c.num_cores:
        text["core"] = (f"core: {num(c.num_cores)} x {sw}\n{num(f.num_spine_core_links)} "
                        f"spine-core links x {speed}\neach spine: {c.links_spine_core} x {speed} "
                        f"to each of {c.cores_per_group} cores")  # fmt: skip
    if c.num_spines:
        per_leaf = c.spines_per_pod or c.spines_per_rail
        text["spine"] = (f"spine: {num(c.num_spines)} x {sw}\n{num(f.num_leaf_spine_links)} "
                         f"leaf-spine links x {speed}\neach leaf: {c.links_leaf_spine} x {speed} "
                         f"to each of {per_leaf} spines")  # fmt: skip
        if c.num_cores:
            text["spine"] += f"; {f.core_oversubscription:g}:1 up to the core"
    leaf_name = "router" if c.kind == "dragonfly" else "leaf"
    text["leaf"] = (f"{leaf_name}: {num(c.num_leaves)} x {f.switch.id} ({f.radix} ports)\n"
                    f"{f.leaf_down_ports} down, {f.leaf_up_ports} up: {f.oversubscription:g}:1")  # fmt: skip
    if c.kind == "dragonfly":
        text["leaf"] += (f"\n{num(f.num_local_links)} local, {num(f.num_global_links)} global "
                         "links")  # fmt: skip
    if c.kind == "rail-only":
        text["leaf"] += f"\nrail-only: {c.nics_per_node} rails, no path between rails"
    elif c.rail_optimized:
        text["leaf"] += f"\nrail-optimized: {c.nics_per_node} rails, a leaf per rail per SU"
    if c.num_planes > 1:
        text["leaf"] += f"\n{c.num_planes} independent planes"
    spares = (f"spares: {num(compute.num_spare_nodes)} nodes ({f.spares}"
              + (f", {f.num_spare_pool_leaves} pool leaves" if f.num_spare_pool_leaves else "")
              + (f", {f.num_cold_spares} uncabled" if f.num_cold_spares else "") + ")")  # fmt: skip
    domain = (f"NVLink domain: {compute.nvlink_domain_gpus} GPUs"
              if compute.nvlink_domain_gpus else "")  # fmt: skip
    text["node"] = (f"nodes: {num(c.num_nodes)} x {compute.node.id}\n"
                    f"{num(f.num_node_links)} node links x {speed}, "
                    f"{_plural(num_groups, 'group', '', 's')}\n"
                    f"{domain}\n{spares}")  # fmt: skip
    return text


def _support(build: RowBuilder, design: Design) -> None:
    """The storage, in-band and out-of-band fabrics as a row of boxes under the compute
    fabric, each joined to the node group by a dashed line."""
    x = LEFT
    for s in design.support_fabrics:
        tiers = _plural(s.num_leaves, "lea", "f", "ves") + (
            f" + {_plural(s.num_spines, 'spine', '', 's')}" if s.num_spines else ""
        )
        label = (f"{s.name} fabric: {tiers}\nx {s.switch.id}\n{s.ports_per_node} port(s) "
                 f"per node at {s.port_gbit_per_s:g}G, {s.oversubscription:g}:1")  # fmt: skip
        build.boxes.append(Box(f"fabric-{s.name}", label, "support", x, ROW_Y["support"], 200,
                               52, SUPPORT_FILL, stroke="#7d5ba6"))  # fmt: skip
        x += 200 + 12
    build.right = max(build.right, x)


def _plural(n: int, stem: str, one: str, many: str) -> str:
    return f"{num(n)} {stem}{one if n == 1 else many}"


def _no_fabric(design: Design) -> Diagram:
    """A single node: no compute fabric to draw, only its support fabrics."""
    build = RowBuilder()
    compute = design.compute
    build.boxes.append(Box("node-1", f"{num(compute.num_nodes)} x {compute.node.id}: "
                           f"{compute.gpus_per_node} GPUs on NVLink,\nno compute fabric", "node",
                           LEFT, 40, 300, 44, NODE_FILL))  # fmt: skip
    build.right = LEFT + 320
    _support(build, design)
    boxes = [replace(b, y=120) if b.kind == "support" else b for b in build.boxes]
    return Diagram(f"{design.spec.name}: no compute fabric (one node)", tuple(boxes), (),
                   (), (), build.right + 20, 200)  # fmt: skip
