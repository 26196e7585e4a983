"""The floor plan to scale (``plan``'s floor.svg and the report's floor section).

The hall is drawn with equal axes, so its drawn rectangle has the hall's own proportions: a
9.6 m x 444 m hall is a thin strip, not a square (:class:`~clusterforge.design.facility.hall.
Hall` owns its size).  The long side runs across the page.  Each rack is a rectangle of its
footprint (``facility.rack_width_m`` x ``rack_depth_m``) at its place, coloured by its maximum
draw in kW; network and core racks are hatched and outlined.  Between the rows lie the
aisles, alternately cold (the rows' fronts face each other) and hot (their backs), the
hot-aisle/cold-aisle arrangement of ANSI/TIA-942-B (2017) §6 and ASHRAE TC 9.9.  A hall much
longer than it is wide also gets an enlarged detail of its first metres, still to scale.

In the SVG, the hall is the group ``hall`` (its first path is the hall's outline), the racks
the group ``racks``, the aisles ``aisles``; the detail's are ``detail-hall`` and so on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterforge.design.facility.hall import Hall, hall_of
from clusterforge.report.figure_file import PictureFormat, draw_picture

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from clusterforge.design import Design

__all__ = ["FloorView", "floor_picture", "floor_svg", "floor_view"]

DRAWING_IN = 11.0  # the hall's long side on the page, inches
DETAIL_FROM_ASPECT = 6.0  # a hall longer than this many times its width gets a detail view
DETAIL_ASPECT = 4.0  # the detail's window: this many times the hall's short side
COLD, HOT = "#d6e9f8", "#fbe0d0"
ROLE_HATCH = {"network": "////", "core": "xxxx"}
CMAP = "YlOrRd"
# Beyond this many racks the racks and aisles of the whole-hall view are one embedded image
# (at 150 dpi, as a PNG is): an SVG element per rack would make the file megabytes.
RASTER_FROM_RACKS = 1000


@dataclass(frozen=True)
class FloorView:
    """The hall and the racks as rectangles in drawing coordinates (metres): ``across`` is
    True when the hall is deeper than wide, so its rows run up the page and its depth
    across it."""

    hall: Hall
    across: bool
    rects: tuple[tuple[float, float, float, float], ...]  # x, y, w, h per rack
    kw: tuple[float, ...]
    roles: tuple[str, ...]
    aisles: tuple[tuple[float, float, float, float, bool], ...]  # x, y, w, h, cold

    @property
    def size_m(self) -> tuple[float, float]:
        """(drawn width, drawn height) of the hall, m."""
        h = self.hall
        return (h.depth_m, h.width_m) if self.across else (h.width_m, h.depth_m)


def floor_view(design: Design) -> FloorView:
    """The racks and aisles of ``design`` placed in the hall, long side along x."""
    f = design.spec.facility
    hall = hall_of(design.racks, f)
    across = hall.depth_m > hall.width_m
    half_aisle = max(0.0, (f.row_pitch_m - f.rack_depth_m) / 2)
    first_row = min(r.row for r in design.racks)

    def place(x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
        return (y, x, h, w) if across else (x, y, w, h)

    rects = tuple(
        place(
            r.x_m, (r.row - first_row) * f.row_pitch_m + half_aisle, f.rack_width_m, f.rack_depth_m
        )
        for r in design.racks
    )
    gaps = []
    for k in range(hall.num_rows + 1):  # the gap before row k+1 (k = num_rows: after the last)
        low = max(0.0, k * f.row_pitch_m - half_aisle)
        high = min(hall.depth_m, k * f.row_pitch_m + half_aisle)
        if high > low:
            gaps.append((*place(0.0, low, hall.width_m, high - low), k % 2 == 1))
    return FloorView(
        hall=hall,
        across=across,
        rects=rects,
        kw=tuple(r.max_kw for r in design.racks),
        roles=tuple(r.role for r in design.racks),
        aisles=tuple(gaps),
    )


def _window(view: FloorView, shown_m: float) -> FloorView:
    """The racks and aisles that start within the first ``shown_m`` of the long side."""
    keep = [i for i, (x, *_) in enumerate(view.rects) if x < shown_m]
    return FloorView(
        hall=view.hall,
        across=view.across,
        rects=tuple(view.rects[i] for i in keep),
        kw=tuple(view.kw[i] for i in keep),
        roles=tuple(view.roles[i] for i in keep),
        aisles=tuple(a for a in view.aisles if a[0] < shown_m),
    )


def _draw_floor(ax: Axes, view: FloorView, prefix: str, *, long_m: float | None = None) -> object:
    """The hall, aisles and racks on ``ax`` with equal axes; ``long_m`` shows only the first
    metres of the long side.  Returns the racks' collection (for the colour bar)."""
    kw_range = (min(view.kw), max(view.kw))
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    width, height = view.size_m
    shown = min(width, long_m) if long_m else width
    if shown < width:  # only what the window shows: a detail of thousands of racks is a few
        view = _window(view, shown)
    outline = Rectangle((0, 0), width, height, facecolor="#f7f7f7", edgecolor="#333333",
                        linewidth=0.8)  # fmt: skip
    outline.set_gid(f"{prefix}hall")
    ax.add_patch(outline)
    aisles = PatchCollection(
        [Rectangle((x, y), w, h) for x, y, w, h, _ in view.aisles],
        facecolors=[COLD if cold else HOT for *_, cold in view.aisles],
        edgecolors="none",
    )
    aisles.set_gid(f"{prefix}aisles")
    ax.add_collection(aisles)
    racks = PatchCollection(
        [Rectangle((x, y), w, h) for x, y, w, h in view.rects],
        cmap=CMAP,
        edgecolors=["#222222" if role in ROLE_HATCH else "#666666" for role in view.roles],
        linewidths=[0.8 if role in ROLE_HATCH else 0.2 for role in view.roles],
    )
    racks.set_array(list(view.kw))
    racks.set_clim(*kw_range)  # the detail shares the whole hall's colours
    racks.set_gid(f"{prefix}floor-racks")  # not "racks": the report's section has that id
    ax.add_collection(racks)
    for role, hatch in ROLE_HATCH.items():
        marked = [Rectangle((x, y), w, h) for (x, y, w, h), r in zip(view.rects, view.roles,
                  strict=True) if r == role]  # fmt: skip
        if marked:
            layer = PatchCollection(marked, facecolors="none", edgecolors="#222222",
                                    hatch=hatch, linewidths=0.0)  # fmt: skip
            layer.set_gid(f"{prefix}{role}-racks")
            ax.add_collection(layer)
    if len(view.rects) > RASTER_FROM_RACKS:
        for drawn in ax.collections:
            drawn.set_rasterized(True)
    ax.set_xlim(0, shown)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.tick_params(labelsize=7)
    ax.set_yticks([0, height], ["0", f"{height:.1f} m"])
    return racks


