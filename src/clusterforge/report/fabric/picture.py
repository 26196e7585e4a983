"""The fabric diagram (:mod:`clusterforge.report.fabric.diagram`) drawn with matplotlib, as
SVG, PNG or PDF: each box the group ``box-<id>``, each link ``link-<a>-<b>`` (see that
module for the ids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.report.fabric.diagram import fabric_diagram
from clusterforge.report.fabric.layout import BOX_W, LEFT, NODE_FILL, Diagram
from clusterforge.report.figure_file import PictureFormat, draw_picture

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from clusterforge.design import Design

__all__ = ["fabric_picture", "fabric_svg"]


def _draw(ax: Axes, diagram: Diagram) -> None:
    from matplotlib.patches import FancyBboxPatch

    centres = {b.id: (b.x + b.w / 2, b.y + b.h / 2) for b in diagram.boxes}
    tops = {b.id: b.y for b in diagram.boxes}
    bottoms = {b.id: b.y + b.h for b in diagram.boxes}
    for link in diagram.links:
        (xa, _), (xb, _) = centres[link.a], centres[link.b]
        ya, yb = (tops[link.a], bottoms[link.b]) if tops[link.a] > tops[link.b] else (
            bottoms[link.a], tops[link.b])  # fmt: skip
        width = 0.9 if link.rail is not None else 0.5
        (line,) = ax.plot([xa, xb], [ya, yb], color=link.color, linewidth=width,
                          linestyle="--" if link.dashed else "-", alpha=0.8)  # fmt: skip
        line.set_gid(link.id)
    for b in diagram.boxes:
        frame = b.kind in ("group", "domain")
        patch = FancyBboxPatch((b.x, b.y), b.w, b.h, boxstyle="round,pad=0,rounding_size=4",
                               facecolor=b.fill, edgecolor=b.stroke,
                               linewidth=1.2 if frame else 0.7, zorder=0 if frame else 2)  # fmt: skip
        patch.set_gid(f"box-{b.id}")
        ax.add_patch(patch)
        dark = b.kind == "switch" and b.fill not in (NODE_FILL,)
        if frame:
            at_bottom = b.kind == "domain"
            ax.text(b.x + 4, b.y + b.h - 3 if at_bottom else b.y + 3, b.label, fontsize=6.5,
                    va="bottom" if at_bottom else "top", ha="left", color=b.stroke, zorder=3,
                    fontweight="bold")  # fmt: skip
        else:
            ax.text(b.x + b.w / 2, b.y + b.h / 2, b.label,
                    fontsize=6.5 if b.kind == "note" else 6 if b.w >= BOX_W - 5 else 4.8,
                    ha="center", va="center", color="white" if dark else "#222222", zorder=3,
                    clip_on=False)  # fmt: skip
    for y, text in diagram.tier_text:
        ax.text(10, y, text, fontsize=6.8, va="center", ha="left", color="#1f3b57")
    for i, (label, color) in enumerate(diagram.legend):
        x = LEFT + i * 70
        ax.plot([x, x + 22], [diagram.height - 18] * 2, color=color, linewidth=2.5)
        ax.text(x + 26, diagram.height - 18, label, fontsize=6.5, va="center")
    ax.set_xlim(0, diagram.width)
    ax.set_ylim(diagram.height, 0)  # y grows downwards, as in draw.io
    ax.set_axis_off()


def fabric_picture(design: Design, fmt: PictureFormat = "svg") -> bytes:
    """The fabric diagram as SVG, PNG or PDF (see the module docstring)."""
    diagram = fabric_diagram(design)
    scale = 1 / 80  # draw.io pixels to inches
    size = (diagram.width * scale, (diagram.height + 30) * scale)

    def paint(figure: Figure) -> None:
        ax = figure.add_axes((0, 0, 1, diagram.height / (diagram.height + 30)))
        _draw(ax, diagram)
        figure.suptitle(diagram.title, x=0.01, y=0.995, ha="left", va="top", fontsize=9,
                        fontweight="bold")  # fmt: skip

    return draw_picture(size, fmt, paint, constrained=False, key=diagram)


def fabric_svg(design: Design) -> str:
    """:func:`fabric_picture` as SVG text."""
    return fabric_picture(design, "svg").decode("utf-8")
