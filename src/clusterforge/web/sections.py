"""A rendered report as its sections and the page around them, to reload only what changed.

The report is a page of top-level ``<section id="...">`` blocks. When a form change re-renders
it, the planner compares the new sections with the shown ones: if the page around them (head,
styles, navigation, the data blocks the scripts read) is unchanged, the browser swaps only the
sections whose HTML changed; otherwise it reloads the whole report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ReportParts", "changed_sections"]

_SECTION = re.compile(r'<section id="([^"]+)">.*?</section>', flags=re.S)


@dataclass(frozen=True)
class ReportParts:
    """A report's sections by id (in page order) and the page with each section cut out."""

    sections: dict[str, str]
    frame: str

    @classmethod
    def of(cls, html: str) -> ReportParts:
        sections: dict[str, str] = {}

        def cut(match: re.Match[str]) -> str:
            sections[match[1]] = match[0]
            return f"<section id={match[1]!r}></section>"

        return cls(sections, _SECTION.sub(cut, html))


def changed_sections(before: ReportParts, after: ReportParts) -> list[str] | None:
    """Ids of the sections that differ, or None when the page around them changed too (a
    section added or removed, new data for the scripts): then the whole report reloads."""
    if before.frame != after.frame or list(before.sections) != list(after.sections):
        return None
    return [key for key, html in after.sections.items() if before.sections[key] != html]
