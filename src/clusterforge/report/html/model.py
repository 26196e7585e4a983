"""What an HTML report shows, as plain data: sections of a picture and its tables.

Every value is read from the design (or from a study run on it) and formatted here, in
Python, so the templates only place strings: no arithmetic or rules in Jinja.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["Figure", "Metric", "Section", "Table", "kw", "money", "num", "pct", "table"]

T = TypeVar("T")


@dataclass(frozen=True)
class Table:
    """A table of preformatted cells; ``numeric`` marks the right-aligned columns."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    numeric: tuple[bool, ...] = ()


@dataclass(frozen=True)
class Metric:
    """One headline figure: a label, its value with unit, and an optional note."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class Figure:
    """A picture of a section: an HTML fragment (a chart's div, an elevation) and its alt text."""

    html: str
    alt: str


@dataclass(frozen=True)
class Section:
    """One part of the report: a lead sentence, figures, and the tables behind them."""

    id: str
    title: str
    lead: str
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    metrics: tuple[Metric, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    open_tables: bool = False  # tables shown at once (findings), not a click away


def table(
    headers: Sequence[str],
    items: Sequence[T],
    cells: Callable[[T], Sequence[str]],
    *,
    caption: str = "",
    numeric: Sequence[bool] = (),
) -> Table:
    """A :class:`Table` with one row per item, ``cells(item)`` giving its strings."""
    return Table(
        headers=tuple(headers),
        rows=tuple(tuple(cells(item)) for item in items),
        caption=caption,
        numeric=tuple(numeric),
    )


def num(value: float, digits: int = 0) -> str:
    """A number with thousands separated: 12,345 or 12,345.6."""
    return f"{value:,.{digits}f}"


def money(usd: float) -> str:
    """Dollars for people: $1.23M above a million, $12,345 below."""
    if abs(usd) >= 1e9:
        return f"${usd / 1e9:,.2f}B"
    if abs(usd) >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    return f"${usd:,.0f}"


def kw(value_kw: float) -> str:
    """Kilowatts, megawatts above 1,000 kW."""
    if abs(value_kw) >= 1000:
        return f"{value_kw / 1000:,.2f} MW"
    return f"{value_kw:,.1f} kW"


def pct(fraction: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{fraction:.1%}"