def _legend(figure: Figure, *, y: float) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=COLD, label="cold aisle"),
        Patch(facecolor=HOT, label="hot aisle"),
        Patch(facecolor="white", edgecolor="#222222", hatch=ROLE_HATCH["network"],
              label="network rack"),
        Patch(facecolor="white", edgecolor="#222222", hatch=ROLE_HATCH["core"],
              label="core rack (core switches, storage, management)"),
    ]  # fmt: skip
    figure.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, y), ncols=4,
                  frameon=False, fontsize=7)  # fmt: skip


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def floor_picture(design: Design, fmt: PictureFormat = "svg") -> bytes:
    """The floor plan to scale: the hall, its aisles, every rack coloured by its kW."""
    view = floor_view(design)
    width_m, height_m = view.size_m
    scale = DRAWING_IN / width_m  # inches per metre, the same on both axes
    detail = view.hall.aspect_ratio >= DETAIL_FROM_ASPECT
    detail_m = min(width_m, DETAIL_ASPECT * height_m)
    detail_scale = DRAWING_IN / detail_m
    left, top, gap, bottom = 0.6, 0.55, 0.55, 0.95
    hall_in = height_m * scale
    detail_in = height_m * detail_scale if detail else 0.0
    size = (left + DRAWING_IN + 0.4, top + hall_in + (gap + detail_in if detail else 0) + bottom)
    hall = view.hall
    title = (f"{design.spec.name}: floor to scale, {hall.width_m:.1f} m x {hall.depth_m:.1f} m "
             f"({_count(hall.num_rows, 'row')} of up to {_count(hall.racks_per_row, 'rack')}, "
             f"{_count(len(design.racks), 'rack')})")  # fmt: skip

    def box(top_in: float, height_in: float) -> tuple[float, float, float, float]:
        return (left / size[0], 1 - (top_in + height_in) / size[1], DRAWING_IN / size[0],
                height_in / size[1])  # fmt: skip

    def paint(figure: Figure) -> None:
        ax = figure.add_axes(box(top, hall_in))
        racks = _draw_floor(ax, view, "")
        ax.set_xlabel("m", fontsize=7, labelpad=1)
        if detail:
            zoom = figure.add_axes(box(top + hall_in + gap, detail_in))
            _draw_floor(zoom, view, "detail-", long_m=detail_m)
            zoom.set_title(f"the first {detail_m:.0f} m enlarged {detail_scale / scale:.0f}x, "
                           "to scale", fontsize=8, loc="left")  # fmt: skip
        bar = figure.add_axes((0.62, 0.25 / size[1], 0.33, 0.12 / size[1]))
        figure.colorbar(racks, cax=bar, orientation="horizontal")  # type: ignore[arg-type]
        bar.tick_params(labelsize=7)
        bar.set_title("rack maximum draw, kW", fontsize=7)
        _legend(figure, y=0.02 / size[1])
        figure.suptitle(title, x=0.01, y=1 - 0.1 / size[1], ha="left", va="top",
                        fontweight="bold", fontsize=10)  # fmt: skip

    # the painter reads the view and the title (all else above is derived from the view)
    return draw_picture(size, fmt, paint, constrained=False, key=(view, title))


def floor_svg(design: Design) -> str:
    """:func:`floor_picture` as SVG text."""
    return floor_picture(design, "svg").decode("utf-8")
