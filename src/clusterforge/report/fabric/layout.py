"""The fabric diagram's drawing model: boxes and links with positions, the rows they sit in,
and the colours of tiers and rails.

:mod:`clusterforge.report.fabric.diagram` fills this model from a design;
:mod:`clusterforge.report.fabric.picture` and :mod:`clusterforge.report.fabric.export` render
it.  Positions are in draw.io's units (pixels at 100 %), rows from the top.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from clusterforge.report.format import num

__all__ = [
    "MAX_NODES_DRAWN",
    "MAX_SWITCHES_DRAWN",
    "RAIL_COLORS",
    "Box",
    "Diagram",
    "Link",
    "RowBuilder",
    "rail_color",
]

MAX_NODES_DRAWN = 32  # a DGX SuperPOD SU (32 nodes) is drawn whole
MAX_SWITCHES_DRAWN = 12
# Rail colours: Tableau 10 then 20 (matplotlib's "tab10"/"tab20"), distinct and print-safe.
RAIL_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
)  # fmt: skip
TIER_FILL = {"core": "#3d4f66", "spine": "#5b7290", "leaf": "#8fa3bd", "router": "#8fa3bd"}
NODE_FILL, GROUP_FILL, NOTE_FILL, DOMAIN_FILL = "#e9eef4", "#f6f8fb", "#fff8e1", "#e8f3e8"
SUPPORT_FILL = "#f1ecf7"

BoxKind = Literal["switch", "node", "group", "domain", "note", "support"]

# Layout, in draw.io's units (pixels at 100 %): rows from the top.
BOX_W, BOX_H, GAP = 60.0, 26.0, 6.0
NODE_W = 56.0
NARROW_NODE_W = 36.0  # beyond a dozen nodes, narrower boxes keep the picture's width
NOTE_W = 110.0
ROW_Y = {"core": 60.0, "spine": 190.0, "leaf": 320.0, "node": 450.0, "support": 560.0}
TIER_LABEL_W = 215.0  # the tier descriptions at the left
LEFT = TIER_LABEL_W + 20.0
# Rows are centred on the middle of the widest row: a full row of nodes or switches.
CENTRE = LEFT + (max(MAX_NODES_DRAWN * (NARROW_NODE_W + GAP), MAX_SWITCHES_DRAWN * (BOX_W + GAP))
                 + NOTE_W) / 2  # fmt: skip


@dataclass(frozen=True)
class Box:
    """A switch, node, frame (node group, NVLink domain) or note, at (x, y) top-left."""

    id: str
    label: str
    kind: BoxKind
    x: float
    y: float
    w: float
    h: float
    fill: str
    stroke: str = "#333333"
    tier: str = ""
    rail: int | None = None


@dataclass(frozen=True)
class Link:
    """Links between two boxes (``count`` parallel links), in a rail's colour or grey."""

    a: str
    b: str
    color: str = "#9a9a9a"
    count: int = 1
    rail: int | None = None
    dashed: bool = False

    @property
    def id(self) -> str:
        rail = f"-rail-{self.rail + 1}" if self.rail is not None else ""
        return f"link-{self.a}-{self.b}{rail}"


@dataclass(frozen=True)
class Diagram:
    """Boxes (frames first, so they lie behind) and links, plus the tier descriptions."""

    title: str
    boxes: tuple[Box, ...]
    links: tuple[Link, ...]
    tier_text: tuple[tuple[float, str], ...] = ()  # (y of the row's middle, description)
    legend: tuple[tuple[str, str], ...] = ()  # (label, colour) of each rail
    width: float = 0.0
    height: float = 0.0

    def box(self, box_id: str) -> Box:
        return next(b for b in self.boxes if b.id == box_id)

    @property
    def tiers(self) -> tuple[str, ...]:
        """The switch tiers drawn, top first."""
        order = ("core", "spine", "leaf", "router")
        return tuple(t for t in order if any(b.tier == t for b in self.boxes))


def rail_color(i: int) -> str:
    """The colour of rail ``i`` (0-based), cycling through :data:`RAIL_COLORS`."""
    return RAIL_COLORS[i % len(RAIL_COLORS)]


@dataclass
class RowBuilder:
    """Collects boxes and links while the rows are laid out."""

    boxes: list[Box] = field(default_factory=list)
    frames: list[Box] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    right: float = LEFT

    def row(self, items: list[tuple[str, str, str, int | None]], y: float, kind: BoxKind,
            tier: str, more: int, more_label: str, *, w: float = BOX_W) -> list[Box]:  # fmt: skip
        """Boxes (id, label, fill, rail) side by side from the left, then a '+N' note."""
        placed = []
        width = len(items) * (w + GAP) + (NOTE_W + GAP if more else 0) - GAP
        x = max(LEFT, CENTRE - width / 2)
        for box_id, label, fill, rail in items:
            placed.append(Box(box_id, label, kind, x, y, w, BOX_H, fill, tier=tier, rail=rail))
            x += w + GAP
        if more:
            placed.append(Box(f"more-{tier or kind}", f"+{num(more)} {more_label}", "note", x,
                              y, NOTE_W, BOX_H, NOTE_FILL, stroke="#b59a3c", tier=""))  # fmt: skip
            x += NOTE_W + GAP
        self.boxes += placed
        self.right = max(self.right, x)
        return placed
