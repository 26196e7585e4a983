"""The planner page: the spec's form beside its report, rendered with Jinja2."""

from __future__ import annotations

import functools
from importlib import resources

import jinja2

from clusterforge.spec import ClusterSpec
from clusterforge.web.form import form_sections

__all__ = ["asset", "planner_page", "templates"]


@functools.cache
def templates() -> jinja2.Environment:
    """The Jinja2 environment of the serve pages (``web/templates``), escaping by default."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterforge.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def asset(name: str) -> str:
    """A static file of ``web/templates`` (stylesheet, script), inlined into a page."""
    return (resources.files("clusterforge.web") / "templates" / name).read_text(encoding="utf-8")


def planner_page(spec: ClusterSpec, headline: str, version: int) -> str:
    """The whole page: styles and script inlined, the report in a frame from /report.html."""
    return (
        templates()
        .get_template("planner.html.j2")
        .render(
            sections=form_sections(spec),
            headline=headline,
            version=version,
            css=asset("planner.css"),
            script=asset("planner.js"),
        )
    )
