"""The hall as a rectangle: its size from the racks' floor positions, and what its shape
costs in cable length.

Racks stand in rows of ``facility.racks_per_row`` racks ``rack_width_m`` wide, rows
``row_pitch_m`` apart (a row's racks plus half an aisle on each side), so the hall is
``width_m`` (along a row) by ``depth_m`` (across the rows).  Cables run along the rows and
across them (Manhattan routing in overhead trays, as :func:`run_lengths_m` measures), from a
core block in the middle, so the longest run grows with half the hall's perimeter,
``(width + depth) / 2``; a square hall of the same area needs ``side = sqrt(width x depth)``.
Their ratio, :attr:`Hall.shape_factor`, is what the hall's shape alone adds to its longest
runs: 1 for a square, 3.5 for a 9.6 m x 444 m hall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterforge.design.facility.racks import Rack
    from clusterforge.spec import FacilitySpec

__all__ = ["Hall", "hall_of"]


@dataclass(frozen=True)
class Hall:
    """The floor the racks stand on, in metres; x along the rows, y across them."""

    width_m: float
    depth_m: float
    num_rows: int
    racks_per_row: int

    @property
    def area_m2(self) -> float:
        return self.width_m * self.depth_m

    @property
    def aspect_ratio(self) -> float:
        """Long side over short side (1 for a square)."""
        return max(self.width_m, self.depth_m) / min(self.width_m, self.depth_m)

    @property
    def square_side_m(self) -> float:
        """Side of the square hall of the same area."""
        return math.sqrt(self.area_m2)

    @property
    def shape_factor(self) -> float:
        """Longest Manhattan run from the hall's middle here over that in the square hall of
        the same area: ``((w + d) / 2) / sqrt(w d)``, at least 1."""
        return (self.width_m + self.depth_m) / 2 / self.square_side_m


def hall_of(racks: Sequence[Rack], facility: FacilitySpec) -> Hall:
    """The rectangle the racks fill: as wide as the longest row, as deep as its rows' pitch."""
    num_rows = max(r.row for r in racks) - min(r.row for r in racks) + 1
    return Hall(
        width_m=max(r.x_m for r in racks) + facility.rack_width_m,
        depth_m=num_rows * facility.row_pitch_m,
        num_rows=num_rows,
        racks_per_row=max(r.position for r in racks),
    )
