"""What an HTML report shows, as plain data: sections of a picture and its tables.

Every value is read from the design (or from a study run on it) and formatted here, in
Python, so the templates only place strings: no arithmetic or rules in Jinja.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from clusterforge.report.format import kw, money, num, pct, pp

__all__ = ["LAZY_ROWS", "Figure", "Metric", "Section", "Table", "css_string", "kw", "money", "num",
           "pct", "pp", "script_safe", "table"]  # fmt: skip

T = TypeVar("T")
# A table longer than this reaches the page as JSON, built into rows only when its reader
# opens it: thousands of rows a click away would otherwise be tens of thousands of elements
# the browser parses and keeps before the page can be read.
LAZY_ROWS = 200


def script_safe(json_text: str) -> str:
    """JSON placed inside a <script> element: every '<' (only ever inside a JSON string)
    written as the escape \\u003c, so neither '</script' nor '<!--' can end the element early
    (HTML Living Standard, "Restrictions for contents of script elements")."""
    return json_text.replace("<", "\\u003c")


def css_string(text: str) -> str:
    """``text`` as a quoted CSS string that can sit inside a <style> element: every
    character but letters, digits and spaces written as a hex escape (CSS Syntax Level 3,
    4.3.7), so no quote, backslash or '</style' can end the string or the element."""
    kept = (c if c.isascii() and (c.isalnum() or c == " ") else f"\\{ord(c):06x}" for c in text)
    return '"' + "".join(kept) + '"'


@dataclass(frozen=True)
class Table:
    """A table of preformatted cells; ``numeric`` marks the right-aligned columns."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    numeric: tuple[bool, ...] = ()

    @property
    def lazy(self) -> bool:
        """Whether the page builds the rows when the table is opened (see ``LAZY_ROWS``)."""
        return len(self.rows) > LAZY_ROWS

    @property
    def rows_json(self) -> str:
        """The rows as JSON that can sit inside a <script> element."""
        return script_safe(json.dumps(self.rows, separators=(",", ":")))

    @property
    def numeric_json(self) -> str:
        """The right-aligned columns as a JSON list of booleans, one per column."""
        flags = [i < len(self.numeric) and self.numeric[i] for i in range(len(self.headers))]
        return json.dumps(flags)


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
    # text to copy (a spec as YAML), each a click away: (what it is, the text)
    code: tuple[tuple[str, str], ...] = ()


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
