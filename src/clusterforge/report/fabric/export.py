"""The fabric diagram (:mod:`clusterforge.report.fabric.diagram`) in the formats network teams
edit: draw.io's mxGraph XML (https://www.drawio.com/doc/faq/diagram-source-edit) and Graphviz
DOT (https://graphviz.org/doc/info/lang.html)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from clusterforge.report.fabric.diagram import fabric_diagram
from clusterforge.report.fabric.layout import TIER_LABEL_W, Box

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = ["fabric_dot", "fabric_drawio"]


def _drawio_style(b: Box) -> str:
    base = {"group": "rounded=1;dashed=0;verticalAlign=top;align=left;spacingLeft=6;",
            "domain": "rounded=1;verticalAlign=top;align=left;spacingLeft=4;",
            "note": "shape=note;size=10;", "support": "rounded=1;",
            "switch": "rounded=1;fontColor=#ffffff;", "node": "rounded=0;"}[b.kind]  # fmt: skip
    return f"{base}whiteSpace=wrap;html=1;fontSize=10;fillColor={b.fill};strokeColor={b.stroke};"


def fabric_drawio(design: Design) -> str:
    """The diagram as a draw.io file (mxGraph XML): one page, a vertex per box with its
    geometry, an edge per link; frames come first so they lie behind."""
    d = fabric_diagram(design)
    cells = ['<mxCell id="0"/>', '<mxCell id="1" parent="0"/>']
    for b in d.boxes:
        cells.append(
            f"<mxCell id={quoteattr(b.id)} value={quoteattr(b.label)} "
            f'style={quoteattr(_drawio_style(b))} vertex="1" parent="1">'
            f'<mxGeometry x="{b.x:g}" y="{b.y:g}" width="{b.w:g}" height="{b.h:g}" '
            'as="geometry"/></mxCell>'
        )
    for n, (y_mid, text) in enumerate(d.tier_text):
        y = y_mid - 28
        cells.append(
            f'<mxCell id="tier-text-{n + 1}" value={quoteattr(text)} '
            'style="text;html=1;align=left;verticalAlign=middle;whiteSpace=wrap;fontSize=10;" '
            f'vertex="1" parent="1"><mxGeometry x="10" y="{y:g}" width="{TIER_LABEL_W - 10:g}" '
            'height="56" as="geometry"/></mxCell>'
        )
    for link in d.links:
        style = (f"endArrow=none;html=1;strokeColor={link.color};"
                 + ("dashed=1;" if link.dashed else ""))  # fmt: skip
        value = f"{link.count}" if link.count > 1 else ""
        cells.append(
            f"<mxCell id={quoteattr(link.id)} value={quoteattr(value)} style={quoteattr(style)} "
            f'edge="1" parent="1" source={quoteattr(link.a)} target={quoteattr(link.b)}>'
            '<mxGeometry relative="1" as="geometry"/></mxCell>'
        )
    body = "\n        ".join(cells)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<mxfile host="clusterforge" type="device">\n'
        f'  <diagram id="fabric" name={quoteattr(d.title[:120])}>\n'
        f'    <mxGraphModel dx="{d.width:g}" dy="{d.height:g}" grid="1" gridSize="10" '
        f'page="1" pageWidth="{d.width:g}" pageHeight="{d.height:g}">\n'
        f"      <root>\n        {body}\n      </root>\n"
        "    </mxGraphModel>\n  </diagram>\n</mxfile>\n"
    )


def _dot_id(box_id: str) -> str:
    return '"' + box_id.replace('"', "") + '"'


def _dot_label(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', "'").replace("\n", "\\n") + '"'


def fabric_dot(design: Design) -> str:
    """The diagram as Graphviz DOT: switches ranked by tier (``rank=same``), the first node
    group and each NVLink domain as clusters, links coloured by rail; ``dot -Tsvg`` lays it
    out."""
    d = fabric_diagram(design)
    lines = ["graph fabric {", f"  label={_dot_label(d.title)};", "  labelloc=t;",
             "  rankdir=BT;", '  node [shape=box, style="rounded,filled", fontsize=10];',
             "  edge [penwidth=0.8];"]  # fmt: skip

    def node_line(b: Box) -> str:
        color = "white" if b.kind == "switch" else "black"
        return (f"{_dot_id(b.id)} [label={_dot_label(b.label)}, fillcolor=\"{b.fill}\", "
                f'color="{b.stroke}", fontcolor={color}];')  # fmt: skip

    members = [b for b in d.boxes if b.kind not in ("group", "domain")]
    domains = [b for b in d.boxes if b.kind == "domain"]
    in_group = [b for b in members if b.kind == "node" or b.tier in ("leaf", "router")
                or b.id in ("more-node", "more-leaf", "more-router")]  # fmt: skip
    lines.append("  subgraph cluster_group_1 {")
    group = next((b for b in d.boxes if b.kind == "group"), None)
    if group is not None:
        lines.append(f'    label={_dot_label(group.label)}; style=rounded; color="{group.stroke}";')
    for dom in domains:
        inside = [b for b in in_group if b.kind == "node" and dom.x <= b.x <= dom.x + dom.w]
        lines.append(f"    subgraph cluster_{dom.id.replace('-', '_')} {{")
        lines.append(f'      label={_dot_label(dom.label)}; style=rounded; color="{dom.stroke}";')
        lines += [f"      {node_line(b)}" for b in inside]
        lines.append("    }")
    in_domain = {b.id for dom in domains for b in in_group
                 if b.kind == "node" and dom.x <= b.x <= dom.x + dom.w}  # fmt: skip
    lines += [f"    {node_line(b)}" for b in in_group if b.id not in in_domain]
    lines.append("  }")
    lines += [f"  {node_line(b)}" for b in members if b not in in_group]
    for tier in d.tiers:
        same = " ".join(_dot_id(b.id) for b in d.boxes if b.tier == tier)
        lines.append(f"  {{ rank=same; {same} }}")
    nodes = {b.id for b in members}
    for link in d.links:
        if link.a not in nodes or link.b not in nodes:  # DOT joins nodes, not clusters
            continue
        attrs = [f'color="{link.color}"']
        if link.count > 1:
            attrs.append(f'label="{link.count}"')
        if link.dashed:
            attrs.append("style=dashed")
        lines.append(f"  {_dot_id(link.a)} -- {_dot_id(link.b)} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
