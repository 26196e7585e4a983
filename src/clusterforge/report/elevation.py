"""Rack elevations as a picture (``plan``'s racks.svg): racks front-on, devices at their U.

Up to ``max_racks`` racks, every rack is drawn in floor order, one line per floor row (a
row longer than ``racks_per_line`` wraps onto the next line). A larger design, whose racks
repeat a few layouts by the thousand, shows one rack of each layout (the same devices at the
same U), titled with how many racks share it; racks.csv lists every rack. Each line has its
U positions labelled on both sides and each rack its name, maximum draw and cooling. Devices
are coloured by what they are (switches by their fabric role: leaf, spine, ...), with one
legend for the picture.

Drawn with matplotlib through :func:`~clusterforge.report.figure_file.draw_picture`. In the
SVG, each line is the group ``rack-line-<n>``, each rack ``rack-<name>`` and each device
``device-<rack>-<name>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterforge.report.figure_file import COLORS, PictureFormat, draw_picture

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from clusterforge.design import Design
    from clusterforge.design.facility.racks import Rack, RackDevice

__all__ = ["MAX_RACKS_DRAWN", "RACKS_PER_LINE", "elevation_picture", "elevation_svg", "rack_lines"]

MAX_RACKS_DRAWN = 96
RACKS_PER_LINE = 16
RACK_W_IN = 0.95  # one rack slot, gap included
U_IN = 0.055  # one rack unit: a 48U rack is 2.6 in tall
LINE_EXTRA_IN = 0.8  # rack titles above a line, margins below it
RACK_FILL = 0.82  # share of a slot the rack frame takes
U_MARGIN = 0.2  # space above and below a rack frame [U]
MIN_SLOTS = 6  # a picture is at least this many racks wide: room for its title and legend
LEGEND_ENTRY_IN = 1.4
KIND_COLORS = {
    "node": "#4c78a8",
    "storage": "#54a24b",
    "server": "#b279a2",
    "cdu": "#72b7b2",
    "patch-panel": "#bab0ac",
    "pdu": "#9d755d",
    "power-shelf": "#9d755d",
}
SWITCH_COLORS = ("#f58518", "#e45756", "#eeca3b", "#ff9da6", "#d67195", "#ffbf79", *COLORS)


@dataclass(frozen=True)
class RackLine:
    """Racks drawn side by side, with a label for the line, and for each rack how many racks
    of the design it stands for (itself included; 1 when every rack is drawn)."""

    label: str
    racks: tuple[Rack, ...]
    alike: tuple[int, ...]


def _chunks(racks: list[Rack], size: int) -> list[list[Rack]]:
    return [racks[i : i + size] for i in range(0, len(racks), size)]


def _layout(rack: Rack) -> tuple[object, ...]:
    """What a rack looks like from the front: its role and its devices at their U."""
    return (rack.role, *((d.u_position, d.u_height, d.kind, d.role) for d in rack.devices))


def rack_lines(design: Design, *, max_racks: int, racks_per_line: int) -> list[RackLine]:
    """Every rack in floor order, a line per floor row wrapped every ``racks_per_line``
    racks, when there are at most ``max_racks``; else the first rack of each layout in floor
    order (at most ``max_racks`` of them), ``racks_per_line`` to a line."""
    if len(design.racks) <= max_racks:
        rows: dict[int, list[Rack]] = {}
        for rack in design.racks:
            rows.setdefault(rack.row, []).append(rack)
        return [RackLine(f"row {row}", tuple(part), (1,) * len(part))
                for row, racks in rows.items() for part in _chunks(racks, racks_per_line)]  # fmt: skip
    layouts: dict[tuple[object, ...], list[Rack]] = {}
    for rack in design.racks:
        layouts.setdefault(_layout(rack), []).append(rack)
    shown = list(layouts.values())[:max_racks]
    lines = []
    for n, part in enumerate(_chunks([alike[0] for alike in shown], racks_per_line)):
        first = n * racks_per_line
        counts = tuple(len(alike) for alike in shown[first : first + len(part)])
        lines.append(RackLine(f"layouts {first + 1}-{first + len(part)}", tuple(part), counts))
    return lines


def _key(dev: RackDevice) -> str:
    """What a device's colour says: its kind, or a switch's fabric role."""
    return f"{dev.role} switch" if dev.kind == "switch" else dev.kind


def _palette(lines: list[RackLine]) -> dict[str, str]:
    """A colour for each device key in the picture, switch roles in order of appearance."""
    keys = dict.fromkeys(_key(d) for ln in lines for r in ln.racks for d in r.devices
                         if d.u_height > 0)  # fmt: skip
    switch_keys = [k for k in keys if k.endswith(" switch")]
    palette = {k: SWITCH_COLORS[i % len(SWITCH_COLORS)] for i, k in enumerate(switch_keys)}
    return {k: palette.get(k) or KIND_COLORS.get(k, "#999999") for k in keys}


def _rack_title(rack: Rack, alike: int) -> str:
    """Name, NVLink domain (when the rack is one rack-scale system), how many more racks
    share its layout, kW and cooling, a line each: a rack slot is an inch wide."""
    lines = [rack.name]
    if rack.nvlink_domain is not None:
        lines.append(f"(NVLink {rack.nvlink_domain + 1})")
    if alike > 1:
        lines.append(f"+{alike - 1:,} alike")
    return "\n".join([*lines, f"{rack.max_kw:.1f} kW", rack.cooling.method])


def _draw_rack(
    ax: Axes, slot: int, rack: Rack, alike: int, *, rack_u: int, palette: dict[str, str]
) -> None:
    from matplotlib.patches import Rectangle

    left, width = slot + (1 - RACK_FILL) / 2, RACK_FILL
    frame = Rectangle((left, 0.5), width, rack_u, facecolor="#f4f4f4", edgecolor="#333333",
                      linewidth=0.8)  # fmt: skip
    frame.set_gid(f"rack-{rack.name}")
    ax.add_artist(frame)  # not add_patch: the limits are set, no need to grow them
    ax.text(
        slot + 0.5, rack_u + 1.2, _rack_title(rack, alike), ha="center", va="bottom", fontsize=6
    )
    for dev in rack.devices:
        if dev.u_height == 0:  # zero-U: PDUs in the rack's side channels
            continue
        box = Rectangle((left + 0.02, dev.u_position - 0.5 + 0.06), width - 0.04,
                        dev.u_height - 0.12, facecolor=palette[_key(dev)], edgecolor="#222222",
                        linewidth=0.4)  # fmt: skip
        box.set_gid(f"device-{rack.name}-{dev.name}")
        ax.add_artist(box)
        if dev.u_height >= 2:
            ax.text(left + 0.05, dev.u_position + dev.u_height - 1, dev.name, fontsize=5.5,
                    color="white", va="center", clip_on=True)  # fmt: skip


def _draw_line(ax: Axes, n: int, line: RackLine, *, rack_u: int, palette: dict[str, str],
               racks_per_line: int) -> None:  # fmt: skip
    ax.set_gid(f"rack-line-{n}")
    for slot, (rack, alike) in enumerate(zip(line.racks, line.alike, strict=True)):
        _draw_rack(ax, slot, rack, alike, rack_u=rack_u, palette=palette)
    ax.set_xlim(0, racks_per_line)
    ax.set_ylim(0.5 - U_MARGIN, rack_u + 0.5 + U_MARGIN)
    ticks = sorted({1, *range(6, rack_u + 1, 6)})
    ax.set_yticks(ticks, [f"U{u}" for u in ticks], fontsize=6)
    ax.tick_params(axis="y", right=True, labelright=True)
    ax.set_xticks([])
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_ylabel(line.label, fontsize=8)


def _legend(figure: Figure, palette: dict[str, str], *, ncols: int) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=c, edgecolor="#222222", label=k) for k, c in palette.items()]
    figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0),
                  ncols=min(len(handles), ncols), frameon=False, fontsize=7)  # fmt: skip


@dataclass(frozen=True)
class _Grid:
    """Where the lines go, in inches: fixed margins, so no layout engine measures the
    hundreds of texts of a large picture."""

    num_lines: int
    rack_u: int
    racks_per_line: int
    left_in: float = 0.75
    right_in: float = 0.5
    top_in: float = 0.35
    bottom_in: float = 0.45

    @property
    def axes_in(self) -> float:
        """Height of a line's axes: the rack and its margins, at ``U_IN`` per U."""
        return (self.rack_u + 2 * U_MARGIN) * U_IN

    @property
    def line_in(self) -> float:
        return self.axes_in + LINE_EXTRA_IN

    @property
    def size_in(self) -> tuple[float, float]:
        width = self.left_in + self.racks_per_line * RACK_W_IN + self.right_in
        return width, self.top_in + self.num_lines * self.line_in + self.bottom_in

    def axes_box(self, i: int) -> tuple[float, float, float, float]:
        """Line ``i``'s axes as (left, bottom, width, height), fractions of the figure."""
        width, height = self.size_in
        top = self.top_in + i * self.line_in + (LINE_EXTRA_IN - 0.15)  # titles above the racks
        bottom = height - top - self.axes_in
        return (self.left_in / width, bottom / height, self.racks_per_line * RACK_W_IN / width,
                self.axes_in / height)  # fmt: skip


def _count(lines: list[RackLine], num_racks: int) -> str:
    """What the picture shows, for its title."""
    drawn = sum(len(ln.racks) for ln in lines)
    if all(n == 1 for ln in lines for n in ln.alike):
        if drawn == num_racks:
            return f"{num_racks} rack" + ("s" if num_racks != 1 else "")
        return f"{drawn} of {num_racks:,} racks (racks.csv lists all)"
    covered = sum(n for ln in lines for n in ln.alike)
    return (f"one rack of each of {drawn} layouts, covering {covered:,} of {num_racks:,} racks "
            "(racks.csv lists all)")  # fmt: skip


def elevation_picture(
    design: Design,
    fmt: PictureFormat = "svg",
    *,
    max_racks: int = MAX_RACKS_DRAWN,
    racks_per_line: int = RACKS_PER_LINE,
) -> bytes:
    """The elevations of every rack, or of one rack of each layout beyond ``max_racks``
    racks (GPU, network and core racks); the picture is as wide as its longest line."""
    lines = rack_lines(design, max_racks=max_racks, racks_per_line=racks_per_line)
    slots = max(MIN_SLOTS, *(len(ln.racks) for ln in lines))
    grid = _Grid(len(lines), design.spec.facility.rack_u, slots)
    palette = _palette(lines)
    count = _count(lines, len(design.racks))
    title = f"{design.spec.name}: {count}, front view"

    def paint(figure: Figure) -> None:
        for n, line in enumerate(lines, start=1):
            ax = figure.add_axes(grid.axes_box(n - 1))
            _draw_line(ax, n, line, rack_u=grid.rack_u, palette=palette, racks_per_line=slots)
        figure.suptitle(title, x=0.01, y=1 - 0.12 / grid.size_in[1],
                        ha="left", va="top", fontweight="bold", fontsize=10)  # fmt: skip
        _legend(figure, palette, ncols=max(1, int(grid.size_in[0] / LEGEND_ENTRY_IN)))

    key = (tuple(_drawn(line) for line in lines), grid, palette, title)
    return draw_picture(grid.size_in, fmt, paint, constrained=False, key=key)


def _drawn(line: RackLine) -> tuple[object, ...]:
    """What the picture shows of a line: every rack and device field :func:`_draw_line`,
    :func:`_draw_rack` and :func:`_rack_title` read (the picture's cache key: a field they
    come to read must be added here)."""
    racks = tuple(
        (r.name, r.nvlink_domain, r.max_kw, r.cooling.method,
         tuple((d.name, d.kind, d.role, d.u_position, d.u_height) for d in r.devices))
        for r in line.racks
    )  # fmt: skip
    return (line.label, racks, line.alike)


def elevation_svg(design: Design, max_racks: int = MAX_RACKS_DRAWN) -> str:
    """:func:`elevation_picture` as SVG text."""
    return elevation_picture(design, "svg", max_racks=max_racks).decode("utf-8")
